"""The rule-flip gate's cases, found offline (verifier/engines/cluster/ruleflip.py), and the
trace validation rule they rest on: a step the model drives and a cluster does not take is a
divergence unless it is one of explain.MAY_BE_LEFT_OUT (the real clusters: bench/ruleflip_bench.py,
make cluster-walks)."""
from __future__ import annotations

import pytest

from specs import BUDGETS, Model
from specs.config import make_config
from specs.rules import RULE_FIELDS, broker_side_rules
from verifier.engines.cluster import ruleflip as RF
from verifier.engines.cluster.explain import model_incarnation, search

SMALL = ({"records": 1, "isr_shrinks": 1},)


def _model(preset="kafka-4.4", **flags):
    bounds = {n: 0 for n in BUDGETS}
    bounds.update(records=1, isr_shrinks=1)
    return Model(make_config(preset, bounds=bounds, flags=flags), symmetry=False)


def _after(model, *names):
    s = model.init_states()[0]
    for name in names:
        s = next(t for lbl, t in model.successors(s) if model.describe(lbl) == name)
    return s


def test_the_broker_side_rules_are_the_ones_the_brokers_read():
    side = set(broker_side_rules())
    assert {"hwm_requires_min_isr", "hwm_waits_for_isr", "expand_requires_catch_up", "follower_truncates",
            "leader_proposes_sorted_isr"} <= side
    assert not side & {"elr", "unfence_elects", "clean_election_needs_candidate"}       # the controller's
    for preset in ("kafka-4.4", "kafka-3.9"):
        rules = make_config(preset).rules
        assert RF.flips(preset) == [(n, not getattr(rules, n)) for n in RULE_FIELDS if n in side]


def test_a_permissive_flip_ends_on_the_step_the_release_does_not_take():
    case = RF.distinguish("kafka-4.4", "hwm_waits_for_isr", False, ladder=SMALL)
    model = case.trace.model
    assert [model.describe(lbl) for lbl, _ in case.trace.steps] == ["produce", "advance_hwm"]
    assert model.cfg.rules.hwm_waits_for_isr is False          # the flipped model's run, for --flag
    assert case.release_takes is None and case.bounds == SMALL[0]


def test_a_flip_that_changes_a_step_ends_where_the_outcomes_differ():
    case = RF.distinguish("kafka-4.4", "follower_truncates", False)
    model = case.trace.model
    last, after = case.trace.steps[-1]
    assert last[0] == "fetch" and case.release_takes is not None
    assert case.release_takes[0] != after          # the release's fetch truncates, the flipped one does not
    # the common run before it: every step the same in the release's model
    release = Model(make_config("kafka-4.4", bounds={n: case.bounds.get(n, 0) for n in BUDGETS}), symmetry=False)
    s = case.trace.initial
    for label, t in case.trace.steps[:-1]:
        assert release.apply(s, label)[0] == t
        s = t


def test_a_flip_only_undrivable_steps_tell_apart_says_so():
    case = RF.distinguish("kafka-4.4", "restart_before_fence", False, max_depth=5,
                          ladder=({"records": 1, "clean_shutdowns": 1, "crashes": 1},))
    assert case.trace is None
    assert "no harness can drive: restart" in case.why_none


def test_a_flip_no_cluster_can_see_is_no_case():
    """The maximal-ISR HWM gate differs only while an AlterPartition is in flight, which brokers
    deliver at once: the release's outcome is one the flipped model explains."""
    case = RF.distinguish("kafka-4.4", "hwm_gate_counts_maximal_isr", True, ladder=SMALL)
    assert case.trace is None and "shows alike" in case.why_none and case.states > 0


def test_a_driven_step_the_cluster_does_not_take_is_no_longer_explained_away():
    flipped = _model(hwm_waits_for_isr=False)
    release = _model()
    s = _after(release, "produce")
    obs, _ = RF.predicted(release, s, ("advance_hwm",))       # the release: the HWM stays at 0
    assert not obs.views and obs.data.hwm == 0
    assert search(flipped, s, ("advance_hwm",), obs, model_incarnation, set()).found is None
    # ... while a fetch that changed nothing is still one a run may leave out (MAY_BE_LEFT_OUT)
    fetch = next(lbl for lbl, _ in release.successors(s) if lbl[0] == "fetch")
    unchanged, _ = RF.predicted(release, s, ("advance_hwm",))
    found = search(release, s, fetch, unchanged, model_incarnation, set()).found
    assert found is not None and all(lbl != fetch for lbl, _, _ in found.path)


