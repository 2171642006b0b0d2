"""The story told under a counterexample (invariants/explain.py): for every mutant's violations
found by random walks, each violated property gets a non-empty explanation that names the
facts of the last state, and the durability stories name the record and when it was acked."""
from __future__ import annotations

import invariants as I

import pytest

from specs import Model
from specs.catalogue import MUTANTS
from specs.config import make_config, mutant_config
from verifier.core.settings import Options, Settings
from verifier.engines import simulate
from verifier.reports.story import rows, why

SAFETY_MUTANTS = sorted(m for m, mutant in MUTANTS.items() if not mutant.liveness)


@pytest.mark.parametrize("mutant", SAFETY_MUTANTS)
def test_every_violation_found_gets_a_story(mutant):
    cfg = mutant_config(make_config("kafka", bounds={"crashes": 1, "admin_elections": 1}), mutant)
    model = Model(cfg, symmetry=False)
    told = 0
    for seed in range(3):
        walks = simulate.Knobs(walks=300, depth=60, seed=seed, shrink=False)
        res = simulate.run(model, I.REGISTRY, Settings(options=Options(check_deadlock=False), knobs=walks))
        for name, trace in res.counterexamples.items():
            text = why(trace)[name]
            assert text and len(text) > 20, (mutant, name, text)
            last = rows(trace)[-1]
            assert f"<< {', '.join(trace.violated)} breaks here" in last[1]
            if name in ("NoCommittedRecordLostGlobally", "LeaderCompleteness"):
                assert "acknowledged at step" in text, text
            told += 1
    if mutant != "recovery-shortest-log":      # rounds need the deeper recovery profile's faults
        assert told > 0, f"no walk broke {mutant}: the test would not look at any story"
