"""The kernel path's exchange of blocks by file on a local master (spark/exchange.py): what an
expand task writes is what its owner reads, a retried task leaves the same files, a torn or
removed file is refused, a dead driver's directory is swept, and a run on local[N] really
sends its blocks so."""
import os
import subprocess
import sys

import pytest

import invariants as I
import spark.engine as SE
from spark.exchange import PREFIX, Exchange, Writer, blocks, sweep
from specs import Model, make_config
from verifier.core.settings import Limits, Options, Settings
from verifier.core.values import BadData


def written(where, task, per_owner: dict) -> dict:
    """owner -> its one file's name."""
    w = Writer(str(where), task)
    for owner, items in per_owner.items():
        for b in items:
            w.add(owner, b)
    out = w.close()
    assert all(len(names) == 1 for names in out.values())
    return {owner: names[0] for owner, names in out.items()}


def test_an_owner_reads_back_each_block_in_order(tmp_path):
    names = written(tmp_path, 3, {0: [b"a" * 10, b"", b"bc"], 1: [b"x"]})
    assert sorted(names) == [0, 1] and os.path.basename(names[0]) == "o00000-t00003"
    assert [bytes(b) for b in blocks(names[0])] == [b"a" * 10, b"", b"bc"]
    assert [bytes(b) for b in blocks(names[1])] == [b"x"]
    assert not [n for n in os.listdir(tmp_path) if ".tmp" in n]


def test_a_retried_task_replaces_its_files_with_the_same_bytes_and_an_aborted_one_leaves_none(tmp_path):
    slow = Writer(str(tmp_path), 0)          # an attempt still writing while another one ends
    slow.add(1, b"one")
    first = written(tmp_path, 0, {1: [b"one", b"two"]})
    slow.add(1, b"two")
    assert [bytes(b) for b in blocks(first[1])] == [b"one", b"two"]
    assert slow.close() == {1: [first[1]]}
    before = open(first[1], "rb").read()
    assert written(tmp_path, 0, {1: [b"one", b"two"]}) == first and open(first[1], "rb").read() == before
    w = Writer(str(tmp_path), 1)
    w.add(0, b"half")
    w.abort()
    assert sorted(os.listdir(tmp_path)) == ["o00001-t00000"]


def test_a_full_fast_directory_sends_the_rest_of_a_tasks_blocks_to_the_fallback(tmp_path, monkeypatch):
    """/dev/shm filled up under a task (by another program): the blocks written there stay, cut
    at the last whole one, and the rest go to the disk; the owner reads both files in order."""
    import builtins
    import errno
    fast, disk = tmp_path / "fast", tmp_path / "disk"
    real_open = builtins.open

    class Full:                           # a file in a directory that takes 20 bytes more
        def __init__(self, f):
            self.f, self.room = f, 20

        def write(self, data):
            if len(data) > self.room:
                self.f.write(bytes(data[:self.room]))
                self.f.flush()
                raise OSError(errno.ENOSPC, "No space left on device")
            self.room -= len(data)
            return self.f.write(data)

        def __getattr__(self, name):
            return getattr(self.f, name)

    def opening(path, *args, **kwargs):
        f = real_open(path, *args, **kwargs)
        return Full(f) if str(path).startswith(str(fast)) else f

    monkeypatch.setattr(builtins, "open", opening)
    w = Writer(str(fast), 2, str(disk))
    for owner, block in [(0, b"a" * 4), (1, b"b" * 4), (0, b"c" * 30), (1, b"d"), (2, b"e")]:
        w.add(owner, block)
    out = w.close()
    monkeypatch.setattr(builtins, "open", real_open)
    assert {o: [os.path.dirname(n) for n in names] for o, names in out.items()} == \
        {0: [str(fast), str(disk)], 1: [str(fast), str(disk)], 2: [str(disk)]}
    assert [[bytes(b) for n in names for b in blocks(n)] for names in out.values()] == \
        [[b"a" * 4, b"c" * 30], [b"b" * 4, b"d"], [b"e"]]
    assert not [n for d in (fast, disk) for n in os.listdir(d) if ".tmp" in n]


