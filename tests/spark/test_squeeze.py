"""Squeezed records (spark/rows.py): a kept chunk, or a block on a disk, is the same rows in
about a third of the bytes, read back exactly; a squeezed record that is torn, or whose frame claims
more than its rows can take, is BadData, never a crash or a silent short read."""
from __future__ import annotations

import numpy as np
import pytest
import zstandard

import spark.rows as R
from spark import store
from tests.spark.test_rows import a_level, job
from verifier.core.values import BadData


def a_record(magic: bytes, n: int = 400, squeeze: bool = False) -> tuple:
    rng = np.random.default_rng(11)
    rows = rng.integers(0, 3, size=(n, 40), dtype=np.int32)     # small fields, as a level's rows
    rows[:, 7] = rng.integers(0, 40_000, size=n)
    rows[:, 0] = rng.integers(0, 2, size=n)                      # the controller column
    fps = rng.integers(0, 2**64, size=(n, 2), dtype=np.uint64)
    parents = rng.integers(0, 2**64, size=(n, 2), dtype=np.uint64)
    labels = rng.integers(-1, 19, size=(n, R.LABEL), dtype=np.int32)
    nths = rng.integers(0, 300, size=n) if magic == R.BLOCK else None
    data = R.encode(magic, fps, parents, labels, rows, 0, ['{"a":1}', '{"b":2}'], nths=nths, squeeze=squeeze)
    return data, (fps, parents, labels, rows, nths)


@pytest.mark.parametrize("magic", [R.PART, R.BLOCK])
def test_a_squeezed_record_reads_back_as_the_raw_one_in_fewer_bytes(magic):
    raw, _ = a_record(magic)
    squeezed, (fps, parents, labels, rows, nths) = a_record(magic, squeeze=True)
    assert squeezed.startswith(R.SQUEEZED[magic]) and raw.startswith(magic)
    assert len(squeezed) < len(raw) * 2 // 3
    a, b = R.Rows(raw, magic, 40, 0), R.Rows(squeezed, magic, 40, 0)
    assert b.squeezed and not a.squeezed
    for rec in (a, b):
        assert (rec.rows == rows).all() and (rec.fps == fps).all() and (rec.parents == parents).all()
        assert (rec.labels == labels).all() and rec.ctrls == ['{"a":1}', '{"b":2}']
        assert magic == R.PART or (rec.nths == nths).all()
    if magic == R.PART:       # the manifest's measure: the same states and sum, the sha256 of the bytes kept
        assert store.chunk_measure(squeezed)[:2] == store.chunk_measure(raw)[:2] == [400, f"{R.fp_sum(fps):x}"]
        assert store.chunk_measure(squeezed)[2] != store.chunk_measure(raw)[2]


def _reframed(data: bytes, frame: bytes, n: int = 400) -> bytes:
    return data[:len(R.ZPART) + 16 + 32 * n] + frame


@pytest.mark.parametrize("damage", ["cut", "garbage", "no size", "too large", "short", "raw magic"])
def test_a_torn_or_lying_squeezed_record_is_bad_data(damage):
    data, _ = a_record(R.PART, squeeze=True)
    head = len(R.ZPART) + 16 + 32 * 400
    if damage == "cut":
        data = data[:-7]
    elif damage == "garbage":
        data = _reframed(data, b"\x28\xb5\x2f\xfd" + b"\x00" * 40)
    elif damage == "no size":                 # a frame that does not say what it decodes to
        tail = zstandard.ZstdDecompressor().decompress(data[head:])
        data = _reframed(data, zstandard.ZstdCompressor(level=1, write_content_size=False).compress(tail))
    elif damage == "too large":               # 128 MB of zeros: more than 400 rows 40 wide can take (67 MB)
        data = _reframed(data, zstandard.ZstdCompressor(level=1).compress(b"\x00" * (1 << 27)))
    elif damage == "short":                   # a whole frame of less than the rows it must hold
        tail = zstandard.ZstdDecompressor().decompress(data[head:])
        data = _reframed(data, zstandard.ZstdCompressor(level=1).compress(tail[:-50]))
    elif damage == "raw magic":               # a squeezed body under the raw record's magic
        data = R.PART + data[len(R.ZPART):]
    said = {"no size": "does not say its size", "too large": "says too much"}.get(damage)
    with pytest.raises(BadData, match=said):    # those two refused before anything is decoded
        R.Rows(data, R.PART, 40, 0)
    assert store.chunk_measure(data) is None


