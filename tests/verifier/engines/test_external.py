"""`check --visited disk` (verifier/engines/kernel/external.py) answers as the in-memory
compiled search does: the same counts, levels, coverage, verdicts and counterexamples, on stops
inside a level too; it keeps 22 bytes a state on disk and nothing after the run; a level's file
that vanishes or changes size stops it in one line (exit 3), and what it does not do yet is
refused in one line (exit 2). Its checkpoints: test_diskpoint.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from specs import Model
from specs.config import make_config
from verifier.cli import binding
from verifier.core.result import STOPPED
from verifier.core.settings import Limits, Options, Settings


def _run(model, limits=Limits(), keep_going=True, threads=1, **knobs):
    settings = Settings(limits=limits, options=Options(keep_going=keep_going),
                        knobs=binding.knobs("kernel", threads=threads, **knobs))
    return binding.engine("kernel")(model, binding.properties(), settings)


def _facts(r):
    traces = {n: [label for label, _ in t.steps] for n, t in r.counterexamples.items()}
    return (r.status, r.stop_reason, r.distinct_states, r.transitions, r.states_per_level, r.terminal_states,
            dict(r.enabled), dict(r.taken), {v.name: v.status for v in r.verdicts}, traces)


SYMMETRIC = {"any_candidate_elections": True}
CASES = {
    "default": (dict(bounds={"isr_shrinks": 1}), False, Limits(), True),
    "violations kept going": (dict(mutant="fenced-elr-elected", bounds={"isr_shrinks": 1}), False, Limits(), True),
    "first violation, a step": (dict(mutant="fenced-elr-elected", bounds={"isr_shrinks": 1}), False, Limits(), False),
    "first violation, a state": (dict(mutant="hwm-ignores-min-isr", bounds={"isr_shrinks": 1}), False, Limits(), False),
    "max states, kept going": (dict(bounds={"isr_shrinks": 1}), False, Limits(max_states=4_321), True),
    "max states, a wide level": (dict(bounds={"isr_shrinks": 1}), False, Limits(max_states=50_000), False),
    "max depth": (dict(), False, Limits(max_depth=7), True),
    "symmetric": (dict(flags=SYMMETRIC), True, Limits(), True),
    "symmetric, a step renamed": (dict(mutant="leader-epoch-not-bumped", flags=SYMMETRIC, bounds={"isr_shrinks": 1}),
                                  True, Limits(), True),
    "pre-kip-903": (dict(preset="pre-kip-903"), False, Limits(), True),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", list(CASES))
def test_disk_answers_as_memory(case, threads, tmp_path, monkeypatch):
    """On one thread or two (their rounds claim in the level's one table, parallel.Rounds)."""
    monkeypatch.setenv("KRAFT_VERIFY_SPILL", str(tmp_path))
    config, symmetric, limits, keep_going = CASES[case]
    model = Model(make_config(**config), symmetry=symmetric)
    memory = _run(model, limits, keep_going)
    disk = _run(model, limits, keep_going, threads, visited="disk")
    assert memory.distinct_states > 100 or case.startswith("first")
    assert _facts(disk) == _facts(memory)
    # a run (16 bytes) and links (4 + 2) a state; the roots have no links
    roots = memory.states_per_level[0]
    assert disk.disk_bytes == 22 * disk.distinct_states - 6 * roots
    assert disk.disk_of == "visited runs and links"
    # the peak: at the last level's end every run and link was there, with the level's
    # fingerprints (16 bytes a state, a file without a name) and its rows
    assert disk.disk_peak_bytes > disk.disk_bytes + 16 * disk.states_per_level[-1]
    assert list(tmp_path.iterdir()) == []          # nothing left behind


def test_a_vanished_level_file_stops_the_search_in_one_line(tmp_path, monkeypatch):
    from verifier.engines.kernel import external
    monkeypatch.setenv("KRAFT_VERIFY_SPILL", str(tmp_path))
    real = external.External._filter

    def lose_a_run(self):
        if len(self.starts) == 5:
            os.remove(self.files.runs[0][0])
        return real(self)
    monkeypatch.setattr(external.External, "_filter", lose_a_run)
    r = _run(Model(make_config(), symmetry=False), visited="disk")
    assert r.status == STOPPED and not r.explored_all
    assert "a visited run cannot be read" in r.stop_reason and "\n" not in r.stop_reason
    assert r.states_per_level == [1, 9, 45, 151, 401]       # the levels it finished, counted


def test_a_vanished_spill_directory_stops_the_search_in_one_line(tmp_path, monkeypatch):
    import shutil

    from verifier.engines.kernel import external
    monkeypatch.setenv("KRAFT_VERIFY_SPILL", str(tmp_path))
    real = external.External._flush

    def lose_the_directory(self):
        if len(self.starts) == 5 and self.files.dir.exists():
            shutil.rmtree(self.files.dir)
        return real(self)
    monkeypatch.setattr(external.External, "_flush", lose_the_directory)
    r = _run(Model(make_config(), symmetry=False), visited="disk")
    assert r.status == STOPPED and not r.explored_all
    assert "cannot be written" in r.stop_reason and "\n" not in r.stop_reason, r.stop_reason
    assert r.states_per_level[:5] == [1, 9, 45, 151, 401]


def test_a_run_of_another_size_stops_the_search(tmp_path, monkeypatch):
    from verifier.engines.kernel import external
    monkeypatch.setenv("KRAFT_VERIFY_SPILL", str(tmp_path))
    real = external.External._filter

    def cut_a_run(self):
        if len(self.starts) == 6:
            path = self.files.runs[0][0]
            path.write_bytes(path.read_bytes()[:-16])
        return real(self)
    monkeypatch.setattr(external.External, "_filter", cut_a_run)
    r = _run(Model(make_config(), symmetry=False), visited="disk")
    assert r.status == STOPPED
    held, written = r.stop_reason.split(" holds ")[1].split(" fingerprints, not the ")
    assert int(held) == int(written.split()[0]) - 1


def _check(*args, env=None):
    return subprocess.run([sys.executable, "-m", "verifier.cli", "check", *args], capture_output=True, text=True,
                          env=env, timeout=600)


def test_check_visited_disk_reports_what_check_does(tmp_path):
    env = dict(os.environ, KRAFT_VERIFY_SPILL=str(tmp_path / "spill"))
    (tmp_path / "spill").mkdir()
    runs = {}
    for visited in ("memory", "disk"):
        p = _check("--visited", visited, "--workers", "1", "-q", "--out", str(tmp_path / visited), env=env)
        assert p.returncode == 0, p.stderr
        summary = json.loads(next((tmp_path / visited).glob("*/summary.json")).read_text())
        runs[visited] = summary
    assert runs["disk"]["counts"]["distinct_states"] == runs["memory"]["counts"]["distinct_states"] == 324_861
    assert runs["disk"]["counts"]["states_per_level"] == runs["memory"]["counts"]["states_per_level"]
    assert runs["disk"]["memory"]["disk_of"] == "visited runs and links"
    assert runs["disk"]["memory"]["disk_bytes_per_state"] == 22.0
    assert runs["disk"]["memory"]["disk_peak_bytes_per_state"] > 22.0 + 16 * 1 / 324_861
    assert runs["memory"]["memory"]["disk_peak_bytes"] == 0
    assert not list((tmp_path / "spill").iterdir())


@pytest.mark.parametrize("args, says", [
    (["--dump-graph", "CP.dot"], "--visited disk does not take --dump-graph yet"),
    (["--engine", "python"], "--visited disk is the compiled search's"),
    (["--mutants"], "--mutants does not use --visited"),
])
def test_what_visited_disk_does_not_do_is_refused_in_one_line(args, says, tmp_path):
    args = [str(tmp_path / a) if a.startswith("CP") else a for a in args]
    p = _check("--visited", "disk", *args, "--out", str(tmp_path))
    assert p.returncode == 2
    assert says in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_a_killed_searchs_directory_is_removed_by_the_next(tmp_path, monkeypatch):
    """A SIGKILL runs no cleanup: the next search beside it removes the directory of a search
    whose process is gone, and leaves a live one's."""
    monkeypatch.setenv("KRAFT_VERIFY_SPILL", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()
    orphan = tmp_path / f"kraft-verify-visited-{gone.pid}-abc"
    alive = tmp_path / f"kraft-verify-visited-{os.getpid()}-abc"
    for d in (orphan, alive):
        d.mkdir()
        (d / "level-00000.run").write_bytes(b"\0" * 16)
    _run(Model(make_config(), symmetry=False), Limits(max_depth=3), visited="disk")
    assert not orphan.exists() and alive.exists()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", ["default", "violations kept going", "first violation, a state", "symmetric",
                                  "max depth", "max states, kept going"])