def test_blocks_go_to_the_fast_directory_only_when_the_levels_estimate_fits(tmp_path, monkeypatch):
    import spark.exchange as EX
    monkeypatch.setattr(EX, "FAST", str(tmp_path / "shm"))
    (tmp_path / "shm").mkdir()
    monkeypatch.setattr(EX, "available", lambda: 3 * 1000 * EX.PER_STATE)     # room for 800 states' blocks
    ex = Exchange.open(_Sc("local[2]", str(tmp_path / "disk")))
    room = {"bytes": 4 * 900 * EX.PER_STATE * 5 // 4 - 1}   # the disk: short of 4x level 2's estimate
    monkeypatch.setattr(EX, "free", lambda path: room["bytes"])
    assert os.path.dirname(ex.level(1, 700)) == ex.fast and ex.fallback(1) == os.path.join(ex.root, "00001")
    assert os.path.dirname(ex.level(2, 900)) == ex.root and ex.fallback(2) is None
    assert not ex.squeeze(1) and ex.squeeze(2)      # FAST's stay raw; a disk short of room squeezes
    room["bytes"] += 1
    assert os.path.dirname(ex.level(4, 900)) == ex.root and not ex.squeeze(4)
    written(ex.level(1), 0, {0: [b"x" * 7000]})           # measured: 10 bytes a state expanded
    ex.drop(1)
    assert ex.per_state == 10 and os.path.dirname(ex.level(3, 40_000)) == ex.fast
    # placed by an estimate (spark/chain.py), measured once whole, before their owners remove them
    (name,) = written(ex.level(5, 100), 0, {1: [b"y" * 3992]}).values()
    ex.expanded(5, 200)
    os.unlink(name)
    ex.drop(5)
    assert ex.per_state == 20
    ex.close()
    assert not os.path.exists(ex.fast) and not os.path.exists(ex.root)


@pytest.mark.parametrize("cut", [1, 9, 12])
def test_a_torn_file_is_bad_data(tmp_path, cut):
    name = written(tmp_path, 0, {0: [b"abcdefgh"]})[0]
    data = open(name, "rb").read()
    with open(name, "wb") as f:
        f.write(data[:len(data) - cut])
    with pytest.raises(BadData, match="torn"):
        blocks(name)


def test_a_file_removed_with_its_level_is_one_error_not_a_silent_empty_block(tmp_path):
    with pytest.raises(RuntimeError, match="is gone"):
        blocks(str(tmp_path / "o00000-t00000"))


def test_the_directories_of_dead_drivers_are_swept_and_live_ones_kept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    gone, alive = tmp_path / f"{PREFIX}{dead}-abc", tmp_path / f"{PREFIX}{os.getpid()}-def"
    other = tmp_path / "kraft-verify-exchange-notapid-x"
    for d in (gone, alive, other):
        (d / "00001").mkdir(parents=True)
    sweep(str(tmp_path))
    assert not gone.exists() and alive.exists() and other.exists()


class _Conf:
    def __init__(self, local_dir):
        self.local_dir = local_dir

    def get(self, key, default=None):
        return self.local_dir if key == "spark.local.dir" else default


class _Sc:
    def __init__(self, master, local_dir=None):
        self.master, self.conf = master, _Conf(local_dir)

    def getConf(self):
        return self.conf


def test_only_a_local_master_exchanges_by_file_and_the_directory_goes_with_the_run(tmp_path, monkeypatch):
    import spark.exchange as EX
    monkeypatch.setattr(EX, "FAST", str(tmp_path / "shm"))                # not the machine's /dev/shm
    (tmp_path / "shm").mkdir()
    assert Exchange.open(_Sc("spark://host:7077", str(tmp_path))) is None
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(tmp_path / "env"))        # Spark's order: the variable first
    env = Exchange.open(_Sc("local[2]", str(tmp_path)))
    assert os.path.dirname(env.root) == str(tmp_path / "env")
    env.close()
    monkeypatch.delenv("SPARK_LOCAL_DIRS")
    ex = Exchange.open(_Sc("local[2]", f"{tmp_path},/elsewhere"))
    assert os.path.dirname(ex.root) == str(tmp_path) and os.stat(ex.root).st_mode & 0o077 == 0
    assert os.stat(ex.fast).st_mode & 0o077 == 0
    written(ex.level(1), 0, {0: [b"b"]})
    ex.drop(1)
    assert os.listdir(ex.root) == [] and os.listdir(ex.fast) == []
    ex.close()
    assert not os.path.exists(ex.root) and not os.path.exists(ex.fast)
    assert os.listdir(tmp_path / "shm") == []


