"""Blocks of the file exchange name their controller values by digest, the texts in the run's
catalogue (spark/catalogue.py): an owner reads the same rows as from blocks that carry their
texts, in a process that has met none of the values, and a catalogue's bytes are data."""
from __future__ import annotations

import os

import numpy as np
import pytest

import invariants as I
import spark.rows as R
from spark import catalogue as C
from spark import exchange
from spark import compiled as X
from spark import kernel_tasks as KT
from spark.kernel_tasks import KernelJob, _side, _Side, new_rows
from specs import Model, make_config
from verifier.core.values import BadData
from tests.spark.test_rows import a_level_at

CFG = make_config("kafka", replicas=[1, 2, 3], bounds={"lossy_crashes": 1})


def job() -> KernelJob:
    return KernelJob(Model(CFG, symmetry=False), I.REGISTRY, True, 3)


def both_ways(j: KernelJob, root: str, squeeze: bool):
    """A level's blocks each way: through the shuffle (texts) and into exchange files (digests)."""
    chunks = a_level_at(j, 4)
    old = KT.BLOCK_SUCCESSORS
    KT.BLOCK_SUCCESSORS = 64                              # many blocks, each naming a few values
    KT._SIDES.clear()                                     # (a process's open blocks are sized once)
    try:
        texts = [(o, v) for o, v in j.expand(frozenset(), chunks) if v[0] == "B"]
        KT._SIDES.clear()                                 # a fresh process writes the files
        spill = (os.path.join(root, "00005"), 0, None, squeeze, root)
        files = [(o, v) for o, v in j.expand(frozenset(), chunks, spill) if v[0] == "X"]
    finally:
        KT.BLOCK_SUCCESSORS = old
        KT._SIDES.clear()
    return texts, files


@pytest.mark.parametrize("squeeze", [False, True])
def test_an_owner_reads_the_same_rows_from_digest_blocks_in_a_process_that_met_no_value(tmp_path, squeeze):
    j = job()
    texts, files = both_ways(j, str(tmp_path), squeeze)
    assert files and os.listdir(tmp_path / C.DIR)         # the writer published its values
    for owner in range(j.partitions):
        names = [n for o, v in files if o == owner for n in v[1]]
        heads = {bytes(b[:8]) for n in names for b in exchange.blocks(n)}
        assert heads == {R.ZDBLOCK if squeeze else R.DBLOCK}
        reader = _Side(j)
        by_text = new_rows(j, reader, [(o, v) for o, v in texts if o == owner])
        fresh = _Side(j)                                  # another worker: only the roots' values met
        known = len(fresh.texts)
        by_digest = new_rows(j, fresh, [(owner, ("X", names))], catalogue=str(tmp_path))
        assert len(fresh.texts) > known                   # it read values from the catalogue
        for a, b in zip(by_text[:3], by_digest[:3]):      # fingerprints, parents, labels
            assert np.array_equal(a, b) and len(a) > 0
        assert [reader.k.unpack(r) for r in by_text[3]] == [fresh.k.unpack(r) for r in by_digest[3]]
        assert by_text[4] == by_digest[4]                 # the actions taken


def test_a_digest_block_is_smaller_than_its_texts(tmp_path):
    j = job()
    texts, files = both_ways(j, str(tmp_path), False)
    text_bytes = sum(len(v[1]) for _, v in texts)
    digest_bytes = sum(os.path.getsize(n) - 8 * len(exchange.blocks(n)) for _, v in files for n in v[1])
    assert digest_bytes < text_bytes


def catalogued(tmp_path):
    """A catalogue with one value published by one side, and a digest block's table."""
    j = job()
    KT._SIDES.clear()
    assert j.roots(j.model())                             # the roots' controller value is met
    writer = _side(j)
    cat = writer.catalogue(str(tmp_path))
    table = cat.table(np.array([0], dtype=np.int32))
    KT._SIDES.clear()
    return j, table, writer.texts[0]


