"""check --liveness: lassos under weak fairness. The engine's fairness logic on small graphs
whose answer is known by hand, then the protocol: a recovery strategy broken on purpose is
caught, strategy None's wait for an operator is reported as the documented exception (not as
a pass), and Kafka's recovery rounds keep every property."""
from __future__ import annotations

import functools
import json
from typing import NamedTuple

import numpy as np
import pytest

from specs import Model, load_scenario, make_config

from tests.bind import run_scenario
from tests.verifier.engines import liveness_reference as reference
from invariants.liveness import LIVENESS
from verifier.engines import liveness as L

pytestmark = pytest.mark.xdist_group("liveness")     # one process: the graphs below are shared


class Prop(NamedTuple):
    name: str
    premise: object
    goal: object
    quote: str = ""

    def by_design(self, cfg, s):
        return None


class Graph:
    """A model whose states are (n,) and whose steps are listed by hand: {n: [(action, m)]}.
    `blocked`: actions a bound keeps from state n (enabled only when bounds are ignored)."""
    action_names = ("fetch", "unfence", "restart", "produce")
    fair_actions = ("fetch", "unfence", "restart")
    cfg = None

    def __init__(self, edges, goal=(), premise=(0,), blocked=None):
        self.edges, self.blocked = edges, blocked or {}
        self.liveness = (Prop("P", lambda c, s: s[0] in premise, lambda c, s: s[0] in goal),)

    def init_states(self):
        return [(0,)]

    def successors(self, s):
        return [((a,), (m,)) for a, m in self.edges.get(s[0], [])]

    def enabled_actions(self, s, unbounded=False):
        names = {a for a, _ in self.edges.get(s[0], [])}
        return names | set(self.blocked.get(s[0], ())) if unbounded else names


def verdict(model):
    return L.check(model, model.liveness, graph_of=reference.explore).verdicts[0]


def test_a_cycle_that_ignores_an_always_enabled_fair_action_is_unfair():
    # 1 <-> 2 by fetch; unfence (fair) is enabled in both and leads to the goal: WF forces it
    g = Graph({0: [("produce", 1)], 1: [("fetch", 2), ("unfence", 3)], 2: [("fetch", 1), ("unfence", 3)]},
              goal=(3,), premise=(1,))
    assert verdict(g).status == L.HOLDS
    # from state 0 itself (no fair action enabled) the run may stutter forever
    assert verdict(Graph(g.edges, goal=(3,), premise=(0,))).stutter


def test_a_cycle_through_a_state_where_the_fair_action_is_disabled_is_a_lasso():
    g = Graph({0: [("produce", 1)], 1: [("fetch", 2), ("unfence", 3)], 2: [("fetch", 1)]}, goal=(3,), premise=(1,))
    v = verdict(g)
    assert v.status == L.VIOLATED and not v.stutter
    labels = [label[0] for label, _ in v.trace.steps]
    assert labels == ["produce", "fetch", "fetch"] and v.loop == 1   # 0 -> 1 -> 2 -> back to 1


def test_a_state_with_no_fair_action_enabled_stutters_forever():
    g = Graph({0: [("produce", 1)], 1: [("produce", 2)]}, goal=(9,))
    v = verdict(g)
    assert v.status == L.VIOLATED and v.stutter and v.loop == 0   # 0 itself can stutter


def test_premise_after_which_the_goal_is_reached_holds():
    g = Graph({0: [("fetch", 1)], 1: [("unfence", 2)], 2: []}, goal=(2,))
    assert verdict(g).status == L.HOLDS


def test_a_fair_action_blocked_only_by_a_bound_is_inconclusive_not_a_violation():
    g = Graph({0: [("produce", 1)], 1: []}, goal=(2,), blocked={0: ("restart",), 1: ("restart",)})
    v = verdict(g)
    assert v.status == L.INCONCLUSIVE and v.extra["blocked_by_bounds"] == ["restart"]


# ---------------------------------------------------------------- the protocol

SMALL = {"admin_elections": 0}     # the recovery profile without its designated election: smaller


@functools.lru_cache(maxsize=None)
def _checked(preset: str, mutant, strategy, bounds: tuple):
    """Every liveness property on one config, explored once per test process: several tests
    below ask about the same graph (the module is one xdist group so that they share it)."""
    flags = {"unclean_recovery_strategy": strategy} if strategy else {}
    return L.run(Model(make_config(preset, mutant=mutant, flags=flags, bounds=dict(bounds)), symmetry=False),
                 LIVENESS)


def _check(mutant=None, strategy=None):
    return _checked("recovery", mutant, strategy or "aggressive", tuple(sorted(SMALL.items())))


def test_a_strategy_that_never_elects_leaves_a_partition_leaderless_forever():
    res = _check(mutant="recovery-never-elects")
    by = {v.name: v for v in res.verdicts}
    v = by["LeaderlessEventuallyLeads"]
    assert res.complete and v.status == L.VIOLATED and v.detail == ""
    final = v.trace.final
    assert final.ctrl.partition.leader == -1 and not final.ctrl.partition.isr and not final.ctrl.partition.elr


