"""`check --visited disk --checkpoint-dir` (verifier/engines/kernel/diskpoint.py): the search's
own level files are the checkpoint. A run stopped by a bound, its time budget inside a level, or
SIGKILL resumes to exactly the counts, levels and counterexamples of an uninterrupted run; the
directory then holds only what its manifest names; a torn level file is recomputed, and a
checkpoint of the other search is refused in one line."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, kill_at_depth, tmpfs

CONFIG = ("--brokers", "4", "--bound", "isr_shrinks=1")     # 1,942,387 states, 30 levels
SMALL = ("--bound", "lossy_crashes=0")                       # 15,232 states, 25 levels
MUTANT = ("--mutant", "fenced-elr-elected", "--bound", "isr_shrinks=1")   # violations, kept going
pytestmark = pytest.mark.xdist_group("diskpoint")


def _check(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verifier.cli", "check", *args, "-q"], cwd=ROOT,
                          capture_output=True, text=True)


def _summary(out):
    return json.loads(next(out.glob("*/summary.json")).read_text())


def _facts(summary):
    c = summary["counts"]
    traces = {name: [row[1] for row in t["rows"]] for name, t in summary["counterexamples"].items()}
    return (c["distinct_states"], c["transitions"], c["depth"], c["states_per_level"], c["terminal_states"],
            summary["result"], summary["violated"], summary["coverage"], traces)


def _plain(out, config) -> tuple:
    r = _check(*config, "--out", str(out))
    assert r.returncode in (0, 1), r.stdout + r.stderr
    return _facts(_summary(out))


def _named(ck):
    """The level files the manifest names, and those the directory holds."""
    data = json.loads((ck / "manifest.json").read_text())["data"]
    return ({n.split("/", 1)[1] for n in data if n.startswith("visited/")},
            {p.name for p in (ck / "visited").iterdir()})


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    return _plain(tmp_path_factory.mktemp("plain"), CONFIG)


def test_a_run_stopped_at_a_depth_resumes_to_the_counterexamples_of_one_run(tmp_path):
    """Violations found before the checkpoint and after it: the resumed run reports every one
    with the counterexample an uninterrupted in-memory run gives (links read back across it)."""
    plain = _plain(tmp_path / "plain", MUTANT)
    ck = tmp_path / "ck"
    first = _check(*MUTANT, "--visited", "disk", "--out", str(tmp_path / "o1"), "--checkpoint-dir", str(ck),
                   "--max-depth", "8")
    assert first.returncode == 1, first.stdout + first.stderr      # a violation found: exit 1 over 3
    assert _summary(tmp_path / "o1")["stop_reason"].startswith("max depth 8 reached")
    assert json.loads((ck / "manifest.json").read_text())["depth"] == 8
    named, held = _named(ck)
    assert named == held
    r = _check(*MUTANT, "--visited", "disk", "--out", str(tmp_path / "o2"), "--checkpoint-dir", str(ck), "--resume")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "resuming from" in r.stdout and "depth 8" in r.stdout
    assert _facts(_summary(tmp_path / "o2")) == plain
    again = _check(*MUTANT, "--visited", "disk", "--out", str(tmp_path / "o3"), "--checkpoint-dir", str(ck), "--resume")
    assert again.returncode == 1 and _facts(_summary(tmp_path / "o3")) == plain     # a done run answers at once


def test_a_run_stopped_inside_a_level_goes_back_to_the_levels_start(tmp_path, uninterrupted):
    """The time budget stops the run inside a level: the checkpoint is of the level's start, the
    files written after it are gone, and the resumed run finds exactly what one run would."""
    ck = tmp_path / "ck"
    first = _check(*CONFIG, "--visited", "disk", "--out", str(tmp_path / "o1"), "--checkpoint-dir", str(ck),
                   "--time-budget", "2")
    assert first.returncode == 3 and "time budget" in first.stdout, first.stdout + first.stderr
    manifest = json.loads((ck / "manifest.json").read_text())
    assert manifest["position"] == 0 and 0 < manifest["states"] < _summary(tmp_path / "o1")["counts"]["distinct_states"]
    named, held = _named(ck)
    assert named == held
    r = _check(*CONFIG, "--visited", "disk", "--out", str(tmp_path / "o2"), "--checkpoint-dir", str(ck), "--resume")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"resuming from {ck}: {manifest['states']:,} states" in r.stdout
    assert _facts(_summary(tmp_path / "o2")) == uninterrupted


def test_sigkill_then_resume_gives_the_uninterrupted_counts(tmp_path, uninterrupted):
    ck = tmp_path / "ck"
    states = kill_at_depth((*CONFIG, "--visited", "disk", "--out", str(tmp_path / "o1"), "--checkpoint-every", "0.2"),
                           ck, 12)["states"]
    assert 0 < states < uninterrupted[0]
    r = _check(*CONFIG, "--visited", "disk", "--out", str(tmp_path / "o2"), "--checkpoint-dir", str(ck), "--resume")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"resuming from {ck}: {states:,} states" in r.stdout
    assert _facts(_summary(tmp_path / "o2")) == uninterrupted
    named, held = _named(ck)
    assert named == held


@pytest.mark.parametrize("damage", ["a run cut short", "a byte of the rows changed", "a link file gone"])
def test_a_damaged_level_file_is_recomputed_never_trusted(tmp_path, damage):
    plain = _plain(tmp_path / "plain", SMALL)
    ck = tmp_path / "ck"
    first = _check(*SMALL, "--visited", "disk", "--out", str(tmp_path / "o1"), "--checkpoint-dir", str(ck),
                   "--max-depth", "10")
    assert first.returncode == 3, first.stdout + first.stderr
    visited = ck / "visited"
    if damage == "a run cut short":
        run = next(visited.glob("*.run"))
        os.truncate(run, run.stat().st_size - 16)
    elif damage == "a byte of the rows changed":
        rows = next(visited.glob("*.rows"))
        raw = bytearray(rows.read_bytes())
        raw[len(raw) // 2] ^= 1
        rows.write_bytes(bytes(raw))
    else:
        (visited / "level-00003.parent").unlink()
    r = _check(*SMALL, "--visited", "disk", "--out", str(tmp_path / "o2"), "--checkpoint-dir", str(ck), "--resume")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cannot be trusted" in r.stdout and "torn or altered" in r.stdout and "starting over" in r.stdout
    assert _facts(_summary(tmp_path / "o2")) == plain


@pytest.mark.parametrize("first, then", [("disk", "memory"), ("memory", "disk")])
def test_the_other_searchs_checkpoint_is_refused_in_one_line(tmp_path, first, then):
    ck = tmp_path / "ck"
    made = _check(*SMALL, "--visited", first, "--out", str(tmp_path / "o1"), "--checkpoint-dir", str(ck),
                  "--max-depth", "5")
    assert made.returncode == 3, made.stdout + made.stderr
    before = sorted(p.name for p in ck.rglob("*"))
    r = _check(*SMALL, "--visited", then, "--out", str(tmp_path / "o2"), "--checkpoint-dir", str(ck), "--resume")
    assert r.returncode == 2, r.stdout + r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert f"resume it with --visited {first}" in line
    assert sorted(p.name for p in ck.rglob("*")) == before          # left as it was


def test_a_disk_checkpoint_of_the_byte_chunks_is_refused_in_one_line_and_kept(tmp_path):
    """Version 5 kept a chunk's columns in whole bytes; this one packs their bits. Its files
    are not read as this version's (nor removed by a start over): one line, exit 2."""
    ck = tmp_path / "ck"
    made = _check(*SMALL, "--visited", "disk", "--out", str(tmp_path / "o1"), "--checkpoint-dir", str(ck),
                  "--max-depth", "5")
    assert made.returncode == 3, made.stdout + made.stderr
    manifest = ck / "manifest.json"
    data = json.loads(manifest.read_text())
    assert data["version"] == 6
    manifest.write_text(json.dumps(dict(data, version=5)))
    before = sorted(p.name for p in ck.rglob("*"))
    r = _check(*SMALL, "--visited", "disk", "--out", str(tmp_path / "o2"), "--checkpoint-dir", str(ck), "--resume")
    assert r.returncode == 2, r.stdout + r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "of an earlier kraft-verify" in line and "cannot be resumed by this one" in line
    assert sorted(p.name for p in ck.rglob("*")) == before


