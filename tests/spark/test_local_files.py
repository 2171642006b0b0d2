"""The kernel path's visited runs and levels as files on a local master (spark/local_files.py):
an owner's level and run are written whole, the newest runs merged by the compaction rule, a
retried own task leaves the same files and finds the runs its level started from, and the
level files are what a violation's trace is walked back through."""
import os

import numpy as np
import pytest

from spark.local_files import FileLevels, Files, owned, read_run

RNG = np.random.default_rng(17)


def fps(n: int) -> np.ndarray:
    out = RNG.integers(0, 2**64, size=(n, 2), dtype=np.uint64)
    return out[np.lexsort((out[:, 1], out[:, 0]))]


def own_level(files: Files, owner: int, level: int, run: np.ndarray, chunks: list) -> tuple:
    """What kernel_tasks._level_part yields for an owner, through `owned`: (meta, runs)."""
    parts = [(owner, ("M", ("metas", {}, {}, [], 0.5))), (owner, ("F", run.tobytes()))] + \
            [(owner, ("C", f"{owner:05d}-{c:06d}", data)) for c, data in enumerate(chunks)]
    (got,) = list(owned(files, owner, level, parts))
    assert got[0] == owner and got[1][0] == "M"
    return got[1][1][:5], got[1][1][5]


def listing(files: Files) -> list:
    return sorted(os.listdir(os.path.join(files.root, "visited")))


def test_runs_merge_while_the_newer_holds_half_the_older_and_only_settled_plans_remove_files(tmp_path):
    files = Files(str(tmp_path), 2)
    files.start(3, [fps(100), fps(0)])
    older = read_run(files.run(0, 0, 3)).copy()
    small = fps(20)                                       # under half of 100: a run of its own
    _, runs = own_level(files, 0, 4, small, [b"c0"])
    assert runs == [(0, 3, 100), (4, 4, 20)]
    files.settle([runs, files.runs[1]])
    big = fps(70)                                         # 70 >= 20 / 2, then 90 >= 100 / 2: one run
    meta, runs = own_level(files, 0, 5, big, [b"c1", b"c2"])
    assert meta == ("metas", {}, {}, [], 0.5) and runs == [(0, 5, 190)]
    assert "o00000-00005-00005" not in listing(files)     # merged in the task: gone with it
    assert {"o00000-00000-00003", "o00000-00004-00004"} <= set(listing(files))   # a retry's inputs
    both = np.concatenate([older, small, big])
    assert (read_run(files.run(0, 0, 5)) == both[np.lexsort((both[:, 1], both[:, 0]))]).all()
    files.settle([runs, files.runs[1]])
    assert listing(files) == ["o00000-00000-00005", "o00001-00000-00003"]
    assert [bytes(d) for _, d in files.chunks(5, 0)] == [b"c1", b"c2"]


def test_a_retried_own_task_writes_the_same_files_from_the_same_plan(tmp_path):
    files = Files(str(tmp_path), 1)
    files.start(2, [fps(40)])
    run, chunks = fps(30), [b"x" * 1000, b"y"]
    first = own_level(files, 0, 3, run, chunks)
    before = {n: open(os.path.join(files.root, "visited", n), "rb").read() for n in listing(files)}
    level = open(files.level(3, 0), "rb").read()
    assert own_level(files, 0, 3, run, chunks) == first   # the plan still names the level's runs
    assert {n: open(os.path.join(files.root, "visited", n), "rb").read() for n in listing(files)} == before
    assert open(files.level(3, 0), "rb").read() == level
    assert not [n for n in os.listdir(os.path.dirname(files.level(3, 0))) if ".tmp-" in n]


def test_the_level_files_are_the_levels_a_trace_is_walked_through(tmp_path):
    files = Files(str(tmp_path), 2)
    files.start(0, [fps(1), fps(1)])
    levels = FileLevels(files)
    for level in (1, 2):
        own_level(files, 1, level, fps(3), [b"level %d" % level, b"more"])
    assert levels.read_owner(2, 1) == [("00001-000000", b"level 2"), ("00001-000001", b"more")]
    levels.drop_from(2)
    assert levels.read_owner(1, 1)[0] == ("00001-000000", b"level 1")
    with pytest.raises(RuntimeError, match="gone"):
        levels.read_owner(2, 1)


def test_a_torn_run_is_refused_not_read_short(tmp_path):
    path = tmp_path / "run"
    path.write_bytes(b"\0" * 24)
    with pytest.raises(RuntimeError, match="torn"):
        read_run(str(path))
