"""Every exit path leaves a report: SIGINT and SIGTERM mid-run end in exit 3, one line on
stderr at most, a summary and report marked stopped with the signal named, and a JUnit file
with errors in place of the green one an earlier run left at the same path."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
STALE_GREEN = ('<?xml version="1.0"?>\n<testsuites name="kraft-verify" tests="16" failures="0" errors="0">'
               '<testsuite name="old" tests="16" failures="0" errors="0"/></testsuites>\n')


def _interrupt(tmp_path: Path, sig: signal.Signals, *args: str,
               until=None) -> tuple[subprocess.CompletedProcess, Path]:
    """Run the CLI, signal it mid-run, return what it printed. `until`: a predicate on its
    stdout's lines; the signal waits for a line it accepts (work the run has shown it did),
    else it goes 1.5 s after the run's directory appears."""
    junit = tmp_path / "junit.xml"
    junit.write_text(STALE_GREEN)
    out = tmp_path / "reports"
    proc = subprocess.Popen([sys.executable, "-m", "verifier.cli", *args, "--junit", str(junit), "--out", str(out)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, COLUMNS="200", PYTHONUNBUFFERED="1"), start_new_session=True)
    lines: list[str] = []
    errors: list[str] = []
    shown = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            lines.append(line)
            if until is not None and until(line):
                shown.set()
    readers = [threading.Thread(target=read, daemon=True),
               threading.Thread(target=lambda: errors.extend(proc.stderr), daemon=True)]
    for reader in readers:
        reader.start()
    try:
        deadline = time.monotonic() + 60
        while not (out.exists() and any(out.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.1)          # the run directory exists once the config is read
        assert ET.parse(junit).getroot().get("errors") != "0", "the stale green JUnit was not replaced at start"
        if until is None:
            time.sleep(1.5)          # well inside the engine's work
        else:
            assert shown.wait(120), f"no line showed the run's work in 120 s: {lines[-3:]}"
        proc.send_signal(sig)
        proc.wait(timeout=120)
    finally:                         # a failed test leaves no run behind
        try:
            os.killpg(proc.pid, signal.SIGKILL)      # the run and what it started (the oracle's JVM)
        except ProcessLookupError:
            pass
        proc.wait()
        for reader in readers:
            reader.join(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, "".join(lines), "".join(errors)), junit


def _compared_steps(line: str) -> bool:
    """conform's plain progress line (every 10 s off a terminal) once a step was compared."""
    m = re.match(r"progress: ([\d,]+) steps compared", line)
    return m is not None and int(m[1].replace(",", "")) > 0


def _assert_interrupted(res, junit: Path, sig: signal.Signals, tmp_path: Path) -> dict:
    assert res.returncode == 3, res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    assert len(res.stderr.strip().splitlines()) <= 1
    (summary_path,) = list((tmp_path / "reports").glob("*/summary.json"))
    summary = json.loads(summary_path.read_text())
    assert summary["result"] == "stopped" and summary["exit_code"] == 3
    assert f"interrupted by {sig.name}" in summary["stop_reason"]
    assert "interrupted" in (summary_path.parent / "report.md").read_text()
    root = ET.parse(junit).getroot()
    assert int(root.get("errors")) >= 1 and root.get("failures") == "0"
    assert f"interrupted by {sig.name}" in junit.read_text()
    return summary


@pytest.mark.deps            # the oracle's JVM
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_conform_interrupted_mid_run_reports_the_steps_compared(tmp_path, sig):
    res, junit = _interrupt(tmp_path, sig, "conform", "--kafka", "4.4", "--walks", "1000000", until=_compared_steps)
    summary = _assert_interrupted(res, junit, sig, tmp_path)
    assert summary["counts"]["steps_compared"] > 0 and summary["counts"]["walks"] < 1000000


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_check_interrupted_mid_run_reports_what_it_explored(tmp_path, sig, workers):
    res, junit = _interrupt(tmp_path, sig, "check", "--brokers", "4", "--workers", workers)
    summary = _assert_interrupted(res, junit, sig, tmp_path)
    assert summary["counts"]["distinct_states"] > 0
    assert all(inv["status"] != "holds" for inv in summary["invariants"])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_fuzz_and_prove_interrupted_are_never_green(tmp_path, sig):
    res, junit = _interrupt(tmp_path, sig, "fuzz", "--examples", "100000")
    _assert_interrupted(res, junit, sig, tmp_path)


def test_prove_interrupted_stops_after_the_query_under_way(tmp_path):
    res, junit = _interrupt(tmp_path, signal.SIGTERM, "prove")
    _assert_interrupted(res, junit, signal.SIGTERM, tmp_path)


def test_a_usage_error_leaves_no_report_and_no_junit(cli, tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(STALE_GREEN)
    res = cli("check", "--bound", "records=x", "--junit", str(junit), "--out", str(tmp_path / "r"))
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert not junit.exists(), "a stale green JUnit survived a run that never started"
    assert not any((tmp_path / "r").glob("*/summary.json"))


def test_an_unwritable_junit_path_is_refused_before_the_run(cli, tmp_path):
    res = cli("check", "--brokers", "4", "--junit", str(tmp_path / "missing" / "j.xml"), "--out", str(tmp_path))
    assert res.returncode == 2 and "--junit" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.glob("check-*/summary.json"))     # refused before the search, not after it


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("delay", [0.0, 0.02, 0.08])
def test_a_signal_after_the_report_keeps_the_runs_exit_code(tmp_path, sig, delay):
    """A run that printed its report line and is signalled as it exits: its exit code (0 here)
    and its green report stand (it exited 130 beside a green summary: Python puts the default
    handlers back while it shuts down)."""
    proc = subprocess.Popen([sys.executable, "-m", "verifier.cli", "check", "-q", "--out", str(tmp_path)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True)
    try:
        for line in proc.stdout:
            if line.startswith("report:"):
                break
        time.sleep(delay)
        proc.send_signal(sig)
        rest, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, (proc.returncode, err)
    assert "Traceback" not in err and "interrupted" not in err + rest
    (summary,) = [json.loads(p.read_text()) for p in tmp_path.glob("*/summary.json")]
    assert summary["result"] == "ok" and summary["exit_code"] == 0