def test_a_level_in_parts_answers_as_memory(case, threads, tmp_path, monkeypatch):
    """A level's table takes a share of the memory budget (LEVEL_SHARE): here 1,024 entries, so
    it is seeded with 512 fingerprints at most and every level past the first few is filtered
    in parts as its candidates fill the rest; every answer is the in-memory search's (max
    states filters whole levels: no parts there), on one thread or two."""
    from verifier.engines.kernel import external
    from verifier.engines.kernel.memory import Budget
    monkeypatch.setenv("KRAFT_VERIFY_SPILL", str(tmp_path))
    config, symmetric, limits, keep_going = CASES[case]
    model = Model(make_config(**config), symmetry=symmetric)
    memory = _run(model, limits, keep_going)
    monkeypatch.setattr(external, "LEVEL_SHARE", Budget().limit or 1 << 34)     # a byte: the least table
    seeded, parts = [], []
    seeds, part = external.External._seeds, external.External._part
    monkeypatch.setattr(external.External, "_seeds", lambda self: seeded.append(sum(map(len, seeds(self))))
                        or seeds(self))
    monkeypatch.setattr(external.External, "_part", lambda self, base: parts.append(base) or part(self, base))
    disk = _run(model, limits, keep_going, threads, visited="disk")
    assert _facts(disk) == _facts(memory)
    assert disk.disk_bytes == 22 * disk.distinct_states - 6 * memory.states_per_level[0]
    assert max(seeded) == 512 or case.startswith("first")
    # the threads look at the table after a round (a chunk of the level), one thread every 20,000 states
    assert (len(parts) > (10 if threads == 1 else 2)) == (limits.max_states is None and not case.startswith("first")), \
        len(parts)
    assert list(tmp_path.iterdir()) == []


