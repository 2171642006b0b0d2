"""The narrowed chunks `check --visited disk` keeps its levels and candidates in
(verifier/engines/kernel/narrow.py): every row widens back to itself, a column costs the bits
of its span in the chunk, and a checkpoint's chunk index is data, checked before it is used."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from verifier.engines.kernel.narrow import Chunk, ChunkFile, Layout, narrow_index

I32 = np.iinfo(np.int32)


def _rows(n: int, seed: int = 7) -> np.ndarray:
    """Columns of every kind a kernel row has: constant, flags, small counters around zero,
    wide ids, and the int32 extremes together."""
    rng = np.random.default_rng(seed)
    rows = np.zeros((n, 12), dtype=np.int32)
    rows[:, 0] = rng.integers(I32.min, I32.max, n, endpoint=True)
    rows[:, 1] = -3
    rows[:, 2] = rng.integers(0, 2, n)
    rows[:, 3] = rng.integers(-5, 6, n)
    rows[:, 4] = rng.integers(0, 70_000, n)
    rows[:, 5:11] = rng.integers(0, 4, (n, 6))
    rows[:, 11] = I32.max
    if n >= 2:
        rows[0, 4], rows[1, 4] = I32.min, I32.max          # a span of 2**32 - 1: all 32 bits
    return rows


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [1, 2, 8191, 20_000])
def test_every_row_widens_back_to_itself(n, threads):
    rows = _rows(n)
    each = ThreadPoolExecutor(2).map if threads == 2 else None
    chunk = Chunk.of(rows, n, each)
    out = np.full((n + 3, rows.shape[1]), 99, dtype=np.int32)
    assert np.array_equal(chunk.rows_into(out, each), rows)
    keep = np.arange(n) % 3 == 1
    assert np.array_equal(chunk.select(keep).rows_into(out), rows[keep])


def test_a_column_costs_the_bits_of_its_span_and_a_constant_none():
    n = 1000
    rows = np.zeros((n, 80), dtype=np.int32)
    rows[:, :64] = np.arange(n)[:, None] % 2 + 40        # 64 flags: one bit each, one word
    rows[:, 64:] = 12                                    # 16 constants: nothing
    chunk = Chunk.of(rows, n)
    assert chunk.words.shape == (n, 1) and list(chunk.bits) == [1] * 64 + [0] * 16
    rows[:, 0] = np.arange(n)                            # 10 bits: a second word
    assert Chunk.of(rows, n).words.shape == (n, 2)
    assert Chunk.of(rows[:1], 1).words.shape == (1, 0)   # one row: every column a constant


def test_columns_are_laid_widest_first_each_in_the_first_word_with_room():
    lay = Layout(np.array([3, 32, 0, 30, 5, 32]))
    assert lay.words == 2
    assert dict(zip(lay.cols.tolist(), zip(lay.word.tolist(), lay.shift.tolist()))) == \
        {1: (0, 0), 5: (0, 32), 3: (1, 0), 4: (1, 30), 0: (1, 35)}
    assert lay.const.tolist() == [2]


def test_a_file_of_chunks_reads_back_and_reopens_from_its_index(tmp_path):
    rows = _rows(30_000)
    f = ChunkFile(tmp_path / "level.rows")
    for lo in range(0, len(rows), 7_000):
        f.append(Chunk.of(rows[lo:], min(7_000, len(rows) - lo)))
    out = np.zeros((7_000, rows.shape[1]), dtype=np.int32)
    assert np.array_equal(np.concatenate([c.rows_into(out).copy() for c in f]), rows)
    index = narrow_index(f.described(), rows.shape[1], (tmp_path / "level.rows").stat().st_size)
    f.close(unlink=False)
    again = ChunkFile(tmp_path / "level.rows", index)
    assert again.n == len(rows)
    assert np.array_equal(np.concatenate([c.rows_into(out).copy() for c in again]), rows)


@pytest.mark.parametrize("damage, why", [
    (lambda ix: ix[0].__setitem__(2, [33] + ix[0][2][1:]), "out of an int32 column's range"),
    (lambda ix: ix[0][1].__setitem__(0, I32.max + 1), "out of an int32 column's range"),
    (lambda ix: ix[1].__setitem__(3, ix[1][3] + 8), "not where its index says"),
    (lambda ix: ix[0].__setitem__(0, 0), "not a chunk's"),
    (lambda ix: ix[0].__setitem__(2, ix[0][2][:-1]), "not a chunk's"),
    (lambda ix: ix[0][1].__setitem__(0, 1.5), "not a chunk's"),
    (lambda ix: ix.pop(), "the rows file holds"),
    (lambda ix: ix.__setitem__(0, "chunk"), "not a chunk's"),
])
def test_a_damaged_index_is_refused_before_a_row_is_read(tmp_path, damage, why):
    rows = _rows(3_000)
    f = ChunkFile(tmp_path / "level.rows")
    f.append(Chunk.of(rows, 1_500))
    f.append(Chunk.of(rows[1_500:], 1_500))
    index, size = f.described(), f.nbytes
    f.close(unlink=False)
    assert size == (tmp_path / "level.rows").stat().st_size
    assert narrow_index(index, rows.shape[1], size)
    damage(index)
    with pytest.raises(ValueError, match=why):
        narrow_index(index, rows.shape[1], size)