def test_the_predicted_observation_is_what_brokers_do_at_once():
    release = _model()
    s = _after(release, "produce")
    label = next(lbl for lbl, _ in release.successors(s) if release.describe(lbl) == "shrink_isr broker=2 also=[3]")
    obs, after = RF.predicted(release, s, label)
    assert [lbl[0] for lbl, _ in RF.run_of(release, s, label)] == ["shrink_isr", "deliver_alter_partition"]
    assert len(obs.views) == 1 and obs.views[0]["partition"]["isr"] == [1]
    assert after.ctrl.partition.isr == (1,) and after.inflight is None


@pytest.mark.parametrize("text", ['side = "sideways"'])
def test_a_rule_side_the_catalogue_does_not_know_is_refused(text):
    from specs.rules import _rule
    with pytest.raises(ValueError, match="unknown kind or z3 value"):
        _rule("x", {"default": True, "kind": "protocol", "z3": "shared", "source": "s", "doc": "d",
                    "side": text.split('"')[1]})


def test_benchmarks_shows_the_recorded_gate_and_every_flip_passes_it():
    """BENCHMARKS.md's rule-flip table is make cluster-walks' recorded gate
    (bench/results/ruleflip.json), rendered by the bench's own markdown(); every broker-side rule
    of both releases is a row, and each either diverged at the step that parts the models or has
    the reason no cluster can tell."""
    import importlib.util
    import json
    from pathlib import Path
    root = Path(__file__).resolve().parents[3]
    spec = importlib.util.spec_from_file_location("ruleflip_bench", root / "bench" / "ruleflip_bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = json.loads((root / "bench/results/ruleflip.json").read_text())["rows"]
    text = (root / "BENCHMARKS.md").read_text()
    for line in bench.markdown(rows):
        assert line in text, line
    for version in ("4.4.0", "3.9.2"):
        assert [(r["rule"], r["value"]) for r in rows if r["release"] == version] == RF.flips(
            bench.RELEASES[version].preset)
    for r in rows:
        assert r["verdict"] in ("diverges at the step that parts the models", "no difference a cluster can show"), r
        assert r.get("divergence") or r["why"]
    # every broker-side mutant of the catalogue is a row of each release it breaks
    from specs.catalogue import MUTANTS
    side = set(broker_side_rules())
    for m in MUTANTS.values():
        if set(m.changes) <= side:
            for version in ("4.4.0", "3.9.2"):
                assert any(r["mutant"] == m.name and r["release"] == version for r in rows), (m.name, version)


def test_the_search_takes_steps_as_the_harness_makes_a_cluster_take_them():
    release = _model("kafka-4.4", **{})
    s = release.init_states()[0]
    # a lag shrink takes every follower (the harness cuts every data link), never some of them
    shrinks = {lbl: RF._partial_shrink(s, lbl) for lbl, _ in release.successors(s) if lbl[0] == "shrink_isr"}
    assert [lbl for lbl, why in shrinks.items() if why is None] == [("shrink_isr", 2, (3,))]
    assert all("every follower" in why for lbl, why in shrinks.items() if lbl != ("shrink_isr", 2, (3,)))
    # a fenced follower's fetch heals its controller link: it is unfenced at once
    bounds = {n: 0 for n in BUDGETS}
    bounds.update(records=1, fences=1)
    model = Model(make_config("kafka-4.4", bounds=bounds), symmetry=False)
    s = _after(model, "fence broker=2")
    assert 2 in s.ctrl.fenced
    run = RF.run_of(model, s, ("fetch", 2))
    assert [lbl[0] for lbl, _ in run][:2] == ["fetch", "unfence"] and 2 not in run[-1][1].ctrl.fenced


def test_every_step_a_cluster_takes_on_its_own_is_waited_past_its_timing_or_may_be_left_out_for_a_reason():
    from verifier.engines.cluster import steps as ST
    from verifier.engines.cluster.explain import MAY_BE_LEFT_OUT
    assert set(ST.WAITED) <= set(ST.WAIT_PAST) | set(MAY_BE_LEFT_OUT)
    assert not set(ST.WAIT_PAST) & set(MAY_BE_LEFT_OUT)
    assert all(MAY_BE_LEFT_OUT.values()) and all(s > 5.0 for s in ST.WAIT_PAST.values())   # past the 5 s timeouts