@pytest.fixture
def small_disk(tmp_path):
    """A disk of its own (a tmpfs) 10 MB past the 2 GB the search leaves free, unmounted after."""
    with tmpfs(tmp_path / "small", "2058m") as where:
        yield where


def test_a_full_disk_stops_with_a_checkpoint_that_resumes_once_there_is_room(tmp_path, small_disk, uninterrupted):
    """The checkpoint's disk fills (the spill directory's has room: the search watches the disk it
    writes to): one line, exit 3, a checkpoint of the last level done; with more room the run
    resumes from it to the uninterrupted counts."""
    ck = small_disk / "ck"
    first = _check(*CONFIG, "--visited", "disk", "--out", str(tmp_path / "o1"), "--checkpoint-dir", str(ck))
    assert first.returncode == 3, first.stdout + first.stderr
    reason = _summary(tmp_path / "o1")["stop_reason"]
    assert reason.startswith("disk budget: growing") and f"in {ck}/visited needs" in reason and "\n" not in reason
    states = json.loads((ck / "manifest.json").read_text())["states"]
    assert 0 < states < uninterrupted[0]
    subprocess.run(["mount", "-o", "remount,size=2400m", str(small_disk)], check=True)
    r = _check(*CONFIG, "--visited", "disk", "--out", str(tmp_path / "o2"), "--checkpoint-dir", str(ck), "--resume")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"resuming from {ck}: {states:,} states" in r.stdout
    assert _facts(_summary(tmp_path / "o2")) == uninterrupted