def test_an_owner_makes_the_same_level_from_blocks_squeezed_on_a_disk_or_raw_in_fast(tmp_path):
    """An expand task told to squeeze its blocks (a disk short of room: Exchange.squeeze) does;
    one told not to (FAST, or a disk with room) writes them raw. The owner's chunks are the
    same bytes either way, and squeezed."""
    j = job()
    chunks = [(v[1], v[2]) for out in a_level(j) for _, v in out if v[0] == "C"]     # level 1's
    assert chunks and all(data.startswith(R.ZPART) for _, data in chunks)
    ways = {"disk": (str(tmp_path / "disk"), 0, None, True),
            "fast": (str(tmp_path / "fast"), 0, str(tmp_path / "fallback"), False)}
    levels, magics = {}, {}
    for way, spill in ways.items():
        sent = [(o, v) for o, v in j.expand(frozenset(), chunks, spill) if v[0] == "X"]
        from spark.exchange import blocks
        magics[way] = {bytes(b[:8]) for _, v in sent for name in v[1] for b in blocks(name)}
        levels[way] = [[("M", v[1][:4]) if v[0] == "M" else v      # all but the task's seconds
                        for _, v in j.own(frozenset(), p, [(o, v) for o, v in sent if o == p])]
                       for p in range(j.partitions)]
    assert magics == {"disk": {R.ZBLOCK}, "fast": {R.BLOCK}}
    assert levels["disk"] == levels["fast"]
    assert any(v[0] == "C" for part in levels["disk"] for v in part)


@pytest.mark.parametrize("kept", ["files", "store"])
def test_a_run_squeezes_the_levels_it_keeps_in_a_store_and_keeps_links_only_in_its_own_files(spark_session, tmp_path,
                                                                                            kept):
    """spark/engine.py's rule: a local master's level files with no checkpoint hold links only
    (they are expanded from memory, spark/chain.py, and read again only by a trace's walk); a
    checkpoint's store keeps squeezed links of every level and, beside them, the squeezed
    chunks with rows of the last two. Read back from where each run keeps its levels, as each
    level is committed."""
    import glob
    import os

    import invariants as I
    import spark.engine as SE
    from specs import Model, make_config
    from spark.exchange import Exchange, blocks
    from verifier.core.settings import Limits, Options, Settings
    opened, roots, magics = Exchange.open.__func__, [], set()

    def spy_open(cls, sc):
        ex = opened(cls, sc)
        roots.extend([ex.root] if ex else [])
        return ex

    def on_level(level):
        if kept == "store":
            from spark.seqfile import records
            for where in ("levels", "rows"):
                names = glob.glob(str(tmp_path / "ck" / where / f"{level:05d}" / "part-*"))
                magics.update((where, bytes(v[:8])) for n in names for _, v in records(open(n, "rb").read()))
        elif kept == "files":
            names = glob.glob(os.path.join(roots[0], "levels", f"{level:05d}", "o*"))
            magics.update(bytes(b[:8]) for n in names for b in blocks(n))
    cfg = make_config("kafka", replicas=[1, 2], bounds={"records": 1, "fences": 1, "lossy_crashes": 0})
    store = None
    if kept == "store":
        from spark.hadoopfs import open_store
        from spark.store import LevelStore
        from spark.engine import identity
        store = LevelStore(open_store(spark_session, str(tmp_path / "ck")),
                           identity(Model(cfg, symmetry=False), I.REGISTRY, Options(keep_going=True), "kernel"))
        store.claim(False)
    levels = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Exchange, "open", classmethod(spy_open))
        res = SE.run(Model(cfg, symmetry=False), I.REGISTRY,
                     Settings(limits=Limits(max_depth=5), options=Options(keep_going=True),
                              knobs=SE.Knobs(session=spark_session, partitions=2, driver_levels=0, tasks="kernel",
                                             store=store, rows_every=0,
                                             on_level=lambda lv: (levels.append(lv), on_level(lv)))))
    assert res.distinct_states > 0 and levels
    if kept == "files":
        assert magics == {R.LINKS}
    else:                                # links, and beside them the chunks with rows, both squeezed
        assert magics == {("levels", R.ZLINKS), ("rows", R.ZPART)}
        assert sorted(os.listdir(tmp_path / "ck" / "rows")) == ["00004", "00005"]   # the last two levels
