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


def test_every_disk_budget_reads_one_figure_and_a_vanished_directory_is_said_so(tmp_path, monkeypatch):
    """check's spills and spark-check's scratch ask verifier.core.machine.disk_free: a disk
    with too little room stops both, a directory gone is an OSError to it, which check says in
    its budget's words and spark-check's room leaves to the write itself."""
    import pytest

    import spark.exchange as EX
    from verifier.core import machine
    from verifier.engines.kernel.memory import Budget, MemoryBudget
    gone = tmp_path / "gone"
    with pytest.raises(OSError):
        machine.disk_free(gone)
    assert EX.free(str(gone)) == 0
    EX.room(str(gone), 1 << 40)                           # not asked: the write says what is wrong
    with pytest.raises(MemoryBudget, match="cannot be written"):
        Budget().allow_disk(1, "the test", str(gone))
    monkeypatch.setattr(machine, "disk_free", lambda path: 3 << 30)
    monkeypatch.setattr(EX, "disk_free", machine.disk_free)
    import verifier.engines.kernel.memory as M
    monkeypatch.setattr(M, "disk_free", machine.disk_free)
    EX.room(str(tmp_path), 1 << 30)                       # 3 GB free, 1 GB more: 2 GB left
    with pytest.raises(OSError, match="disk budget"):
        EX.room(str(tmp_path), (1 << 30) + 1)
    Budget().allow_disk(1 << 30, "the test", str(tmp_path))
    with pytest.raises(MemoryBudget, match="disk budget"):
        Budget().allow_disk((1 << 30) + 1, "the test", str(tmp_path))
