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
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Optional

from verifier.core import jvm, stop
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


def _read(path: Path) -> Optional[str]:
    """A small text file the build wrote, or None when it is missing or not UTF-8 text (a
    damaged stamp means rebuild, never a traceback)."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def build(version: str, generation: str, *, quiet: bool = True) -> list[str]:
    """Build the driver for one release if needed; return the JVM classpath."""
    if not (ORACLE / "pom.xml").is_file():
        raise OracleError(f"the oracle's Maven module {ORACLE} has no pom.xml"
                          + (" (KRAFT_VERIFY_ORACLE names it)" if os.environ.get("KRAFT_VERIFY_ORACLE") else ""))
    out = target(version)
    stamp = out / "sources.sha256"
    try:
        digest = _sources_digest(version, generation)
    except OSError as exc:
        raise OracleError(f"cannot read the oracle's sources under {ORACLE} ({exc.strerror})") from None
    jar, classpath = out / "kraft-verify-oracle.jar", out / "classpath.txt"
    with _BUILD_LOCK:
        if not (jar.exists() and classpath.exists() and _read(stamp) == digest):
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
    listed = _read(classpath)
    if listed is None:
        stamp.unlink(missing_ok=True)
        raise OracleError(f"the oracle for Kafka {version} has an unreadable {classpath} (not UTF-8 text): "
                          f"run again to rebuild it")
    entries = [str(jar)] + [p for p in listed.strip().split(os.pathsep) if p]
    missing = next((p for p in entries if not Path(p).exists()), None)
    if missing:
        stamp.unlink(missing_ok=True)
        raise OracleError(f"the oracle for Kafka {version} lost a jar ({missing}); run again to rebuild it")
    return entries


ANSWER_SECONDS = 300.0      # one trace's answer takes milliseconds; this long is a hung JVM
MAX_ANSWER = 64 << 20       # bytes of one answer line; more is not the driver talking
STDERR_KEEP = 8192          # bytes of the JVM's stderr kept to say why it stopped


class OracleStopped(Exception):
    """A signal or the run's time budget ended the wait for an answer (exit 3, not an error)."""


# slf4j-simple's levels for Kafka's controller classes (oracle/pom.xml binds it; the default is off)
LOG_LEVELS = ("trace", "debug", "info", "warn", "error")


