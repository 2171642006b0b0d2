"""conform's oracle as another process whose answers are data (issue 37). A stand-in for the
JVM (a `java` first on PATH) answers short, garbage, nothing, never, or floods its stderr; each
run ends in one line with exit 2 (or 3 when the run's time budget or a signal ends the wait)
within its budget, says why, and leaves no process behind. The real driver is built
(`make oracle`) for the jars and classpath conform checks before it starts the JVM."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from tests.conftest import ROOT

FAKE = """#!{python}
import sys, time
MODE = {mode!r}
if MODE == "cannot-start":
    print("Error: Could not find or load main class org.apache.kafka.controller.KraftVerifyOracle")
    sys.exit(1)
if MODE == "dies":
    sys.stderr.write("Error occurred during initialization of VM\\nCould not reserve enough space for object heap\\n")
    sys.exit(1)
if MODE == "stderr-flood":
    sys.stderr.write(("x" * 1023 + "\\n") * 1024)     # 1 MiB, far more than a pipe holds
    sys.stderr.write("java.lang.OutOfMemoryError: the flood's last line\\n")
    sys.stderr.flush()
    sys.exit(3)
for line in sys.stdin:
    if MODE == "never":
        time.sleep(3600)
    answer = {{"short": '{{"kafka": "4.4.0", "states": []}}',
              "null": '{{"kafka": "4.4.0", "states": null}}',
              "garbage": 'this is not json',
              "list": '[1, 2, 3]'}}[MODE]
    print(answer, flush=True)
"""


@pytest.fixture
def fake_java(tmp_path):
    """A `java` that behaves as asked, marked so the test can see it is gone afterwards."""
    marker = f"kv-fake-oracle-{uuid.uuid4().hex}"

    def make(mode: str) -> dict:
        bindir = tmp_path / marker
        bindir.mkdir(exist_ok=True)
        java = bindir / "java"
        java.write_text(FAKE.format(python=sys.executable, mode=mode))
        java.chmod(0o755)
        return {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}

    yield make
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    for pid in left:
        os.kill(int(pid), signal.SIGKILL)
    assert not left, f"the stand-in oracle outlived the run: {left}"


def _conform(cli, tmp_path, env, *extra):
    start = time.monotonic()
    r = cli("conform", "--kafka", "4.4", "--walks", "3", "--out", str(tmp_path / "out"), *extra, env=env)
    return r, time.monotonic() - start


def _one_line(r, code, *words):
    assert r.returncode == code, r.stdout + r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    if code == 2:
        (line,) = r.stderr.strip().splitlines()
        for w in words:
            assert w in line, line
    else:
        for w in words:
            assert w in r.stdout, r.stdout


@pytest.mark.parametrize("mode, words", [
    ("short", ("answered 0 states",)),
    ("null", ("answered NoneType states",)),
    ("garbage", ("not the driver's JSON", "this is not json")),
    ("list", ("not the driver's JSON",)),
    ("cannot-start", ("Could not find or load main class",)),
    ("dies", ("Could not reserve enough space", "exit code 1")),
    ("stderr-flood", ("the flood's last line", "exit code 3")),
])
def test_an_oracle_that_does_not_answer_as_the_driver_is_one_line_and_exit_2(cli, tmp_path, fake_java, mode, words):
    r, seconds = _conform(cli, tmp_path, fake_java(mode))
    _one_line(r, 2, *words)
    assert seconds < 60


def test_an_oracle_that_never_answers_is_stopped_by_the_time_budget(cli, tmp_path, fake_java):
    r, seconds = _conform(cli, tmp_path, fake_java("never"), "--time-budget", "3")
    _one_line(r, 3, "STOPPED (time budget spent while the Kafka oracle was answering)")
    assert seconds < 30


def test_an_oracle_that_never_answers_is_stopped_by_sigterm(tmp_path, fake_java):
    env = dict(os.environ, **fake_java("never"))
    p = subprocess.Popen([sys.executable, "-m", "verifier.cli", "conform", "--kafka", "4.4", "--walks", "3",
                          "--out", str(tmp_path / "out")], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(4)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 3, out + err
    assert "interrupted by SIGTERM" in out, out + err


def test_a_missing_oracle_module_is_one_line(cli, tmp_path):
    for where in (tmp_path / "nowhere", tmp_path / "a-file"):
        if where.name == "a-file":
            where.write_text("not a Maven module")
        r = cli("conform", "--kafka", "4.4", "--walks", "1", "--out", str(tmp_path / "out"),
                env={"KRAFT_VERIFY_ORACLE": str(where)})
        _one_line(r, 2, "has no pom.xml", "KRAFT_VERIFY_ORACLE")


def test_a_damaged_classpath_file_is_one_line_and_says_rebuild(cli, tmp_path):
    """A non-UTF-8 classpath.txt under the build was a UnicodeDecodeError (issue 37). A copy of
    the oracle module with its 4.4.0 build, so the real one is untouched."""
    import shutil
    copy = tmp_path / "oracle"
    copy.mkdir()
    shutil.copy(ROOT / "oracle" / "pom.xml", copy / "pom.xml")
    shutil.copytree(ROOT / "oracle" / "src", copy / "src")
    shutil.copytree(ROOT / "oracle" / "target" / "kafka-4.4.0", copy / "target" / "kafka-4.4.0")
    (copy / "target" / "kafka-4.4.0" / "classpath.txt").write_bytes(b"\xff\xfe not a classpath")
    r = cli("conform", "--kafka", "4.4", "--walks", "1", "--out", str(tmp_path / "out"),
            env={"KRAFT_VERIFY_ORACLE": str(copy)})
    _one_line(r, 2, "classpath.txt (not UTF-8 text)", "rebuild")
    assert not (copy / "target" / "kafka-4.4.0" / "sources.sha256").exists()     # the next run rebuilds
