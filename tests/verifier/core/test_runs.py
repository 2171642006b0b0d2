"""Sorted fingerprint runs (verifier/core/runs.py): merged and looked up a stretch at a time
exactly as whole, whatever the stretch (a stretch of 1 to 7 fingerprints here, so that every
boundary case is met); a run shorter than its count is an error, not a short answer."""
from __future__ import annotations

import numpy as np
import pytest

from verifier.core import runs as R


def _sorted(a):
    return a[np.lexsort((a[:, 1], a[:, 0]))]


def _pair(rng, n):
    # few distinct first lanes, so that equal a with different b is met often
    return np.unique(np.stack([rng.integers(1, 6, n), rng.integers(1, 40, n)], axis=1).astype(np.uint64), axis=0)


@pytest.mark.parametrize("chunk", [1, 2, 7])
def test_runs_merge_and_drop_a_stretch_at_a_time_as_whole(tmp_path, chunk):
    rng = np.random.default_rng(chunk)
    for _ in range(40):
        both = _pair(rng, int(rng.integers(0, 60)))
        rng.shuffle(both)
        cut = int(rng.integers(0, len(both) + 1))
        x, y = _sorted(both[:cut]), _sorted(both[cut:])
        R.write_run(str(tmp_path / "x"), x)
        R.write_run(str(tmp_path / "y"), y)
        n = R.merge_files((str(tmp_path / "x"), len(x)), (str(tmp_path / "y"), len(y)), str(tmp_path / "z"), chunk)
        whole = np.zeros((len(both), 2), dtype=np.uint64)
        R.merge_runs(x, y, whole)
        assert n == len(both)
        assert (R.read_run(str(tmp_path / "z")) == _sorted(both)).all() and (whole == _sorted(both)).all()
        cand = _pair(rng, 30)
        rng.shuffle(cand)
        keep, keep_whole = np.ones(len(cand), dtype=np.bool_), np.ones(len(cand), dtype=np.bool_)
        R.drop_seen_file(cand, R.by_fp(cand), keep, str(tmp_path / "z"), n, chunk)
        R.drop_seen_sorted(cand, R.by_fp(cand), keep_whole, _sorted(both))
        held = set(map(tuple, both.tolist()))
        assert keep.tolist() == keep_whole.tolist() == [tuple(c) not in held for c in cand.tolist()]
        in_order = R.sorted_rows(cand, R.by_fp(cand))           # the candidates copied in order
        keep_copy = np.ones(len(cand), dtype=np.bool_)
        R.drop_seen_file(in_order, None, keep_copy, str(tmp_path / "z"), n, chunk)
        assert (in_order == _sorted(cand)).all()
        assert keep_copy.tolist() == [tuple(c) not in held for c in in_order.tolist()]


def test_a_run_shorter_than_its_count_is_an_error(tmp_path):
    R.write_run(str(tmp_path / "x"), np.array([[1, 2], [3, 4]], dtype=np.uint64))
    with pytest.raises(ValueError, match="ends after 2 fingerprints"):
        list(R.stretches(str(tmp_path / "x"), 3))


def test_merge_runs_takes_a_read_only_run_beside_a_writable_one():
    """spark-check merges a run mapped read-only from disk with one it just built in memory;
    numba types each mix of the two separately, and one mix once failed to compile (CI, stop 68)."""
    x = _sorted(_pair(np.random.default_rng(1), 50))
    y = np.array([[9, 1], [9, 2]], dtype=np.uint64)
    mapped = np.frombuffer(x.tobytes(), dtype=R.FP).reshape(-1, 2)     # as a run read from bytes
    assert not mapped.flags.writeable
    for a, b in ((mapped, y), (y, mapped)):
        out = np.zeros((len(x) + 2, 2), dtype=np.uint64)
        R.merge_runs(a, b, out)
        assert (out == _sorted(np.concatenate([x, y]))).all()