class Oracle:
    """One driver JVM for one Kafka release. Use as a context manager.

    Its answers are another process's data: read by a thread into a queue so that a JVM that
    never answers cannot hang the run (the wait polls the run's signals, its time budget
    `deadline` and ANSWER_SECONDS); its stderr is drained all along (a JVM writing more than a
    pipe holds would otherwise block) and its tail kept to say why it stopped; an answer is
    bounded in size, decoded leniently and checked for shape before anyone reads it."""

    def __init__(self, version: str, generation: str, coverage: Optional[Path] = None,
                 log: Optional[tuple[str, str]] = None):
        """`coverage`: run Kafka's classes under JaCoCo's agent, its probes appended to this file
        when the JVM ends (jacoco.py). `log`: (level, file): Kafka's controller classes log at
        that slf4j level into that file ("": nowhere; LOG_LEVELS; none: they log nothing), so their debug
        paths run and are compared too."""
        self.version = version
        self.classpath = build(version, generation)
        level, file = log if log is not None else ("off", "")
        if level not in LOG_LEVELS + ("off",):
            raise OracleError(f"unknown log level {level!r} (one of {', '.join(LOG_LEVELS)})")
        self._logging = [f"-Dorg.slf4j.simpleLogger.defaultLogLevel={level}",
                         f"-Dorg.slf4j.simpleLogger.logFile={file or os.devnull}"]
        self._agent: list[str] = []
        if coverage is not None:
            from verifier.engines.conform.jacoco import JacocoError, agent_option
            try:
                self._agent = [agent_option(coverage)]
            except JacocoError as exc:
                raise OracleError(str(exc)) from None
        self.proc: Optional[subprocess.Popen] = None
        self.deadline: Optional[float] = None      # time.monotonic() at which the run's budget ends
        self._answers: queue.Queue = queue.Queue()
        self._err = bytearray()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> "Oracle":
        java = shutil.which("java")
        if java is None:
            raise OracleError("the oracle needs Java 17 (java): install a JDK")
        self.proc = subprocess.Popen(
            [java, "-XX:+UseSerialGC", *self._agent, *self._logging, "-cp", os.pathsep.join(self.classpath),
             "org.apache.kafka.controller.KraftVerifyOracle"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True)     # a Ctrl-C is the run's to handle (verifier/core/stop.py): it closes the JVM
        # The JVM ends when its stdin closes, so it never outlives this process, even one killed.
        for target_ in (self._read_answers, self._drain_stderr):
            t = threading.Thread(target=target_, args=(self.proc,), daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _read_answers(self, proc) -> None:
        while True:
            line = proc.stdout.readline(MAX_ANSWER + 1)
            if len(line) > MAX_ANSWER:
                self._answers.put(b"")           # too long: reported as such; the JVM is killed on close
                return
            self._answers.put(line or None)      # None: the JVM closed its stdout (it stopped)
            if not line:
                return

    def _drain_stderr(self, proc) -> None:
        while True:
            chunk = proc.stderr.read1(4096)     # a binary pipe: whatever is there, up to 4 KiB
            if not chunk:
                return
            self._err += chunk
            del self._err[:-STDERR_KEEP]

    def _why(self, extra: str = "") -> str:
        """The last line the JVM wrote on stderr (or on stdout), and its exit code if it ended."""
        code = self.proc.poll() if self.proc is not None else None
        lines = [ln.strip() for ln in bytes(self._err).decode("utf-8", "replace").splitlines() if ln.strip()]
        said = lines[-1] if lines else extra or "no output"
        return f"{said[:300]}" + (f" (exit code {code})" if code is not None else "")

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        jvm.close(proc, timeout=10)
        for t in self._threads:
            t.join(timeout=2)

    def _answer(self) -> Optional[bytes]:
        """The next line the JVM wrote, waiting as long as the run allows."""
        give_up = time.monotonic() + ANSWER_SECONDS
        while True:
            try:
                return self._answers.get(timeout=0.2)
            except queue.Empty:
                pass
            now = time.monotonic()
            if stop.requested():
                raise OracleStopped(stop.reason())
            if self.deadline is not None and now >= self.deadline:
                raise OracleStopped("time budget spent while the Kafka oracle was answering")
            if now >= give_up:
                raise OracleError(f"the Kafka {self.version} oracle did not answer within {ANSWER_SECONDS:g} s "
                                  f"(a hung JVM; it was stopped): {self._why()}")

    def run(self, init: dict[str, Any], ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The controller's state after `init` and after each op (len(ops) + 1 states)."""
        if self.proc is None:
            raise OracleError("the oracle is not running")
        try:
            self.proc.stdin.write((json.dumps({"init": init, "ops": ops}, separators=(",", ":")) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            pass                                   # it stopped: the answer queue says so
        line = self._answer()
        if line is None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            for t in self._threads[1:]:
                t.join(timeout=2)                  # the rest of its stderr: why it stopped
            raise OracleError(f"the Kafka {self.version} oracle stopped: {self._why()}")
        if not line:
            raise OracleError(f"the Kafka {self.version} oracle answered a line longer than {MAX_ANSWER >> 20} MiB: "
                              f"not the driver (remove {target(self.version)} and rebuild it)")
        text = line.decode("utf-8", "replace").strip()
        try:
            answer = json.loads(text)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            # a JVM that cannot start says why on stdout; a foreign program says anything
            raise OracleError(f"the Kafka {self.version} oracle answered something that is not the driver's JSON: "
                              f"{text[:200]!r}" + (f"; stderr: {self._why('')}" if self._err else ""))
        if answer.get("kafka", self.version) != self.version:
            raise OracleError(f"the oracle built for Kafka {self.version} runs Kafka {str(answer['kafka'])[:40]}'s "
                              f"classes: remove {target(self.version)} to rebuild it")
        if "fatal" in answer:
            states = answer.get("states")
            raise OracleFault(str(answer["fatal"]), states if isinstance(states, list) else [])
        return answer.get("states")


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
    from specs import RELEASES, release

    def build_one(name: str) -> str:
        rel = release(name)
        if rel is None:
            raise OracleError(f"{name}: not a release conform knows (known: {', '.join(RELEASES)})")
        build(rel.version, rel.api)
        return f"oracle for Kafka {rel.version} built ({target(rel.version).relative_to(ROOT)})"
    return jvm.build_main(argv, build_one, OracleError, every=RELEASES)


if __name__ == "__main__":
    raise SystemExit(main())
