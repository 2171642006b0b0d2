"""Symmetry reduction on the kernel (specs/kernel/symmetry.py) is the Python canonicalizer's
(specs/symmetry.py), row for row: every renaming of a reached state is rewritten to the row of
the state the Python canonicalizer picks, and a search on the kernel with symmetry finds the
Python search's counts, levels, verdicts and shortest counterexamples."""
from __future__ import annotations

import numpy as np
import pytest

from specs import Model, make_config
from specs.kernel import Kernel
from specs.kernel.events import MISS
from specs.kernel.symmetry import canonical
from specs.symmetry import canonicalizer, orbit
from tests.verifier.engines.test_kernel_engine import _facts, _run

ANY = {"any_candidate_elections": True}


def _reached(cfg, every: int) -> list:
    """Every `every`-th state the unreduced search reaches (the kernel's graph, unpacked)."""
    from specs.kernel import kernel_of
    from verifier.core.rowgraph import DONE, Graph
    k = kernel_of(cfg)
    g = Graph(k, [k.pack(s) for s in Model(cfg, symmetry=False).init_states()])
    while g.expand(None) != DONE:
        pass
    return [k.unpack(g.rows[i]) for i in range(0, g.n_rows, every)]


@pytest.mark.parametrize("brokers, bounds", [(3, {"isr_shrinks": 1}), (4, {"isr_shrinks": 1, "lossy_crashes": 0})])
def test_every_renaming_of_a_reached_state_is_rewritten_to_the_python_canonical_row(brokers, bounds):
    cfg = make_config(replicas=list(range(1, brokers + 1)), flags=ANY, bounds=bounds)
    canon, k = canonicalizer(cfg), Kernel(cfg, symmetric=True)
    states = _reached(cfg, 97)
    assert len(states) > 300
    renamed = 0
    for s in states:
        want = k.pack(canon(s)).copy()
        for t in orbit(cfg, s):
            row = k.pack(t).copy()
            while canonical(row, k.layout.lay, k.cv, k.table_args(), k.key, k.work) == MISS:
                k.tables.fill(k.key)
            assert np.array_equal(row, want), (s, t)
            renamed += t != canon(s)
    assert renamed > len(states)           # most renamings are not canonical already


@pytest.mark.parametrize("mutant", [None, "hwm-ignores-min-isr"])
def test_a_search_with_symmetry_on_the_kernel_answers_as_the_python_search(mutant):
    model = Model(make_config(mutant=mutant, flags=ANY, bounds={"isr_shrinks": 0}))
    assert model.symmetric
    python = _facts(_run("bfs", model))
    assert python[1] > 5_000 and (mutant is None or python[8])
    for threads in (1, 2):
        assert _facts(_run("kernel", model, threads=threads)) == python
