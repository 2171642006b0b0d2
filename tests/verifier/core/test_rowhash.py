"""A successor's fingerprint made from its parent's (`child_hash`) is the one made from scratch
(`row_hash`), wherever the step changed the row: no field, the first, the last, neighbours, all,
either side of a block of eight and in the tail past the last whole block, on rows of any width."""
from __future__ import annotations

import numpy as np
import pytest

from verifier.core.rowhash import child_hash, row_hash

WIDTH = 83          # a --brokers 5 row


def _pair(changed, width=WIDTH):
    rng = np.random.default_rng(len(changed))
    parent = rng.integers(-2, 3000, width).astype(np.int32)
    child = parent.copy()
    for j in changed:
        child[j] += 1 + j
    return parent, child


def _from_parent(parent, child):
    a, b = map(np.uint64, row_hash(parent))     # (a Python int would be typed int64)
    return tuple(int(v) for v in child_hash(parent, a, b, child))


@pytest.mark.parametrize("changed", [(), (0,), (WIDTH - 1,), (0, WIDTH - 1), (40, 41, 42), tuple(range(WIDTH)),
                                     tuple(range(0, WIDTH, 2)), (7, 8), (15,), (79, 80), (81,)])
def test_a_childs_fingerprint_from_its_parents_is_its_own(changed):
    parent, child = _pair(changed)
    got = _from_parent(parent, child)
    assert got == tuple(int(v) for v in row_hash(child))
    assert (got == tuple(int(v) for v in row_hash(parent))) == (not changed)


@pytest.mark.parametrize("width,changed", [(80, (79,)), (80, (0, 72)), (5, (2,)), (5, (0, 4)), (8, (7,)), (9, (8,))])
def test_rows_of_other_widths_whole_blocks_or_none(width, changed):
    parent, child = _pair(changed, width)
    assert _from_parent(parent, child) == tuple(int(v) for v in row_hash(child))