def test_strategy_none_waits_for_an_operator_and_says_so():
    res = _check(strategy="none")
    v = {v.name: v for v in res.verdicts}["LeaderlessEventuallyLeads"]
    assert v.status == L.EXCEPTED and "waits for an operator" in v.detail
    assert v.status != L.HOLDS and v.trace is not None


@pytest.mark.parametrize("strategy", ["aggressive", "balanced"])
def test_kafka_recovery_rounds_keep_every_liveness_property(strategy):
    res = _check(strategy=strategy)
    assert res.complete and [v.status for v in res.verdicts] == [L.HOLDS] * len(res.verdicts)


def test_cli_writes_the_lasso_as_table_scenario_and_itf_with_its_loop(cli, tmp_path):
    r = cli("check", "--liveness", "--preset", "recovery", "--bound", "admin_elections=0",
            "--mutant", "recovery-never-elects", "--out", str(tmp_path))
    assert r.returncode == 1, r.stderr
    assert "cycle starts here" in r.stdout and "(stutter)" in r.stdout
    (run,) = tmp_path.iterdir()
    summary = json.loads((run / "summary.json").read_text())
    inv = {i["name"]: i for i in summary["invariants"]}["LeaderlessEventuallyLeads"]
    assert summary["engine"] == "liveness" and summary["exit_code"] == 1 and inv["status"] == "violated"
    cex = inv["counterexample"]
    itf = json.loads((run / cex["itf"]).read_text())
    assert itf["loop"] == cex["loop"] and len(itf["states"]) == cex["length"] + 1
    scenario = load_scenario(str(run / cex["scenario"]))
    assert run_scenario(scenario, cex["scenario"]).ok


def test_cli_reports_the_documented_exception_with_exit_0_and_its_reason(cli, tmp_path):
    r = cli("check", "--liveness", "--preset", "recovery", "--bound", "admin_elections=0",
            "--flag", "unclean_recovery_strategy=none", "--invariant", "LeaderlessEventuallyLeads",
            "--out", str(tmp_path), "--junit", str(tmp_path / "j.xml"))
    assert r.returncode == 0, r.stderr
    assert "excepted" in r.stdout and "waits for an operator" in r.stdout
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    summary = json.loads((run / "summary.json").read_text())
    assert [i["status"] for i in summary["invariants"]] == ["excepted"]
    assert "documented exception" in (tmp_path / "j.xml").read_text()


def test_cli_liveness_refuses_what_it_cannot_do(cli, tmp_path):
    r = cli("check", "--liveness", "--simulate", "3", "--out", str(tmp_path))
    assert r.returncode == 2 and "--simulate" in r.stderr
    r = cli("check", "--liveness", "--invariant", "Nope", "--out", str(tmp_path))
    assert r.returncode == 2 and "unknown liveness property" in r.stderr


# liveness property -> (preset, mutant, bounds) whose liveness check violates it
KILLERS = {
    "CompleteCandidateEventuallyLeads": ("kafka", "unfence-skips-election", {"isr_shrinks": 1}),
    "LeaderlessEventuallyLeads": ("recovery", "recovery-never-elects", SMALL),
    "RecoveringEventuallyRecovered": ("recovery", "recovered-never-accepted", SMALL),
}


def test_every_liveness_property_has_a_killer():
    assert set(KILLERS) == {p.name for p in LIVENESS}


@pytest.mark.parametrize("name", sorted(KILLERS))
def test_liveness_property_fails_on_a_broken_rule_and_holds_on_kafkas(name):
    preset, mutant, bounds = KILLERS[name]
    strategy = "aggressive" if preset == "recovery" else None        # the recovery preset's own
    for which, want in ((mutant, L.VIOLATED), (None, L.HOLDS)):
        verdicts = {v.name: v for v in _checked(preset, which, strategy, tuple(sorted(bounds.items()))).verdicts}
        assert verdicts[name].status == want, (which, name)


@pytest.mark.parametrize("preset, mutant, strategy, bounds", [
    pytest.param("recovery", "recovery-never-elects", "aggressive", SMALL, marks=pytest.mark.slow),  # 209,102 states
    ("kafka", "unfence-skips-election", None, {"isr_shrinks": 1}),       # 110,503 states
])
def test_the_kernels_graph_is_the_models_state_for_state(preset, mutant, strategy, bounds):
    """The engine explores on the compiled kernel; the interpreted model's search (the
    reference) gives the same graph: the same states in the same order (fingerprints), parents,
    premises and goals, fair actions enabled with and without bounds, and edges."""
    flags = {"unclean_recovery_strategy": strategy} if strategy else {}
    model = Model(make_config(preset, mutant=mutant, flags=flags, bounds=bounds), symmetry=False)
    fast = L.explore(model, list(LIVENESS), model.fair_actions, None, None)
    slow = reference.explore(model, list(LIVENESS), model.fair_actions, None, None)
    from specs.kernel import kernel_of
    from verifier.core.fingerprint import Fingerprinter
    k, fpr = kernel_of(model.cfg), Fingerprinter()
    rows = [k.unpack(np.frombuffer(key, dtype=np.int32)) for key in fast[0].keys]
    assert fast[1:] == slow[1:] and [fpr(s) for s in rows] == slow[0].keys and len(rows) > 1000
    for field in ("parent", "flags", "enabled", "out"):
        assert getattr(fast[0], field) == getattr(slow[0], field), field
