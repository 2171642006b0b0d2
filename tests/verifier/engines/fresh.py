"""The z3 engine as its tests call it: one size's check with the lemmas `prove` hands it, run
in a fresh interpreter, and the concrete runs its results stand for.

A fresh interpreter because these tests read a model's details (a BMC trace, its concrete
witness, a CTI). z3 numbers its terms and reuses the numbers of terms Python has freed, and the
model it returns follows those numbers; Python frees z3 objects held in reference cycles
whenever its collector runs, which everything that ran before in the process moves (measured:
5,000 small dicts allocated before a `prove` run changed 3 of its 6 CTIs). On a pytest-xdist
worker, what ran before depends on how the tests were dealt out, so each check starts from the
same state every time: a spawned process per call."""
from __future__ import annotations

import multiprocessing

from invariants.symbolic import INVARIANTS, LEMMAS, MORE_INVARIANTS
from specs.symbolic import cti_trace as _cti_trace
from specs.symbolic import witness_trace as _witness_trace
from verifier.engines.prove import check_size as _check_size

CONCRETE = [t.concrete for t in INVARIANTS + MORE_INVARIANTS]


def in_fresh_process(fn, *args, **kw):
    """fn(*args, **kw) in a new interpreter (fn importable, its arguments and result picklable)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(fn, args, kw)


def check_size(*args, **kw):
    """The engine's check of one size with the lemmas `prove` hands it, from a fresh interpreter."""
    return in_fresh_process(_check_size_here, *args, **kw)


def _check_size_here(*args, **kw):
    return _check_size(*args, lemmas=LEMMAS, **kw)


def witness_trace(cfg, trace, names):
    return _witness_trace(cfg, trace, names, CONCRETE)


def cti_trace(cfg, cti):
    return _cti_trace(cfg, cti, CONCRETE)
