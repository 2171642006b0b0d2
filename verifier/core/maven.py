"""Maven, as the engines that run Kafka's own code use it (the conform oracle, the real
cluster's distribution): where the project's Maven modules are, the options a user adds, and
the one line that says why a build failed."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# KRAFT_VERIFY_MAVEN_ARGS adds Maven options (a settings file naming a mirror, say).
MAVEN_ARGS = os.environ.get("KRAFT_VERIFY_MAVEN_ARGS", "").split()


def failure(output: str, what: str, artifact: str) -> str:
    """The one line that says why a Maven build of `what` (naming `artifact`) failed."""
    lowered = output.lower()
    if any(s in lowered for s in ("unknownhost", "could not transfer", "connect timed out", "connection refused",
                                  "network is unreachable", "no route to host")):
        return f"cannot reach Maven Central to fetch {what}'s jars (mvn could not download them)"
    if "could not find artifact" in lowered or "could not resolve dependencies" in lowered:
        return f"Maven Central does not serve {what}'s jars ({artifact})"
    if "compilation error" in lowered or "compilation failure" in lowered:
        first = next((ln.strip() for ln in output.splitlines() if "ERROR" in ln and ".java" in ln), "")
        return f"kraft-verify's Java code does not compile against {what}: {first[:300]}"
    last = next((ln.strip() for ln in reversed(output.splitlines()) if "ERROR" in ln), output.strip()[-300:])
    return f"building {what} failed: {last[:300]}"
