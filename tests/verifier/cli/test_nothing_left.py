"""Nothing left running: every command, after success, an error, a budget or a signal, leaves
no process of its own behind (worker processes, PySpark's workers and JVM, the conform
engine's driver JVM). Each command runs in a session of its own; once it has exited, no process
of that session may remain."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT


def _session_members(sid: int) -> list[str]:
    """The processes whose session is `sid` (from /proc: field 6 of stat is the session id)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        if int(fields[3]) == sid:
            out.append(text[:text.rindex(")") + 1])
    return out


def _run(args: list[str], tmp_path, signal_after=None, sig=signal.SIGINT) -> tuple[int, list[str]]:
    proc = subprocess.Popen([sys.executable, "-m", "verifier.cli", *args, "--out", str(tmp_path / "out")], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=dict(os.environ, COLUMNS="200"))
    if signal_after is not None:
        time.sleep(signal_after)
        proc.send_signal(sig)
    proc.wait(timeout=600)
    deadline = time.monotonic() + 10            # a child reaped by init a moment after its parent
    left = _session_members(proc.pid)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = _session_members(proc.pid)
    return proc.returncode, left


CASES = {
    "check --workers 2, complete": (["check", "--workers", "2", "--brokers", "2", "-q"], None, (0,)),
    # (four brokers: minutes of search; the default with records=2 now ends in about 3 s, before the signal)
    "check --workers 2, SIGINT": (["check", "--workers", "2", "--brokers", "4", "--bound", "records=2", "-q"], 4,
                                  (3,)),
    "check --workers 2, time budget": (["check", "--workers", "2", "--brokers", "4", "--bound", "records=2",
                                        "--time-budget", "3", "-q"], None, (3,)),
    "check, a usage error": (["check", "--brokers", "2", "--bound", "nope=1"], None, (2,)),
    "spark-check, complete": (["spark-check", "--master", "local[2]", "--brokers", "2", "--bound",
                               "lossy_crashes=0", "-q"], None, (0,)),
    "spark-check, SIGTERM": (["spark-check", "--master", "local[2]", "--brokers", "4", "--bound", "records=2", "-q"],
                             20, (3,)),
    "conform, complete": (["conform", "--kafka", "4.4", "--walks", "10"], None, (0,)),
    "conform, SIGINT": (["conform", "--kafka", "4.4", "--walks", "100000"], 8, (3,)),
    "prove, SIGINT in the self-check": (["prove", "--self-check-samples", "100000000"], 4, (3,)),
}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.deps) if c.startswith(("spark-check", "conform"))
                                  else c for c in sorted(CASES)])      # deps: Spark's and the oracle's JVMs
def test_a_command_leaves_no_process_behind(case, tmp_path):
    args, after, codes = CASES[case]
    sig = signal.SIGTERM if "SIGTERM" in case else signal.SIGINT
    code, left = _run(args, tmp_path, after, sig)
    assert code in codes, (case, code)
    assert left == [], f"{case}: left running: {left}"
