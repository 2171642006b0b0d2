"""Every long command speaks on a terminal (issue 57): run under a pseudo-terminal of 80 columns,
each shows its progress line within 2 s of its first line, and no line it draws is wider than
the terminal (the live line is fitted, the rest wrapped). Each run is interrupted once it has
spoken: what is tested is the start, not the end. Off a terminal, the same commands print a
plain `progress:` line within 2 s (CI's logs)."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest

from tests.conftest import ROOT
from verifier.cli.progress import fit

COLUMNS = 80
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
# a progress line: the phase or figures, then the time since the start ("3s", "1m05s")
PROGRESS = re.compile(r"(^|, )\d+(m\d\d)?s$")

COMMANDS = {
    "check": ["check", "--brokers", "4", "--workers", "1"],
    "check --liveness": ["check", "--liveness", "--bound", "records=2"],
    "mutants": ["mutants"],
    "matrix": ["matrix", "--presets", "kafka", "--bound-sets", "reassignment"],
    "fuzz": ["fuzz", "--profile", "ci"],
    "prove": ["prove"],
    "availability": ["availability", "--runs", "2000"],
}
# The commands that start a JVM (Kafka's controller classes; a real cluster): stopped with
# SIGTERM, as a user's Ctrl-C would, so that they close what they started, which is then checked.
FINDING = ROOT / "specs" / "scenarios" / "findings" / "last-replica-standing-loses-an-acknowledged-record.json"
JVM_COMMANDS = {
    "conform": (["conform", "--kafka", "4.4", "--walks", "5000"], "KraftVerifyOracle"),
    "cluster-conform": (["cluster-conform", "--kafka", "4.4.0", str(FINDING)], "kafka.Kafka"),
}


def _segments(raw: bytes) -> list[str]:
    text = ANSI.sub("", raw.decode("utf-8", "replace"))
    return re.split(r"\r\n|\n|\r", text)


def _spawn(args, tmp_path, terminal: bool, out: bool = True):
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(PYTHONUNBUFFERED="1", TERM="xterm-256color")
    cmd = [sys.executable, "-m", "verifier.cli", *args] + (["--out", str(tmp_path / "out")] if out else [])
    if not terminal:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        return proc, proc.stdout.fileno()
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, COLUMNS, 0, 0))
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    return proc, master


def _first_progress(args, tmp_path, terminal: bool, wait: float = 90.0, stop=None):
    """(seconds from the command's first line to its first progress line, every segment drawn).
    `stop`: the signal that ends the command (it may close what it started), else SIGKILL."""
    proc, fd = _spawn(args, tmp_path, terminal)
    raw, first, spoke = b"", None, None
    try:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and spoke is None:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:          # the pty closed: the command ended
                break
            if not chunk:
                break
            now = time.monotonic()
            raw += chunk
            segments = [s for s in _segments(raw) if s.strip()]
            if first is None and segments:
                first = now
            if any(PROGRESS.search(s.strip()) and not s.startswith(("ok:", "complete:", "report:"))
                   for s in segments[1:]):
                spoke = now
        time.sleep(0.3)              # a moment more of drawing, for the width check
        try:
            while select.select([fd], [], [], 0)[0]:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                raw += chunk
        except OSError:
            pass
    finally:
        if stop is not None and proc.poll() is None:
            proc.send_signal(stop)
            try:
                while select.select([fd], [], [], 1)[0] and os.read(fd, 65536):
                    pass                         # drained, or the pty would block its last lines
            except OSError:
                pass
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
        if terminal:
            os.close(fd)
        else:
            proc.stdout.close()
    assert first is not None, f"{args}: printed nothing: {raw[-500:]!r}"
    assert spoke is not None, f"{args}: no progress line: {_segments(raw)[-6:]}"
    return spoke - first, _segments(raw)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_long_command_speaks_within_2_s_and_fits_80_columns(name, tmp_path):
    after, segments = _first_progress(COMMANDS[name], tmp_path, terminal=True)
    assert after <= 2.0, f"{name}: the first progress line came {after:.1f}s after the first line"
    wide = [s for s in segments if len(s) > COLUMNS]
    assert not wide, f"{name}: lines wider than {COLUMNS} columns: {wide[:3]}"


@pytest.mark.deps
@pytest.mark.parametrize("name", [pytest.param("conform"),
                                  pytest.param("cluster-conform", marks=pytest.mark.xdist_group("kafka-cluster"))])
def test_a_command_with_a_jvm_speaks_within_2_s_fits_80_columns_and_leaves_nothing(name, tmp_path):
    args, process = JVM_COMMANDS[name]
    after, segments = _first_progress(args, tmp_path, terminal=True, wait=300.0, stop=signal.SIGTERM)
    assert after <= 2.0, f"{name}: the first progress line came {after:.1f}s after the first line"
    wide = [s for s in segments if len(s) > COLUMNS]
    assert not wide, f"{name}: lines wider than {COLUMNS} columns: {wide[:3]}"
    deadline = time.monotonic() + 30
    while subprocess.run(["pgrep", "-f", process], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, f"{name}: a {process} JVM outlived the command"
        time.sleep(0.5)


@pytest.mark.parametrize("name", ["mutants", "prove"])
def test_off_a_terminal_the_line_is_plain_and_comes_within_2_s(name, tmp_path):
    after, segments = _first_progress(COMMANDS[name], tmp_path, terminal=False)
    assert after <= 2.0
    assert any(s.startswith("progress: ") for s in segments)
    assert not any("\x1b" in s for s in segments)


def test_the_line_keeps_the_time_and_drops_figures_to_fit():
    parts = ["mutant 4 of 21: unclean-registration-treated-clean", "324,861 distinct", "depth 32",
             "queue 1,024", "186,734 distinct/s", "1,203 MB", "1m05s"]
    for width in (20, 40, 60, 80, 200):
        line = fit(parts, width)
        assert len(line) <= width and line.endswith("1m05s"), (width, line)
    assert fit(parts, 200) == ", ".join(parts)
    assert fit(parts, 80).startswith("mutant 4 of 21")
    assert "…" in fit(parts, 30)                      # a first part too long alone is shortened, marked


WHOLE = {
    "check": ["check"],
    "check, a violation": ["check", "--mutant", "hwm-ignores-min-isr"],
    "list": ["list"],
    "availability": ["availability", "--runs", "20"],
    "matrix": ["matrix", "--presets", "kafka,pre-kip-966,kip-966", "--bound-sets", "default,config"],
}


def _whole(args, tmp_path) -> tuple[int, list[str]]:
    """A command run to its end under an 80-column pseudo-terminal: (exit code, every segment drawn)."""
    proc, fd = _spawn(args, tmp_path, terminal=True, out=args[0] != "list")
    raw = b""
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                raw += chunk
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        os.close(fd)
    return proc.returncode, _segments(raw)


@pytest.mark.parametrize("name", sorted(WHOLE))
def test_no_line_of_a_whole_run_is_wider_than_80_columns(name, tmp_path):
    """From the first line to the report's: tables that do not fit become a line per row (matrix,
    availability), long names fold, `list` wraps its text under itself; nothing is cut."""
    code, segments = _whole(WHOLE[name], tmp_path)
    assert code in (0, 1), (name, code, segments[-5:])
    wide = [s for s in segments if len(s) > COLUMNS]
    assert not wide, f"{name}: lines wider than {COLUMNS} columns: {wide[:3]}"
    text = "\n".join(segments)
    assert "…" not in text.replace("…, ", ""), f"{name}: a cut word: {[s for s in segments if '…' in s][:3]}"
    if name == "availability":
        assert "loss in tolerance" in text and "kafka+recovery=balanced" in text
    if name == "list":                # an action's text whole (it was cut at its docstring's first line)
        assert "the leader learns the follower's log end offset and broker epoch." in " ".join(text.split())
    if name == "matrix":
        assert "pre-kip-966 @ default: violated: LeaderCandidateCompleteness (6)" in " ".join(text.split())
