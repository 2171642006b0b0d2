"""`check --simulate`: random walks sample the space; a violating walk is shrunk (as fuzz
shrinks) before it is reported, and the shrunk trace still breaks the same property."""
from __future__ import annotations

import invariants as I

import json

from specs import Model

from tests.bind import run_scenario
from specs.config import make_config
from verifier.core.result import COMPLETE, VIOLATION
from verifier.core.settings import Settings
from verifier.engines import simulate


def test_a_violating_walk_is_shrunk_and_still_breaks_the_property(tmp_path):
    model = Model(make_config("kafka", mutant="hwm-ignores-min-isr"), symmetry=False)
    raw = simulate.run(model, I.REGISTRY, Settings(knobs=simulate.Knobs(walks=2000, depth=100, seed=0, shrink=False)))
    shrunk = simulate.run(model, I.REGISTRY, Settings(knobs=simulate.Knobs(walks=2000, depth=100, seed=0)))
    assert raw.status == shrunk.status == VIOLATION
    assert len(shrunk.counterexample) < len(raw.counterexample)
    trace = shrunk.counterexample
    path = tmp_path / "s.json"
    path.write_text(json.dumps(model.scenario(trace, "shrunk", "test")))
    result = run_scenario(json.loads(path.read_text()), str(path))
    assert result.ok, result.failure
    assert set(trace.violated) <= set(result.trace.violated)


def test_a_sample_without_violation_is_never_called_complete_coverage():
    model = Model(make_config("kafka"), symmetry=False)
    res = simulate.run(model, I.REGISTRY, Settings(knobs=simulate.Knobs(walks=20, depth=30, seed=1)))
    assert res.status == COMPLETE and not res.explored_all
