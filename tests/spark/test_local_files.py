"""The kernel path's visited runs and levels as files on a local master (spark/local_files.py):
an owner's level and run are written whole, the newest runs merged by the compaction rule, a
retried own task leaves the same files and finds the runs its level started from, and the
level files are what a violation's trace is walked back through."""
import json
import os
from collections import Counter

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


@pytest.mark.parametrize("store, rows", [(False, False), (True, True), (True, False)])
def test_a_retried_chained_task_writes_the_same_level_runs_and_next_blocks(tmp_path, store, rows):
    """spark/chain.py's task owns its part of a level and expands it into the next level's
    blocks; run again from the same blocks and plan (a retry), it leaves the same bytes in
    every file it writes, and its blocks hold the successors of the level's rows. For a store
    (its part's rows kept as a file) the first attempt removes its blocks once its part is
    made, and the retry starts from that part; on a level whose rows the store does not keep
    (--checkpoint-every), the task keeps its blocks as without a store."""
    import invariants as I
    import spark.rows as R
    from spark.chain import task
    from spark.exchange import blocks
    from spark.kernel_tasks import KernelJob, _side
    from specs import Model, make_config
    j = KernelJob(Model(make_config("kafka", replicas=[1, 2, 3], bounds={"lossy_crashes": 1}), symmetry=False),
                  I.REGISTRY, True, 2)
    j.links, j.rows = True, store
    roots = sorted((fp, c) for fp, (_, c) in j.roots(j.model()).items())
    level0 = [kv for p in range(2) for kv in j.seed(p, roots)]
    files = Files(str(tmp_path), 2)
    files.start(0, [np.array([(fp >> 64, fp & (2**64 - 1)) for fp, _ in roots if j.owner(fp) == p],
                             dtype=np.uint64).reshape(-1, 2) for p in range(2)])
    names: dict = {}
    for owner, value in j.expand(frozenset(), [(v[1], v[2]) for _, v in level0 if v[0] == "C"],
                                 (str(tmp_path / "x1"), 0, None, False)):
        if value[0] == "X":
            names[owner] = value[1]

    def attempt(owner: int) -> tuple:
        ((got, (meta, (per_owner, stats))),) = list(task(j, frozenset(), owner, names.get(owner, []), files, 1,
                                                          (str(tmp_path / "x2"), None, False), rows))
        written = {p: open(p, "rb").read() for p in sorted(str(f) for f in tmp_path.rglob("*") if f.is_file())
                   if "/x1/" not in p}
        return got, meta[:4] + meta[5:], per_owner, stats[:2], written      # but the seconds

    side = _side(j)
    rows_by_fp = {}                                       # level 1's candidates, by fingerprint
    for name in (n for more in names.values() for n in more):
        for b in blocks(name):
            blk = side.read(b, R.BLOCK)
            for fp, row in zip(blk.fps, side.rows_of(blk)):
                rows_by_fp[R.as_int(*fp)] = row.copy()
    merges = 0
    for owner in range(2):
        first = attempt(owner)
        assert all(os.path.exists(name) for name in names.get(owner, [])) is not rows    # read, then removed
        if first[1][4] != files.runs[owner]:               # merged: the plan's run goes once the part is noted
            merges += 1
            assert [tuple(r[:2]) for r in first[1][4]] == [(0, 1)]
            assert os.path.exists(files.run(owner, 0, 0)) is not rows
        again = attempt(owner)
        assert first == again and first[0] == owner
        assert os.path.exists(files.level(1, owner) + ".meta") is rows
        assert os.path.exists(files.rows(1, owner)) is rows
        assert not [p for p in first[4] if ".tmp-" in p]
        level = [R.Rows(b, R.PART, links=True) for b in blocks(files.level(1, owner))]
        assert level and all(rec.links for rec in level)      # no checkpoint: links only
        parents = Counter(R.as_int(*fp) for more in first[2].values() for name in more for b in blocks(name)
                          for fp in R.Rows(b, R.BLOCK).parents)
        want = {R.as_int(*fp): side.k.successor_rows(rows_by_fp[R.as_int(*fp)]) for rec in level for fp in rec.fps}
        assert dict(parents) == {fp: n for fp, n in want.items() if n}    # each new state expanded, whole
        assert sum(parents.values()) == first[3][0][0] > 0    # the counts say what the blocks hold
    assert merges == 2                                     # level 1 outgrows level 0 for both owners


