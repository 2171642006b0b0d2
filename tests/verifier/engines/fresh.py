"""A z3 check in a fresh interpreter, for the tests that read a model's details (a BMC trace,
its concrete witness, a CTI). z3 numbers its terms and reuses the numbers of terms Python has
freed, and the model it returns follows those numbers; Python frees z3 objects held in
reference cycles whenever its collector runs, which everything that ran before in the process
moves (measured: 5,000 small dicts allocated before a `prove` run changed 3 of its 6 CTIs).
On a pytest-xdist worker, what ran before depends on how the tests were dealt out, so such a
test runs its check from the same start every time: a spawned process per call."""
from __future__ import annotations

import multiprocessing


def in_fresh_process(fn, *args, **kw):
    """fn(*args, **kw) in a new interpreter (fn importable, its arguments and result picklable)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(fn, args, kw)
