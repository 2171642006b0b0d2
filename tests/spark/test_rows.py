"""spark-check's kernel records (spark/rows.py) and the executors' handling of them
(spark/kernel_tasks.py), without Spark: the bytes are data, read back exactly or refused."""
from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

import invariants as I
import spark.rows as R
from spark.kernel_tasks import KernelJob, _side, _Side, merge
from verifier.core.runs import by_fp
from specs import Model, make_config
from verifier.core.values import BadData

CFG = make_config("kafka", replicas=[1, 2, 3], bounds={"lossy_crashes": 1})


def job() -> KernelJob:
    return KernelJob(Model(CFG, symmetry=False), I.REGISTRY, True, 3)


def a_level(j: KernelJob) -> list:
    """The roots and their successors' chunks, as the driver makes level 0 and 1."""
    roots = sorted((fp, c) for fp, (_, c) in j.roots(j.model()).items())
    level0 = [kv for p in range(j.partitions) for kv in j.seed(p, roots)]
    chunks = [(v[1], v[2]) for _, v in level0 if v[0] == "C"]
    routed = [[] for _ in range(j.partitions)]
    for owner, value in j.expand(frozenset(), chunks):
        routed[owner].append((owner, value))
    return [list(j.own(frozenset(), p, routed[p])) for p in range(j.partitions)]


def test_a_chunk_reads_back_exactly_and_narrows_its_columns():
    rng = np.random.default_rng(7)
    n, width = 500, 9
    rows = rng.integers(-100, 100, size=(n, width), dtype=np.int32)
    rows[:, 3] = rng.integers(0, 40_000, size=n)          # needs 4 bytes
    rows[:, 5] = rng.integers(-30_000, 30_000, size=n)    # needs 2
    rows[:, 0] = rng.integers(0, 2, size=n)               # the controller column: two values
    fps = rng.integers(0, 2**64, size=(n, 2), dtype=np.uint64)
    parents = rng.integers(0, 2**64, size=(n, 2), dtype=np.uint64)
    labels = rng.integers(-1, 19, size=(n, R.LABEL), dtype=np.int32)
    data = R.encode(R.PART, fps, parents, labels, rows, 0, ['{"a":1}', '{"b":2}'])
    rec = R.Rows(data, R.PART, width, 0)
    assert (rec.rows == rows).all() and (rec.fps == fps).all() and (rec.parents == parents).all()
    assert (rec.labels == labels).all() and rec.ctrls == ['{"a":1}', '{"b":2}']
    placed = np.zeros((3, width), dtype=np.int32)
    rec.rows_to(np.array([4, 2]), np.array([2, 0]), placed)
    assert (placed[[2, 0]] == rows[[4, 2]]).all() and not placed[1].any()
    assert len(data) < 16 + 32 * n + 4 * (width + R.LABEL) * n // 2      # narrower than int32 columns
    assert R.chunk_measure(data)[:2] == [n, f"{R.fp_sum(fps):x}"]


@pytest.mark.parametrize("damage", ["cut", "pickle", "width", "kinds", "ctrl index", "tail"])
def test_a_torn_or_foreign_record_is_bad_data(damage):
    rows = np.zeros((4, 6), dtype=np.int32)
    rows[:, 2] = [0, 1, 1, 0]
    fps = np.arange(8, dtype=np.uint64).reshape(4, 2)
    data = R.encode(R.PART, fps, fps, np.zeros((4, R.LABEL), np.int32), rows, 2, ["x", "y"])
    width = 6
    if damage == "cut":
        data = data[:-20]
    elif damage == "pickle":
        data = pickle.dumps(object)
    elif damage == "width":
        width = 7
    elif damage == "kinds":                              # the labels' width bytes follow the fingerprints
        at = len(R.PART) + 16 + 32 * 4
        data = data[:at] + b"\x03" + data[at + 1:]
    elif damage == "ctrl index":
        data = R.encode(R.PART, fps, fps, np.zeros((4, R.LABEL), np.int32), rows, 2, ["x"])
    elif damage == "tail":
        data = data + b"more"
    with pytest.raises(BadData):
        R.Rows(data, R.PART, width, 2)
    assert damage in ("width", "ctrl index") or R.chunk_measure(data) is None


