"""The z3 engine with KIP-966 recovery rounds: the controller's own round (specs/controller.py)
in the z3 algebra, the leader recovery state kept, each strategy proved, and a round that
elects the least data refuted by a run the concrete model reproduces."""
from __future__ import annotations

import json

import pytest
import z3

from invariants.symbolic import BY_NAME, INVARIANTS, LEMMAS, MORE_INVARIANTS
from tests.bind import run_scenario
from specs.config import make_config
from specs.symbolic import Encoding, sym_params, sym_state
from verifier.engines.prove import PROVED, REFUTED
from tests.verifier.engines.fresh import check_size, in_fresh_process, witness_trace
from verifier.engines.prove import check_size as check_size_here

RECOVERY = BY_NAME["RecoveryElectsAReplicaWithEveryAnsweredRecord"]
DEFAULT = list(INVARIANTS) + list(MORE_INVARIANTS[:2]) + [RECOVERY]
STRATEGIES = ("aggressive", "balanced", "none")


def _cfg(strategy: str, mutant=None):
    return make_config("recovery", mutant=mutant, flags={"unclean_recovery_strategy": strategy})


def _every_min_isr(strategy: str) -> list:
    """The three min ISRs one after another in one fresh interpreter (fresh.py's reason), not
    one interpreter each: the first starts from fresh.py's state, each later one from the same
    state every time."""
    return [check_size_here(_cfg(strategy), 3, m, depth=3, invariants=DEFAULT, lemmas=LEMMAS) for m in (1, 2, 3)]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_strategy_keeps_the_elr_invariants_and_the_rounds_choice(strategy):
    for m, r in enumerate(in_fresh_process(_every_min_isr, strategy), 1):
        assert r.verdict == PROVED, (strategy, m, r.dropped, r.violation)


@pytest.mark.parametrize("strategy", ["aggressive", "balanced"])
def test_a_round_that_elects_the_least_data_is_refuted_and_the_run_replays(strategy, tmp_path):
    cfg = _cfg(strategy, mutant="recovery-shortest-log")
    r = check_size(cfg, 3, 2, depth=6, invariants=DEFAULT, realize=witness_trace)
    assert r.verdict == REFUTED and RECOVERY.name in r.violation
    assert any(step is not None and step.action == "unclean_recovery" for step, _ in r.trace)
    assert r.witness is not None, "no concrete run matched the BMC counterexample"
    path = tmp_path / "w.json"
    path.write_text(json.dumps(r.witness.model.scenario(r.witness, strategy, "test")))
    result = run_scenario(json.loads(path.read_text()), str(path))
    assert result.ok, result.failure
    assert RECOVERY.name in result.trace.violated
    assert [label[0] for label, _ in r.witness.steps][-1] == "unclean_recovery"


def _reachable(cfg, n: int, want, depth: int = 8) -> bool:
    """Some run of at most `depth` symbolic steps from the initial state reaches `want`."""
    enc = Encoding(cfg, n)
    states = [sym_state(n, f"s{i}") for i in range(depth + 1)]
    solver = z3.Solver()
    solver.add(enc.initial(states[0], cfg.min_isr))
    for i in range(depth):
        solver.add(enc.well_formed(states[i]), enc.transition(states[i], states[i + 1], sym_params(n, f"p{i}")))
    solver.add(z3.Or(*(want(s) for s in states)))
    return solver.check() == z3.sat


def test_the_encoding_reaches_recovering_and_back_to_recovered():
    """RECOVERING is set by the round and cleared by the leader's AlterPartition, in z3 as in Kafka."""
    cfg = _cfg("aggressive")
    assert _reachable(cfg, 2, lambda s: s.recovering)
    enc = Encoding(cfg, 2)
    s, p = sym_state(2, "a"), sym_params(2, "p")
    step = enc.step("alter_partition", s, p)
    solver = z3.Solver()
    solver.add(enc.well_formed(s), s.recovering, step.guard, z3.Not(step.succ.recovering))
    assert solver.check() == z3.sat


def test_strategy_none_never_elects_and_no_strategy_has_no_rounds():
    for cfg in (_cfg("none"), make_config("kafka")):
        enc = Encoding(cfg, 3)
        step = enc.step("unclean_recovery", sym_state(3, "a"), sym_params(3, "p"))
        solver = z3.Solver()
        solver.add(step.guard)
        assert solver.check() == z3.unsat, cfg.preset
