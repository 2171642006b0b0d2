"""Bytes a state, resident and on disk, are figures of every search run: the peak resident set
is the run's own (started over at its start), the disk figure is its checkpoint's files."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from verifier.core.machine import peak_resident_bytes, reset_peak_resident, tree_bytes

ROOT = Path(__file__).resolve().parents[3]
MB = 2**20


def test_the_peak_resident_set_is_started_over_at_a_run():
    """A 256 MB array touched raises the peak past it; once it is freed and the peak started
    over, the peak is the process's present size again (a matrix row after a big one is not
    charged with the big one's peak)."""
    assert reset_peak_resident(), "/proc/self/clear_refs refused: the figure would be the process's peak"
    before = peak_resident_bytes()
    big = np.ones(256 * MB // 8)
    assert peak_resident_bytes() >= before + 250 * MB
    del big
    assert reset_peak_resident()
    assert peak_resident_bytes() < before + 100 * MB


def test_a_check_says_its_bytes_a_state_resident_and_on_disk(tmp_path):
    out, ck = tmp_path / "out", tmp_path / "ck"
    r = subprocess.run([sys.executable, "-m", "verifier.cli", "check", "--bound", "lossy_crashes=0", "-q",
                        "--out", str(out), "--checkpoint-dir", str(ck)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads(next(out.glob("*/summary.json")).read_text())
    m, states = summary["memory"], summary["counts"]["distinct_states"]
    assert m["peak_resident_of"] == "run"
    assert m["peak_resident_bytes"] > 50 * MB            # an interpreter, numba and the kernel's buffers at least
    assert m["peak_resident_bytes_per_state"] == round(m["peak_resident_bytes"] / states, 1)
    assert m["disk_bytes"] == tree_bytes(ck) > 0
    assert m["disk_bytes_per_state"] == round(m["disk_bytes"] / states, 1)
    line = next(x for x in r.stdout.splitlines() if x.startswith("memory: "))
    assert f"{m['peak_resident_bytes_per_state']:,.0f} B a state resident at the peak" in line
    assert f"{m['disk_bytes_per_state']:,.1f} B a state on disk" in line
    report = next(out.glob("*/report.md")).read_text()
    assert "| bytes a state, resident at the peak |" in report and "| bytes a state on disk (checkpoint) |" in report