@pytest.mark.parametrize("damage", [None, "cut", "tail", "rows", "as rows"])
def test_a_links_record_reads_back_its_links_and_only_where_links_do(damage):
    """A LINKS chunk (spark/rows.py: a level no one expands again) holds each state's
    fingerprint, its parent's low lane and label; torn, longer, claiming rows, or read where rows are needed,
    it is BadData (chunk_measure: None)."""
    rng = np.random.default_rng(9)
    fps = rng.integers(0, 2**64, size=(30, 2), dtype=np.uint64)
    parents = rng.integers(0, 2**64, size=(30, 2), dtype=np.uint64)
    labels = rng.integers(-1, 300, size=(30, R.LABEL), dtype=np.int32)
    data = R.links(fps, parents, labels)
    if damage is None:
        rec = R.Rows(data, R.PART, 9, links=True)
        assert rec.links and rec.n == 30 and rec.rows.shape == (30, 0)
        assert (rec.fps == fps).all() and (rec.parent_lanes == parents[:, 1]).all() and (rec.labels == labels).all()
        assert R.chunk_measure(data)[:2] == [30, f"{R.fp_sum(fps):x}"]
        return
    if damage == "cut":
        data = data[:-3]
    elif damage == "tail":
        data = data + b"\0"
    elif damage == "rows":                                 # a width where links have none
        data = data[:len(R.LINKS) + 8] + (5).to_bytes(8, "little") + data[len(R.LINKS) + 16:]
    with pytest.raises(BadData):
        R.Rows(data, R.PART, 9, links=damage != "as rows")
    if damage != "as rows":
        assert R.chunk_measure(data) is None


def test_a_controller_value_not_in_its_own_form_or_not_a_controller_is_bad_data():
    j = job()
    assert j.roots(j.model())                             # the roots' controller value is met
    side = _side(j)
    text = side.texts[0]
    assert side.local([text])[0] == 0
    spaced = json.dumps(json.loads(text))                 # the same value, not in its canonical text
    for bad in (spaced, "[1, 2]", "not json", json.dumps({"@": "Replica", "v": []})):
        with pytest.raises(BadData):
            side.local([bad])


def test_the_kernel_stages_on_one_process_give_the_models_successors():
    """Level 1 made by seed, expand and own (no Spark) holds the model's successors of the
    roots, each once, and each owner's visited run is its chunks' fingerprints sorted."""
    j = job()
    model = j.model()
    parts = a_level(j)
    fps, seen = [], set()
    for out in parts:
        mine = []
        for _, v in out:
            if v[0] == "C":
                rec = R.Rows(v[2], R.PART, _side(j).width)
                mine += [R.as_int(*fp) for fp in rec.fps]
                for row in _side(j).rows_of(rec):
                    seen.add(_side(j).k.unpack(row))
        (run,) = [R.visited_of_blob(v[1]) for _, v in out if v[0] == "F"]
        assert [R.as_int(*fp) for fp in run] == sorted(mine)
        fps += mine
    want = {s for r in model.init_states() for _, s in model.successors(r)} - set(model.init_states())
    assert len(fps) == len(set(fps)) == len(want)
    assert seen == want


def a_level_at(j: KernelJob, depth: int) -> list:
    """The chunks of level `depth` (>= 1), made level by level as the driver would (each
    level's own stage sees the runs of the levels before it)."""
    parts = a_level(j)
    runs = [[v[1] for _, v in out if v[0] == "F"] for out in parts]
    chunks = [(v[1], v[2]) for out in parts for _, v in out if v[0] == "C"]
    roots = sorted(j.roots(j.model()))
    for p in range(j.partitions):
        runs[p].append(R.visited_blob(np.array([(fp >> 64, fp & (2**64 - 1)) for fp in roots
                                                 if j.owner(fp) == p], dtype=np.uint64).reshape(-1, 2)))
    for _ in range(depth - 1):
        routed = [[(p, ("F", blob)) for blob in runs[p]] for p in range(j.partitions)]
        for owner, value in j.expand(frozenset(), chunks):
            routed[owner].append((owner, value))
        outs = [list(j.own(frozenset(), p, routed[p])) for p in range(j.partitions)]
        chunks = [(v[1], v[2]) for out in outs for _, v in out if v[0] == "C"]
        for p, out in enumerate(outs):
            runs[p] += [v[1] for _, v in out if v[0] == "F"]
    return chunks


def test_an_owners_level_is_the_same_bytes_whatever_order_its_blocks_come_in():
    """The shuffle and the exchange files bring an owner's blocks in any order; a retried task
    must write the chunks the manifest has, so the owner puts them in an order of their own."""
    from spark import kernel_tasks as KT
    j = job()
    chunks = a_level_at(j, 4)
    old = KT.BLOCK_SUCCESSORS
    KT.BLOCK_SUCCESSORS = 64                              # many small blocks per owner
    KT._SIDES.clear()
    try:
        routed = [(o, v) for o, v in j.expand(frozenset(), chunks) if o == 1 and v[0] == "B"]
    finally:
        KT.BLOCK_SUCCESSORS = old
        KT._SIDES.clear()
    assert len(routed) >= 3
    forward = list(j.own(frozenset(), 1, routed))
    backward = list(j.own(frozenset(), 1, routed[::-1]))
    assert [v for _, v in forward if v[0] == "C"] == [v for _, v in backward if v[0] == "C"]
    assert forward[0][1][1][:3] == backward[0][1][1][:3]   # chunk metas, actions taken, events


