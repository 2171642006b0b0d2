"""The compiled pieces of a level's end in `check --visited disk` (external.py): the kept
candidates gathered into the level's run, links and fingerprints, and the level's table seeded
with fingerprints it must treat as seen."""
from __future__ import annotations

import numpy as np
from numba import njit

import specs.kernel  # noqa: F401  (the kernel's numba cache directory, before anything compiles)
from verifier.engines.kernel.visited import claim, visit


def gather(keep, order, fp, parents, ks, labels, base, run, parent_of, k_of, front_fp, taken, each=None) -> None:
    """The kept candidates' fingerprints in fingerprint order (`run`), and in the order found
    their links (the parent's place in its level, the place among its successors), their
    fingerprints (`front_fp`) and their actions counted (`taken`): one pass each, the two at
    once with a pool's `each` (the main thread's longest serial step of a level's end)."""
    passes = [lambda: gather_run(keep, order, fp, run),
              lambda: gather_links(keep, fp, parents, ks, labels, base, parent_of, k_of, front_fp, taken)]
    list((each or map)(lambda p: p(), passes))


@njit(cache=True, nogil=True, _nrt=False)
def gather_run(keep, order, fp, run) -> None:
    r = 0
    for x in range(len(order)):
        i = order[x]
        if keep[i]:
            run[r, 0], run[r, 1] = fp[i, 0], fp[i, 1]
            r += 1


@njit(cache=True, nogil=True, _nrt=False)
def gather_links(keep, fp, parents, ks, labels, base, parent_of, k_of, front_fp, taken) -> None:
    s = 0
    for i in range(len(keep)):
        if keep[i]:
            parent_of[s] = parents[i] - base
            k_of[s] = ks[i]
            front_fp[s, 0], front_fp[s, 1] = fp[i, 0], fp[i, 1]
            taken[labels[i, 0]] += 1
            s += 1


@njit(cache=True, _nrt=False)
def seed(table, fps) -> int:
    """Insert fps into the table: how many were not there."""
    new = 0
    for i in range(len(fps)):
        if visit(table, fps[i, 0], fps[i, 1]):
            new += 1
    return new


@njit(cache=True, nogil=True, _nrt=False)
def seed_shared(table, fps, lost) -> int:
    """seed, into a table threads insert into at once (visited.claim): the key 0 marks a seed,
    and no key is below it, so nothing replaces it (and no finder is marked lost: `lost` is
    never written)."""
    none = np.uint64(0xFFFFFFFFFFFFFFFF)       # the round's first key: no seed is of a round
    new = 0
    for i in range(len(fps)):
        got, _ = claim(table, fps[i, 0], fps[i, 1], np.uint64(0), none, lost)
        new += got == 1
    return new