def test_a_levels_fingerprints_are_a_file_without_a_name(tmp_path, monkeypatch):
    """FpFile: what was appended in parts reads back in any range (fewer past the end), and the
    directory never shows it (nothing to leave behind after SIGKILL)."""
    import numpy as np

    from verifier.engines.kernel.levelfiles import FpFile, LevelFiles
    from verifier.engines.kernel.memory import Budget
    monkeypatch.setenv("KRAFT_VERIFY_SPILL", str(tmp_path))
    files = LevelFiles(Budget())
    fp = FpFile(files)
    whole = np.arange(2 * 1000, dtype=np.uint64).reshape(-1, 2) * np.uint64(0x9E3779B97F4A7C15)
    for lo, hi in ((0, 1), (1, 1), (1, 700), (700, 1000)):
        fp.append(whole[lo:hi])
    assert len(fp) == 1000 and list(files.dir.iterdir()) == []
    for lo, hi in ((0, 1000), (3, 5), (990, 1200), (1000, 1001)):
        got = fp.read(lo, hi)
        assert got.flags.writeable and np.array_equal(got, whole[lo:hi])
    fp.close()
    files.close()
    assert list(tmp_path.iterdir()) == []


def test_seeds_of_the_threads_table_are_never_replaced():
    """gather.seed_shared: seeds from two threads at once count each fingerprint once, and a
    round's claim of a seed is no candidate (it was there before the round)."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    from verifier.engines.kernel.gather import seed_shared
    from verifier.engines.kernel.visited import Visited, claim
    rng = np.random.default_rng(4)
    fps = rng.integers(0, 2 ** 63, size=(60_000, 2), dtype=np.uint64)
    fps[30_000:30_100] = fps[:100]            # the same fingerprints in both halves
    table = Visited(1, slots=1 << 18, most=1 << 26, shared=True).tables[0]
    lost = np.zeros(4, dtype=np.uint8)
    with ThreadPoolExecutor(2) as pool:
        new = sum(pool.map(lambda h: seed_shared(table, h, lost), (fps[:30_000], fps[30_000:])))
    assert new == 60_000 - 100 and not lost.any()
    for i in (0, 30_050, 59_999):
        got, _ = claim(table, fps[i, 0], fps[i, 1], np.uint64(5000), np.uint64(4000), lost)
        assert got == 0
    assert not lost.any()


def test_a_merge_copies_at_most_a_share_of_the_runs_and_loses_no_fingerprint(tmp_path, monkeypatch):
    """levelfiles._add: the newest two runs merge while the older is at most MERGE times the
    newer and their copy at most a share of all runs (MERGE_SHARE; the floor lowered here to
    see it): a merge's copy sits beside the runs a checkpoint still names, the disk's peak. Every
    fingerprint written is in exactly one run, sorted, and the peak sampled holds the copy."""
    import numpy as np

    from verifier.core.runs import read_run
    from verifier.engines.kernel import levelfiles
    from verifier.engines.kernel.memory import Budget
    monkeypatch.setenv("KRAFT_VERIFY_SPILL", str(tmp_path))
    monkeypatch.setattr(levelfiles, "MERGE_FLOOR", 100)
    files = levelfiles.LevelFiles(Budget())
    rng, written, copies = np.random.default_rng(3), [], []
    merged_before = files.merges
    for level, n in enumerate([40, 300, 900, 1500, 1200, 800, 400, 150, 60, 20, 5], 1):
        run = rng.integers(0, 1 << 63, (n, 2), dtype=np.uint64)
        run = run[np.lexsort((run[:, 1], run[:, 0]))]
        written.append(run)
        files.write_level(level, run)
        total = sum(len(r) for r in written)
        if files.merges > merged_before:          # the newest run is a merge's copy: within the share
            copies.append(16 * (total + files.runs[-1][1]))    # every run, and the copy beside them
            assert files.runs[-1][1] <= max(100, total // levelfiles.MERGE_SHARE)
        merged_before = files.merges
    assert files.merges > 0 and len(files.runs) > 2       # some merged, and not into one
    held = np.concatenate([read_run(str(p)) for p, _ in files.runs])
    want = np.concatenate(written)
    assert len(held) == len(want)
    assert {tuple(f) for f in held.tolist()} == {tuple(f) for f in want.tolist()}
    for p, n in files.runs:
        r = read_run(str(p))
        assert len(r) == n and (np.lexsort((r[:, 1], r[:, 0])) == np.arange(n)).all()
    assert files.peak >= max(copies)
    files.close()