def test_merged_runs_are_one_sorted_run_of_both():
    rng = np.random.default_rng(3)
    runs = [rng.integers(0, 2**64, size=(n, 2), dtype=np.uint64) for n in (50, 0, 31)]
    items = [(1, ("F", R.visited_blob(r))) for r in runs] + [(1, ("M", None))]
    (part, (tag, blob)), = list(merge(items))
    got = R.visited_of_blob(blob)
    both = np.concatenate(runs)
    assert part == 1 and tag == "F"
    assert (got == both[np.lexsort((both[:, 1], both[:, 0]))]).all()


def test_the_owners_sort_is_the_fingerprint_order():
    rng = np.random.default_rng(5)
    fp = rng.integers(0, 2**64, size=(20_000, 2), dtype=np.uint64)
    fp[::9, 0] = fp[0, 0]                                 # ties on the first lane
    idx = rng.permutation(20_000)[:15_000]
    assert (by_fp(fp, idx) == idx[np.lexsort((fp[idx, 1], fp[idx, 0]))]).all()


def test_a_chunk_is_the_same_bytes_in_processes_that_numbered_its_controllers_differently():
    """Each worker numbers controller values in the order it meets them; a chunk's table is
    ordered by the values' text, so a task retried elsewhere writes the bytes the manifest has."""
    j = job()
    parts = a_level(j)
    recs = [R.Rows(v[2], R.PART) for out in parts for _, v in out if v[0] == "C"]
    texts = sorted({t for rec in recs for t in rec.ctrls})
    one, other = _Side(j), _Side(j)
    one.local(texts)
    other.local(texts[::-1])                              # met in the other order
    assert any(one.ids[t] != other.ids[t] for t in texts)
    for rec in recs:
        a, b = one.portable(one.rows_of(rec)), other.portable(other.rows_of(rec))
        assert (a[0] == b[0]).all() and a[1] == b[1]


def test_emitted_blocks_hold_every_successor_once_in_its_owners_order_with_its_parent_and_label():
    """spark/emit.py writes each successor straight into its owner's block: read back, each
    owner's blocks are the kernel's successors of the chunks' rows, in the order the rows and
    their successors come, each with its parent's fingerprint, its n-th, its label and its
    row (controller values through the block's own table), whatever the block boundaries:
    blocks that fill up (a small cap) and blocks closed because a column widened."""
    from spark import kernel_tasks as KT
    j = job()
    side = _side(j)
    chunks = a_level_at(j, 4)             # rows whose successors widen some columns
    want = [[] for _ in range(j.partitions)]
    for _, data in chunks:
        rec = side.read(data, R.PART)
        for fp, row in zip(rec.fps, side.rows_of(rec)):
            n = side.k.successor_rows(row)
            side.sync()                   # the controller values the fills added, with their digests
            for nth in range(n):
                t = side.k.out[nth]
                a, b = KT.X.row_fp(t, side.ctrl, side.dig)
                want[int(b) % j.partitions].append(((int(a), int(b)), R.as_int(*fp), nth,
                                                    side.k.label(side.k.labels[nth]), side.k.unpack(t)))
    for cap in (0, 64):
        old = KT.BLOCK_SUCCESSORS
        KT.BLOCK_SUCCESSORS, side._blocks = cap, None
        try:
            blocks = [(o, v[1]) for o, v in j.expand(frozenset(), chunks) if v[0] == "B"]
        finally:
            KT.BLOCK_SUCCESSORS, side._blocks = old, None
        got = [[] for _ in range(j.partitions)]
        widths = set()
        for owner, data in blocks:
            rec = side.read(data, R.BLOCK)
            widths.add(sum(m.dtype.itemsize * len(cols) for m, cols in rec._rows.parts))   # a row's bytes
            for i, row in enumerate(side.rows_of(rec)):
                got[owner].append(((int(rec.fps[i, 0]), int(rec.fps[i, 1])), R.as_int(*rec.parents[i]),
                                   int(rec.nths[i]), side.k.label(rec.labels[i]), side.k.unpack(row)))
        assert got == want
        assert len(widths) >= 2           # a column widened: blocks of either width read the same
        if cap:
            assert len(blocks) > 3 * j.partitions


def test_a_chunks_fingerprint_sum_is_the_exact_sum_of_its_numbers():
    """The manifest's checksum of a chunk, summed by 32-bit halves: the same as Python's
    exact sum of the fingerprints as numbers, at the extremes too."""
    rng = np.random.default_rng(11)
    for fps in (np.zeros((0, 2), np.uint64), rng.integers(0, 2**64, size=(100_000, 2), dtype=np.uint64),
                np.full((100_000, 2), 2**64 - 1, dtype=np.uint64)):
        assert R.fp_sum(fps) == sum(R.as_int(a, b) for a, b in fps.tolist())