def test_by_fp_on_two_threads_is_the_one_thread_order():
    """by_fp with a pool sorts the two halves of the key space at once: the same order, equal
    fingerprints in the order given (a level's candidates met twice keep their first place)."""
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(58)
    fp = rng.integers(0, 2 ** 64, size=(1 << 20 | 12345, 2), dtype=np.uint64)
    fp[100:110] = fp[7]                       # equal fingerprints, in both halves' way
    sub = np.flatnonzero(rng.random(len(fp)) < 0.6)       # the rows an index names (spark-check's owners)
    with ThreadPoolExecutor(2) as pool:
        two = R.by_fp(fp, each=pool.map)
        two_sub = R.by_fp(fp, sub, pool.map)
    assert np.array_equal(two, R.by_fp(fp))
    assert np.array_equal(two_sub, R.by_fp(fp, sub)) and np.array_equal(np.sort(two_sub), sub)
    assert np.array_equal(two_sub, two[np.isin(two, sub)])
    key = fp[two]
    assert np.all((key[1:, 0] > key[:-1, 0]) | ((key[1:, 0] == key[:-1, 0]) & (key[1:, 1] >= key[:-1, 1])))
    assert list(two[np.isin(two, [7, *range(100, 110)])]) == [7, *range(100, 110)]


@pytest.mark.parametrize("chunk", [1000, R.CHUNK])
def test_drop_seen_on_two_threads_drops_what_one_does(tmp_path, chunk):
    """drop_seen_file with a pool reads the run's two halves of the key space at once: the same
    candidates dropped, also those on either side of the halves' border."""
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(chunk)
    run = _sorted(np.unique(rng.integers(0, 2 ** 64, size=(200_000, 2), dtype=np.uint64), axis=0))
    border = int(np.searchsorted(run[:, 0], np.uint64(1) << np.uint64(63)))
    R.write_run(str(tmp_path / "r"), run)
    cand = np.concatenate([run[rng.integers(0, len(run), 40_000)], run[border - 3:border + 3],
                           rng.integers(0, 2 ** 64, size=(40_000, 2), dtype=np.uint64)])
    rng.shuffle(cand)
    one, two = np.ones(len(cand), dtype=np.bool_), np.ones(len(cand), dtype=np.bool_)
    R.drop_seen_file(cand, R.by_fp(cand), one, str(tmp_path / "r"), len(run), chunk)
    with ThreadPoolExecutor(2) as pool:
        R.drop_seen_file(cand, R.by_fp(cand, each=pool.map), two, str(tmp_path / "r"), len(run), chunk, pool.map)
        in_order = R.sorted_rows(cand, R.by_fp(cand), pool.map)      # copied in two halves too
        copy = np.ones(len(cand), dtype=np.bool_)
        R.drop_seen_file(in_order, None, copy, str(tmp_path / "r"), len(run), chunk, pool.map)
    held = set(map(tuple, run.tolist()))
    assert one.tolist() == two.tolist() == [tuple(c) not in held for c in cand.tolist()]
    assert (in_order == _sorted(cand)).all() and copy.tolist() == [tuple(c) not in held for c in in_order.tolist()]
    assert 40_000 < np.count_nonzero(~two) <= 40_006


def test_merge_on_two_threads_writes_the_one_thread_run(tmp_path):
    """merge_files with a pool merges the key space's two halves into their own parts of the
    file at once: the same run, byte for byte."""
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(7)
    both = np.unique(rng.integers(0, 2 ** 64, size=(1 << 22 | 999, 2), dtype=np.uint64), axis=0)
    rng.shuffle(both)
    x, y = _sorted(both[:3_000_000]), _sorted(both[3_000_000:])
    R.write_run(str(tmp_path / "x"), x)
    R.write_run(str(tmp_path / "y"), y)
    runs = (str(tmp_path / "x"), len(x)), (str(tmp_path / "y"), len(y))
    assert R.merge_files(*runs, str(tmp_path / "one"), 100_000) == len(both)
    with ThreadPoolExecutor(2) as pool:
        assert R.merge_files(*runs, str(tmp_path / "two"), 100_000, pool.map) == len(both)
    assert (tmp_path / "one").read_bytes() == (tmp_path / "two").read_bytes()
    assert (R.read_run(str(tmp_path / "two")) == _sorted(both)).all()
