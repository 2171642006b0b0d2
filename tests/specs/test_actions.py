"""The action declarations: checked when defined, and the source of every table derived from
them (the action list, replay's operations, symmetry, the z3 step list)."""
from __future__ import annotations

import pytest

from specs import actions as A
from specs.actions.declare import BROKER, CONTROLLER, DATA, DECLARATIONS, REQUEST, OpError, Param, action
from specs.config import make_config, with_bounds
from specs.rules import Outside
from specs.symbolic import ACTIONS as Z3_ACTIONS
from specs.symmetry import applicability


@pytest.fixture
def scratch():
    """Declarations made in a test are removed again."""
    before = list(DECLARATIONS)
    yield
    DECLARATIONS[:] = before


@pytest.mark.parametrize("kwargs,body,why", [
    ({"kind": "nope", "z3": ("fence",)}, "ok", "unknown kind"),
    ({"kind": REQUEST, "params": (BROKER,), "z3": ("fence",)}, "request", "does not match its parameters"),
    ({"kind": DATA, "z3": ("fence",)}, "request", "a step has its guard and effect in specs/kernel"),
    ({"kind": REQUEST, "z3": ("fence",)}, "ok", "a replay-only request has effect"),
    ({"kind": DATA, "budget": "records_", "z3": ("fence",)}, "ok", "unknown budget"),
    ({"kind": DATA, "charged_if_running": True, "budget": "fences", "z3": ("fence",)}, "ok", "a broker parameter"),
    ({"kind": DATA, "z3": "fence"}, "ok", "z3 must name"),
    ({"kind": CONTROLLER, "reads_replica_order": True, "z3": ("fence",)}, "ok", "needs a budget"),
    ({"kind": DATA, "fault": True, "z3": ("crash",)}, "ok", "first parameter is the broker"),
    ({"kind": DATA, "z3": ("fence",)}, "undocumented", "needs a docstring"),
])
def test_a_malformed_declaration_fails_when_it_is_defined(scratch, kwargs, body, why):
    kind = kwargs.pop("kind")
    with pytest.raises(TypeError, match=why):
        if body == "undocumented":
            @action(kind, **kwargs)
            class undocumented:
                pass
        elif body == "request":
            @action(kind, **kwargs)
            class example:
                """An example step."""

                def effect(cfg, s):
                    return s, None
        else:
            @action(kind, **kwargs)
            class example:
                """An example step."""


def test_every_table_is_derived_from_the_declarations():
    names = [a.name for a in DECLARATIONS]
    assert len(names) == len(set(names))
    assert A.ACTION_NAMES == tuple(a.name for a in DECLARATIONS if a.kind != A.REQUEST)
    assert set(A.OPS) == set(names)                     # replay runs every declared operation
    assert A.ELECTING == {a.name for a in A.ACTIONS if a.elects}
    assert A.FAULTS == {a.name for a in A.ACTIONS if a.fault}
    z3_named = {n for a in DECLARATIONS if not isinstance(a.z3, Outside) for n in a.z3}
    assert set(Z3_ACTIONS) == z3_named | {"diverge"}    # plus the one step only the abstraction has
    for a in A.ACTIONS:                                  # replay checks exactly the declared fields
        op = {"op": a.name, **{p.name: 1 for p in a.params}}
        with pytest.raises(OpError, match="unknown field"):
            A.op_label({**op, "bogus": 1})


def test_symmetry_is_switched_off_by_any_action_that_reads_the_replica_order():
    cfg = make_config(flags={"any_candidate_elections": True})
    assert applicability(cfg) is None
    switched = set()
    for a in A.ACTIONS:
        if a.reads_replica_order:
            on = (make_config(flags={"any_candidate_elections": True, a.switch: True}) if a.switch
                  else with_bounds(cfg, **{a.fixed_budget: 1}))
            note = applicability(on)
            assert note is not None and a.name in note
            switched.add(a.switch)
    assert "auto_leader_rebalance" in switched       # a rule, not a budget, turns the periodic preferred election on