def test_a_levels_copy_to_the_store_runs_beside_the_next_job_and_the_manifest_waits_for_it(spark_session, tmp_path):
    """spark/chain.Copying: the copy of level L runs while the job of L + 1 does, and no saved
    manifest names a level whose copy is not whole (a run killed in between resumes from the
    level before); on_level fires once a level is saved; the counts are a run's without a store."""
    import threading
    import time as clock

    import invariants as I
    import spark.chain as C
    import spark.engine as SE
    import spark.store as S
    from specs import Model, make_config
    from spark.engine import identity
    from spark.hadoopfs import open_store
    from verifier.core.settings import Limits, Options, Settings
    cfg = make_config("kafka", replicas=[1, 2], bounds={"records": 1, "fences": 1, "lossy_crashes": 0})
    model = Model(cfg, symmetry=False)
    events, copied = [], set()
    copy, save, estimate = S.HadoopLevels.copy, S.LevelStore.save, C._estimate

    def slow_copy(self, level, chunks_of, scratch, rows=False):
        clock.sleep(0.3)                 # slower than a small level's job: the next job starts first
        copy(self, level, chunks_of, scratch, rows)
        if rows:
            copied.add(level)
            events.append(("copied", level, threading.current_thread().name))

    def checked_save(self, manifest):
        chained = [m["level"] for m in manifest["levels"] if m.get("links")]
        assert set(chained) <= copied, f"the manifest names {chained} with only {sorted(copied)} copied"
        events.append(("saved", len(manifest["levels"]) - 1))
        return save(self, manifest)

    def runs(run, level, stats):
        events.append(("job", level + 1))
        return estimate(run, level, stats)

    def search(store, on_level=None):
        return SE.run(model, I.REGISTRY, Settings(limits=Limits(max_depth=6), options=Options(keep_going=True),
                      knobs=SE.Knobs(session=spark_session, partitions=2, driver_levels=0, tasks="kernel",
                                     store=store, on_level=on_level, rows_every=0)))
    plain = search(None)
    from spark.store import LevelStore
    store = LevelStore(open_store(spark_session, str(tmp_path / "ck")),
                       identity(model, I.REGISTRY, Options(keep_going=True), "kernel"))
    store.claim(False)
    fired = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(S.HadoopLevels, "copy", slow_copy)
        mp.setattr(S.LevelStore, "save", checked_save)
        mp.setattr(C, "_estimate", runs)
        res = search(store, on_level=lambda lv: fired.append((lv, max((e[1] for e in events if e[0] == "saved"),
                                                                      default=-1))))
    assert (res.distinct_states, res.states_per_level) == (plain.distinct_states, plain.states_per_level)
    assert copied and all(name.startswith("kraft-verify-store-copy") for kind, _, *name in events
                          if kind == "copied" for name in name)
    # level L's copy ended after the job that owns L + 1 began
    ends = {e[1]: i for i, e in enumerate(events) if e[0] == "copied"}
    overlapped = [lv for lv, end in ends.items() if ("job", lv + 1) in events and events.index(("job", lv + 1)) < end]
    assert overlapped, events
    assert fired and all(level <= saved for level, saved in fired)       # a level is saved before on_level
    assert [lv for lv, _ in fired] == list(range(1, len(fired) + 1))


# CI: rows every level, and rows once with the disk short (17-22 s each); nightly: rows once
@pytest.mark.parametrize("every, short", [(0, False), pytest.param(1e9, False, marks=pytest.mark.nightly),
                                          (1e9, True)])