def test_a_value_no_catalogue_file_holds_is_bad_data(tmp_path):
    j, table, _ = catalogued(tmp_path)
    reader = _Side(j)
    unknown = np.array([[1, 2]], dtype=np.uint64)
    with pytest.raises(BadData, match="no catalogue file holds"):
        reader.catalogue(str(tmp_path)).ids(unknown)
    assert (reader.catalogue(str(tmp_path)).ids(table) == [0]).all()


def test_a_catalogue_text_that_is_not_its_digests_is_bad_data(tmp_path):
    j, table, text = catalogued(tmp_path)
    (name,) = os.listdir(tmp_path / C.DIR)
    path = tmp_path / C.DIR / name
    data = bytearray(path.read_bytes())
    data[-2] ^= 0x01                                      # one bit of the text
    path.write_bytes(bytes(data))
    reader = _Side(j)
    reader.dig = reader.dig[:0]                           # it has met nothing: the catalogue must answer
    reader.texts, reader.ids = [], {}
    with pytest.raises(BadData, match="does not match its digest"):
        reader.catalogue(str(tmp_path)).ids(table)


def test_a_torn_last_frame_is_read_when_whole_and_never_before(tmp_path):
    """A writer killed in its append leaves a torn frame; a reader stops at it and reads it once
    it is whole (a writer's file only grows)."""
    j = job()
    KT._SIDES.clear()
    assert j.roots(j.model())
    side = _side(j)
    text = side.texts[0]
    frame = C._HEAD.pack(len(text.encode()), C.digest(text.encode())) + text.encode()
    os.makedirs(tmp_path / C.DIR)
    path = tmp_path / C.DIR / "1-torn"
    path.write_bytes(frame[:-3])
    reader = C.Catalogue(str(tmp_path), side)
    reader._read()
    assert reader.texts == {} and reader.offsets["1-torn"] == 0
    path.write_bytes(frame)
    reader._read()
    assert reader.texts == {C.digest(text.encode()): text} and reader.offsets["1-torn"] == len(frame)


def test_a_digest_block_without_a_catalogue_is_bad_data(tmp_path):
    j = job()
    _, files = both_ways(j, str(tmp_path), False)
    name = files[0][1][1][0]
    block = _Side(j).read(exchange.blocks(name)[0], R.BLOCK)
    with pytest.raises(BadData, match="no catalogue"):
        _Side(j).block_ids(block, None)


def test_a_digest_block_cut_in_its_table_is_bad_data(tmp_path):
    j = job()
    _, files = both_ways(j, str(tmp_path), False)
    data = bytes(exchange.blocks(files[0][1][1][0])[0])
    rec = R.Rows(data, R.BLOCK)
    cut = data[:len(data) - len(data) // 2]
    assert len(rec.digests) > 0
    with pytest.raises(BadData):
        R.Rows(cut, R.BLOCK)


def test_a_digest_block_carries_no_fingerprints_its_reader_sums_them_from_its_rows(tmp_path):
    """16 random bytes a successor a third of the exchange's disk (spark/rows.py): gone from
    the bytes, and summed from the rows to the fingerprints the emitter routed them by."""
    j = job()
    texts, files = both_ways(j, str(tmp_path), False)
    side = _Side(j)
    for owner, (_, names) in files:
        for name in names:
            for data in exchange.blocks(name):
                rec = side.read(data, R.BLOCK)
                fps = rec.fps
                assert len(fps) and all(j.owner(R.as_int(*f)) == owner for f in fps)
                head = len(R.DBLOCK) + 16         # magic, n, width: then the parents, no fingerprints
                assert bytes(data[head:head + 16 * rec.n]) == np.ascontiguousarray(rec.parents, R.FP).tobytes()
                rows = rec.rows                   # widened: the process's own ids, then row_fp
                rows[:, side.ctrl] = side.block_ids(rec, str(tmp_path))[rows[:, side.ctrl]]
                side.sync()
                assert [X.row_fp(r, side.ctrl, side.dig) for r in rows] == [tuple(f) for f in fps]
    with pytest.raises(ValueError, match="controller column"):
        R.Rows(bytes(exchange.blocks(files[0][1][1][0])[0]), R.BLOCK).fps
