"""A Kafka release's broker and controller, built from Maven Central for the real-cluster
engine: `org.apache.kafka:kafka_2.13` with a log binding, and kraft-verify's metadata tail
(oracle/cluster/, a Maven module), once per release under oracle/cluster/target/kafka-<v>/.

The jars are copied into the target's libs/ (world-readable: each broker runs under its own
uid, which cannot read root's Maven repository). Every failure (no Maven, no Java, Maven Central
out of reach, a release it does not serve) is a DistError with one line; the caller turns it
into exit 2, never into a verdict or a skip.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import NamedTuple

from verifier.core import jvm
from verifier.core.maven import MAVEN_ARGS, ROOT
from verifier.core.maven import failure as _build_failure

MODULE = Path(os.environ.get("KRAFT_VERIFY_CLUSTER_MODULE") or ROOT / "oracle" / "cluster")


class DistError(Exception):
    """The distribution could not be built; str() is the one line to print."""


class Dist(NamedTuple):
    version: str
    home: Path                 # oracle/cluster/target/kafka-<v>
    classpath: str             # the brokers' and tools' classpath (libs/* and the tail's jar)
    log4j2: bool               # 4.x logs through log4j2; 3.9 through reload4j (log4j 1)


def _binding(version: str) -> tuple[str, str, str]:
    """The slf4j binding a release is started with: 4.x's runtime has none, 3.9 uses reload4j's."""
    if version.split(".")[0] == "3":
        return "org.slf4j", "slf4j-reload4j", "1.7.36"
    return "org.apache.logging.log4j", "log4j-slf4j-impl", "2.25.5"


def _digest() -> str:
    h = hashlib.sha256()
    for f in [MODULE / "pom.xml"] + sorted((MODULE / "src").rglob("*.java")):
        h.update(str(f.relative_to(MODULE)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def _failure(output: str, version: str) -> str:
    return _build_failure(output, f"Kafka {version}'s broker", f"org.apache.kafka:kafka_2.13:{version}")


_LOCK = threading.Lock()


def build(version: str) -> Dist:
    """The release's distribution, built if missing or stale."""
    home = MODULE / "target" / f"kafka-{version}"
    stamp, jar, libs = home / "sources.sha256", home / "kraft-verify-cluster.jar", home / "libs"
    digest = _digest()
    with _LOCK:
        fresh = jar.exists() and libs.is_dir() and stamp.exists() and stamp.read_text() == digest
        if not fresh:
            for tool, what in (("mvn", "Maven (mvn) to fetch Kafka's broker jars: install maven"),
                               ("java", "Java 17 (java): install a JDK")):
                if shutil.which(tool) is None:
                    raise DistError(f"a real cluster needs {what}")
            group, artifact, log_version = _binding(version)
            shutil.rmtree(libs, ignore_errors=True)
            cmd = ["mvn", "-B", "-q", *MAVEN_ARGS, "-f", str(MODULE / "pom.xml"), f"-Dkafka.version={version}",
                   f"-Dlog.group={group}", f"-Dlog.artifact={artifact}", f"-Dlog.version={log_version}", "package"]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0 or not jar.exists() or not libs.is_dir():
                raise DistError(_failure(proc.stdout + proc.stderr, version))
            for p in [home, libs, *libs.iterdir(), jar]:
                p.chmod(0o755 if p.is_dir() else 0o644)
            stamp.write_text(digest)
    if not any(libs.glob(f"kafka_2.13-{version}.jar")):
        stamp.unlink(missing_ok=True)
        raise DistError(f"Kafka {version}'s distribution lost its broker jar ({libs}); run again to rebuild it")
    return Dist(version, home, f"{libs}/*{os.pathsep}{jar}", version.split(".")[0] != "3")


def main(argv=None) -> int:
    """`python -m verifier.engines.cluster.dist VERSION...`: build the distributions (make cluster-dist)."""
    def build_one(v: str) -> str:
        return f"Kafka {v}'s broker distribution built ({build(v).home.relative_to(ROOT)})"
    return jvm.build_main(argv, build_one, DistError)


if __name__ == "__main__":
    raise SystemExit(main())