def test_a_local_run_sends_its_blocks_by_file_and_leaves_no_directory(spark_session, monkeypatch, tmp_path):
    """Blocks in FAST go raw; with FAST out of reach and the disk short of room they go to the
    disk directory squeezed (spark/rows.py), and the run counts the same states, level by level.
    Either way they name controller values by digest, the texts in the run's catalogue."""
    import spark.exchange as EX
    from spark import rows as R
    drop, opened = Exchange.drop, Exchange.open.__func__
    cfg = make_config("kafka", replicas=[1, 2], bounds={"records": 1, "fences": 1, "lossy_crashes": 0})
    runs = {}
    for way in ("fast", "disk"):
        seen, roots, magics, catalogues = [], [], set(), []

        def spy_drop(self, level):
            names = sorted(os.listdir(self.level(level)))
            seen.append(names)
            magics.update(bytes(b[:8]) for n in names for b in blocks(os.path.join(self.level(level), n)))
            catalogues.append(len(os.listdir(os.path.join(self.root, "ctrls"))))   # the texts beside them
            drop(self, level)

        def spy_open(cls, sc):
            ex = opened(cls, sc)
            roots.extend(d for d in (ex.root, ex.fast) if d)
            return ex

        monkeypatch.setattr(Exchange, "drop", spy_drop)
        monkeypatch.setattr(Exchange, "open", classmethod(spy_open))
        if way == "disk":             # FAST out of reach, and the disk short of room
            monkeypatch.setattr(EX, "FAST", str(tmp_path / "no-such-dir"))
            monkeypatch.setattr(EX, "free", lambda path: 0)
        notes = []
        res = SE.run(Model(cfg, symmetry=False), I.REGISTRY,
                     Settings(limits=Limits(max_depth=6), options=Options(keep_going=True),
                              knobs=SE.Knobs(session=spark_session, partitions=2, driver_levels=0, tasks="kernel")),
                     progress=lambda p: notes.append(p.note))
        assert res.distinct_states > 0 and any("exchange=files" in (n or "") for n in notes)
        assert len(seen) == 6 and all(names and all(n.startswith("o0000") for n in names) for names in seen)
        assert roots and not any(os.path.exists(d) for d in roots)
        assert magics == ({R.DBLOCK} if way == "fast" else {R.ZDBLOCK})    # FAST or a disk with room: raw
        assert catalogues and all(catalogues)             # values named by digest, their texts published
        runs[way] = (res.states_per_level, res.transitions)
    assert runs["fast"] == runs["disk"]


def test_a_levels_rows_are_due_when_its_job_would_end_past_the_interval():
    """spark/chain.due: the first level on Spark keeps its rows; later, a level whose job, as
    long as the last one, would end --checkpoint-every seconds or more after the last rows
    kept (part 2 of the billion run began a ten-minute level two minutes short of the mark and
    kept none: a kill then went back 45 minutes)."""
    from spark.chain import due
    assert due(5.0, None, 0.0, 1800)                    # the first level on Spark
    assert not due(1000.0, 0.0, 600.0, 1800)            # ends at 1,600 s: not yet
    assert due(1300.0, 0.0, 600.0, 1800)                # would end at 1,900 s: this one
    assert due(1800.0, 0.0, 0.0, 1800) and not due(1799.0, 0.0, 0.0, 1800)
    assert due(0.0, 0.0, 0.0, 0)                        # --checkpoint-every 0: every level
    assert not due(10.0**6, 0.0, 10.0**6, 1e9)          # 1e9 s: only the first
