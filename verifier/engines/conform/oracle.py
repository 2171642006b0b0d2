"""The oracle: one JVM per Kafka release running kraft-verify's driver of that release's own
controller classes (oracle/, a Maven module), fed traces as JSON lines.

`build(release)` compiles the driver against the release's jars from Maven Central (once; the
output is cached under oracle/target/kafka-<version>/ and rebuilt when the driver's sources
change). `Oracle(release)` starts the JVM and `run(init, ops)` returns the controller's state
after the initial setup and after every op. Every way this can fail (no Java, no Maven, Maven
Central out of reach, a compile error, a JVM that dies) is an OracleError with one line saying
which: the caller turns it into exit 2, never into a verdict.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any, Optional

from verifier.core.maven import MAVEN_ARGS, ROOT
from verifier.core.maven import failure as _build_failure

# The driver's Maven module; KRAFT_VERIFY_ORACLE points at another copy (the tests build a broken
# one); KRAFT_VERIFY_MAVEN_ARGS adds Maven options (verifier/core/maven.py).
ORACLE = Path(os.environ.get("KRAFT_VERIFY_ORACLE") or ROOT / "oracle")


class OracleError(Exception):
    """The oracle could not be built or run; str() is the one line to print."""


def family(version: str) -> str:
    """The managers' source tree of a Kafka major version (oracle/src/kafka3, kafka4)."""
    return "kafka" + version.split(".")[0]


def _sources_digest(version: str, generation: str) -> str:
    """What the build depends on: the pom and the driver's sources for this generation."""
    h = hashlib.sha256()
    files = [ORACLE / "pom.xml"] + sorted((ORACLE / "src/main").rglob("*.java")) + \
        sorted((ORACLE / f"src/gen-{generation}").rglob("*.java")) + \
        sorted((ORACLE / f"src/{family(version)}").rglob("*.java"))
    for f in files:
        h.update(str(f.relative_to(ORACLE)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def target(version: str) -> Path:
    return ORACLE / "target" / f"kafka-{version}"


def _maven_failure(output: str, version: str) -> str:
    """The one line that says why a Maven build failed."""
    line = _build_failure(output, f"Kafka {version}", f"org.apache.kafka:kafka-metadata:{version}")
    return line.replace("kraft-verify's Java code does not compile", "the oracle driver does not compile") \
        .replace(f"building Kafka {version} failed", f"building the oracle for Kafka {version} failed")


_BUILD_LOCK = threading.Lock()


def build(version: str, generation: str, *, quiet: bool = True) -> list[str]:
    """Build the driver for one release if needed; return the JVM classpath."""
    out = target(version)
    stamp = out / "sources.sha256"
    digest = _sources_digest(version, generation)
    jar, classpath = out / "kraft-verify-oracle.jar", out / "classpath.txt"
    with _BUILD_LOCK:
        if not (jar.exists() and classpath.exists() and stamp.exists() and stamp.read_text() == digest):
            if shutil.which("mvn") is None:
                raise OracleError("the oracle needs Maven (mvn) to fetch Kafka's jars: install maven")
            if shutil.which("java") is None:
                raise OracleError("the oracle needs Java 17 (java): install a JDK")
            cmd = ["mvn", "-B", "-q" if quiet else "-ntp", *MAVEN_ARGS, "-f", str(ORACLE / "pom.xml"),
                   f"-Dkafka.version={version}", f"-Doracle.gen={generation}",
                   f"-Doracle.family={family(version)}", "package"]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0 or not jar.exists():
                raise OracleError(_maven_failure(proc.stdout + proc.stderr, version))
            stamp.write_text(digest)
    entries = [str(jar)] + [p for p in classpath.read_text().strip().split(os.pathsep) if p]
    missing = next((p for p in entries if not Path(p).exists()), None)
    if missing:
        stamp.unlink(missing_ok=True)
        raise OracleError(f"the oracle for Kafka {version} lost a jar ({missing}); run again to rebuild it")
    return entries


class Oracle:
    """One driver JVM for one Kafka release. Use as a context manager."""

    def __init__(self, version: str, generation: str):
        self.version = version
        self.classpath = build(version, generation)
        self.proc: Optional[subprocess.Popen] = None

    def __enter__(self) -> "Oracle":
        java = shutil.which("java")
        if java is None:
            raise OracleError("the oracle needs Java 17 (java): install a JDK")
        self.proc = subprocess.Popen(
            [java, "-XX:+UseSerialGC", "-cp", os.pathsep.join(self.classpath),
             "org.apache.kafka.controller.KraftVerifyOracle"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1 << 16,
            start_new_session=True)     # a Ctrl-C is the run's to handle (verifier/core/stop.py): it closes the JVM
        # The JVM ends when its stdin closes, so it never outlives this process, even one killed.
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()

    def run(self, init: dict[str, Any], ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The controller's state after `init` and after each op (len(ops) + 1 states)."""
        if self.proc is None:
            raise OracleError("the oracle is not running")
        try:
            self.proc.stdin.write(json.dumps({"init": init, "ops": ops}, separators=(",", ":")) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""
            raise OracleError(f"the Kafka {self.version} oracle stopped: {err.strip().splitlines()[-1:] or 'no output'}")
        answer = json.loads(line)
        if answer.get("kafka", self.version) != self.version:
            raise OracleError(f"the oracle built for Kafka {self.version} runs Kafka {answer['kafka']}'s classes: "
                              f"remove {target(self.version)} to rebuild it")
        if "fatal" in answer:
            raise OracleFault(answer["fatal"], answer.get("states", []))
        return answer["states"]


class OracleFault(OracleError):
    """Kafka's code threw where no request error was due (a state the controller cannot be in,
    or a driver bug): reported with the states before it."""

    def __init__(self, message: str, states: list):
        super().__init__(message.splitlines()[0] if message else "oracle fault")
        self.detail = message
        self.states = states


def main(argv: Optional[list] = None) -> int:
    """`python -m verifier.engines.conform.oracle [VERSION...]`: build the driver for the given
    releases (default: every one conform knows), one line each; exit 2 with one line if one
    cannot be built (`make oracle`, which `make test` runs first)."""
    import sys
    from specs import RELEASES, release
    names = list(sys.argv[1:] if argv is None else argv) or list(RELEASES)
    for name in names:
        rel = release(name)
        if rel is None:
            print(f"kraft-verify: error: {name}: not a release conform knows (known: {', '.join(RELEASES)})",
                  file=sys.stderr)
            return 2
        try:
            build(rel.version, rel.api)
        except OracleError as exc:
            print(f"kraft-verify: error: {exc}", file=sys.stderr)
            return 2
        print(f"oracle for Kafka {rel.version} built ({target(rel.version).relative_to(ROOT)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