def test_the_level_to_expand_is_checked_against_every_slice_of_every_run(tmp_path):
    """The resume's last cross-check (diskpoint._front_held): a fingerprint of the level to
    expand that no run holds is found in whichever slice of the key space it lies, also with
    the slices checked two at a time on threads; a level the runs hold passes."""
    import numpy as np

    from verifier.core.runs import write_run
    from verifier.engines.kernel.checkpoint import Damaged
    from verifier.engines.kernel.diskpoint import SLICES, _front_held
    from verifier.engines.kernel.levelfiles import FpFile

    rng = np.random.default_rng(7)
    held = rng.integers(0, 2**63, size=(40_000, 2), dtype=np.uint64) * np.uint64(2)   # every slice, a's top bits
    held = held[np.lexsort((held[:, 1], held[:, 0]))]
    runs = []
    for i, part in enumerate(np.array_split(held, 3)):        # three runs, each sorted
        write_run(str(tmp_path / f"r{i}.run"), part[np.lexsort((part[:, 1], part[:, 0]))])
        runs.append([f"r{i}.run", len(part)])
    front = FpFile(None, tmp_path)
    front.append(held[rng.permutation(len(held))[:25_000]])
    _front_held(front, runs, tmp_path)                        # every one held: no complaint
    for lo in range(SLICES):
        stray = np.array([[np.uint64(lo) << np.uint64(61) | np.uint64(12345), np.uint64(1)]], dtype=np.uint64)
        more = FpFile(None, tmp_path)
        more.append(held[:100])
        more.append(stray)
        with pytest.raises(Damaged, match="not in the visited runs"):
            _front_held(more, runs, tmp_path)
        more.close()
    front.close()