def test_operations_are_checked_against_their_parameter_kinds():
    assert A.op_label({"op": "elect", "type": "designated", "leader": 2}) == ("elect", "designated", 2)
    with pytest.raises(OpError, match="needs 'leader'"):
        A.op_label({"op": "elect", "type": "designated"})
    with pytest.raises(OpError, match="must be >= 1"):
        A.op_label({"op": "set_min_isr", "value": 0})
    with pytest.raises(OpError, match="missing field 'isr'"):
        A.op_label({"op": "alter_partition", "leader_epoch": 0, "partition_epoch": 0})
    label = A.op_label({"op": "alter_partition", "leader_epoch": 0, "partition_epoch": 1, "isr": [1],
                        "broker_epochs": {"1": 101}})
    assert A.label_to_op(label) == {"op": "alter_partition", "leader_epoch": 0, "partition_epoch": 1, "isr": [1],
                                    "broker_epochs": {"1": 101}}
    assert Param("x").required


def test_a_request_outside_the_model_changes_nothing_and_fails_a_state_it_cannot_be_sent_from(tmp_path):
    """unmodelled_request (specs/actions/control.py): the state as it was and the error PROBES
    names; from a state that lacks what the probe needs, the scenario fails at that step (as a
    broker-side step whose guard does not hold), in one line."""
    import json

    from specs.actions.control import PROBES
    from tests.bind import run_file
    cfg = make_config("kafka", replicas=[1, 2, 3], min_isr=2)
    s = A.init_state(cfg)
    assert A.step(cfg, s, ("unmodelled_request", "elect_unknown_topic")) == (s, "UNKNOWN_TOPIC_OR_PARTITION")
    assert A.step(cfg, s, ("unmodelled_request", "register_same_incarnation")) == (s, None)
    assert PROBES["register_without_metadata_version"] == "INVALID_REGISTRATION"
    old = make_config("kafka-3.9", replicas=[1, 2, 3], min_isr=2)
    assert A.step(old, A.init_state(old), ("unmodelled_request", "register_without_metadata_version"))[1] == \
        "UNSUPPORTED_VERSION"
    path = tmp_path / "probe.json"
    path.write_text(json.dumps({"name": "no fenced broker", "config": {"replicas": [1, 2, 3], "min_isr": 1},
                                "steps": [{"op": "unmodelled_request", "kind": "heartbeat_wants_fence"}]}))
    run = run_file(str(path))
    assert not run.ok and run.failure.step == 1
    assert run.failure.message == "unmodelled_request kind=heartbeat_wants_fence needs a fenced broker, which this state lacks"
    assert A.step(cfg, s, ("unmodelled_request", "cancel_reassignment_of_another_topic")) == (s, None)
    # an election of every partition: the preferred one's refusal where it cannot lead; where it could, no probe
    from specs.scenario.format import NotEnabled
    moved = A.step(cfg, s, ("controlled_shutdown", 1))[0]
    assert moved.ctrl.partition.leader == 2
    assert A.step(cfg, moved, ("unmodelled_request", "elect_every_partition")) == \
        (moved, "PREFERRED_LEADER_NOT_AVAILABLE")
    from tests.specs.helpers import Sim, conf
    away = Sim(conf(), {"leader": 2})           # replica 1, in the ISR, would be elected
    with pytest.raises(NotEnabled, match="the preferred replica leading, or unable to lead"):
        A.step(away.cfg, away.s, ("unmodelled_request", "elect_every_partition"))
    path.write_text(json.dumps({"name": "two replicas", "config": {"replicas": [1, 2], "min_isr": 1},
                                "steps": [{"op": "unmodelled_request", "kind": "cancel_reassignment_of_another_topic"}]}))
    run = run_file(str(path))
    assert not run.ok and run.failure.step == 1 and "needs three replicas, one of the first two" in run.failure.message