def test_rows_go_to_the_store_every_so_often_and_a_resume_goes_on_from_the_last_level_that_has_them(
        spark_session, tmp_path, every, short, monkeypatch):
    """--checkpoint-every on a local master: every level's links go to the store, its rows
    only once `every` seconds have passed since the last level whose rows went (the first
    level on Spark always); the manifest names the rows of at most two levels, and a resume
    goes on from the last of them to the counts of a run never stopped. The run's disk figure
    is the checkpoint's bytes. `short`: the disk short of room for the next level's blocks, the
    tasks make their rows anyway (to drop their input as they read it) and the store still
    keeps only the rows it is due."""
    import invariants as I
    import spark.engine as SE
    from specs import Model, make_config
    from spark.engine import identity
    from spark.hadoopfs import open_store
    from spark.store import LevelStore
    from verifier.core.settings import Limits, Options, Settings
    cfg = make_config("kafka", replicas=[1, 2], bounds={"records": 1, "fences": 1, "lossy_crashes": 0})
    model = Model(cfg, symmetry=False)

    def search(depth, resume=False, store=None):
        if store is not None:
            store.claim(resume)
        return SE.run(model, I.REGISTRY, Settings(limits=Limits(max_depth=depth), options=Options(keep_going=True),
                      knobs=SE.Knobs(session=spark_session, partitions=2, driver_levels=0, tasks="kernel",
                                     store=store, resume=resume, rows_every=every)))

    def opened():
        return LevelStore(open_store(spark_session, str(tmp_path / "ck")),
                          identity(model, I.REGISTRY, Options(keep_going=True), "kernel"))
    whole = search(None)
    if short:
        from spark.exchange import Exchange
        monkeypatch.setattr(Exchange, "squeeze", lambda self, level: True)
    first = search(6, store=opened())
    on_disk = sum(f.stat().st_size for f in (tmp_path / "ck").rglob("*") if f.is_file())
    assert first.disk_bytes == on_disk > 0          # the checkpoint's bytes are the run's figure
    levels = json.loads((tmp_path / "ck" / "manifest.json").read_text())["levels"]
    with_rows = [m["level"] for m in levels if "rows" in m]
    assert len(levels) == 7 and all(m.get("links") for m in levels[1:])
    assert with_rows == ([5, 6] if every == 0 else [1])
    assert sorted(os.listdir(tmp_path / "ck" / "rows")) == [f"{lv:05d}" for lv in with_rows]
    again = search(None, resume=True, store=opened())
    assert again.states_per_level == whole.states_per_level and again.transitions == whole.transitions
    assert again.distinct_states == whole.distinct_states


def test_a_merge_asks_the_disk_budget_for_its_run_before_mapping_it(tmp_path, monkeypatch):
    """A merged run is written through a map, where a full disk is a SIGBUS that kills the
    worker, not an OSError the run reports: the budget is asked first (spark/exchange.room)."""
    import spark.local_files as F
    asked = []
    monkeypatch.setattr(F, "room", lambda where, more: asked.append((where, more)))
    files = Files(str(tmp_path), 1)
    files.start(0, [fps(10)])
    asked.clear()
    _, runs = own_level(files, 0, 1, fps(8), [b"c"])
    files.settle([runs])
    visited = os.path.join(files.root, "visited")
    assert asked == [(visited, 8 * 16), (visited, 18 * 16)]     # the level's run, then the merged one

    def full(where, more):
        raise OSError(28, "disk budget: test")
    monkeypatch.setattr(F, "room", lambda where, more: full(where, more) if more == 30 * 16 else None)
    with pytest.raises(OSError, match="disk budget"):
        own_level(files, 0, 2, fps(12), [b"d"])
    assert listing(files) == ["o00000-00000-00001", "o00000-00002-00002"]   # the plan, and the run not merged
