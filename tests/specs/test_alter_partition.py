"""The controller's AlterPartition checks (specs/controller.py `alter_partition_checks`).

docs/protocol.md, "AlterPartition": the checks run in order and the first match wins:
1. the sender's broker epoch ≠ registered: STALE_BROKER_EPOCH;
2. leader_epoch or partition_epoch newer than the controller's: NOT_CONTROLLER;
3. leader_epoch older: FENCED_LEADER_EPOCH;
4. the sender is not the leader: INVALID_REQUEST;
5. partition_epoch older: INVALID_UPDATE_VERSION;
6. the ISR has a non-replica, a duplicate, or lacks the leader, or asks RECOVERING with more
   than one member or from RECOVERED: INVALID_REQUEST;
7. a proposed member unregistered, fenced, in controlled shutdown, or with a broker epoch that
   is not -1 and differs from its registered one: INELIGIBLE_REPLICA (KIP-903).
Otherwise target ISR = new ISR and the pipeline runs. Single requests against one start state
are rows of AP_TABLE; cases that need several events stay separate tests, as do the
NEW_LEADER_ELECTED answers of an AlterPartition that completes a reassignment.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import pytest

from .helpers import Sim, alter, conf, cshut, elect, expect, fence, reassign, register, unfence

# Base: replicas [1,2,3], leader 1, LE5, PE10; broker 4 registered but not a replica.
AP_INIT = {"leader_epoch": 5, "partition_epoch": 10, "brokers": [4]}


def ap(*ops, initial=None, config=None):
    sim = Sim(config or conf(min_isr=1), {**AP_INIT, **(initial or {})})
    before = sim.s.ctrl
    err = sim.do(*ops)
    return sim, before, err


class Row(NamedTuple):
    id: str
    initial: dict         # merged over AP_INIT
    ops: Any              # one alter_partition op, or a list of them
    error: Any            # the error of the last op (None: accepted)
    fields: dict          # expected partition fields afterwards (see helpers.expect)


RECOVERING_1 = {"leader_recovery_state": "RECOVERING", "isr": [1]}
FENCED_2 = {"fenced": [2], "isr": [1, 3]}


AP_TABLE = [
    # "Otherwise target ISR = new ISR and the pipeline runs".
    Row("accepted", {}, alter(5, 10, [1, 2], {1: 101, 2: 102}), None, dict(isr=[1, 2], le=5, pe=11)),
    # A valid request from a RECOVERING partition moving to RECOVERED is applied (PE+1, LE unchanged).
    Row("recovering-leader-reports-recovered", RECOVERING_1, alter(5, 10, [1]), None,
        dict(rec="RECOVERED", isr=[1], le=5, pe=11)),
    # check 1: "sender's broker epoch ≠ registered: STALE_BROKER_EPOCH"; an unregistered sender
    # is stale; "first match wins": STALE_BROKER_EPOCH before NOT_CONTROLLER.
    Row("check1-stale-broker-epoch", {}, alter(5, 10, [1, 2], request_broker_epoch=100),
        "STALE_BROKER_EPOCH", {}),
    Row("check1-unregistered-sender", {}, alter(5, 10, [1, 2], broker=9, request_broker_epoch=109),
        "STALE_BROKER_EPOCH", {}),
    Row("check1-precedes-check2", {}, alter(99, 99, [1, 2], request_broker_epoch=100), "STALE_BROKER_EPOCH", {}),
    # check 2: "leader_epoch or partition_epoch newer than the controller's: NOT_CONTROLLER";
    # first match wins: an older leader_epoch but newer partition_epoch is NOT_CONTROLLER, not
    # FENCED_LEADER_EPOCH; a non-leader sender with a newer epoch gets NOT_CONTROLLER.
    Row("check2-not-controller-6-10", {}, alter(6, 10, [1, 2]), "NOT_CONTROLLER", {}),
    Row("check2-not-controller-5-11", {}, alter(5, 11, [1, 2]), "NOT_CONTROLLER", {}),
    Row("check2-not-controller-6-11", {}, alter(6, 11, [1, 2]), "NOT_CONTROLLER", {}),
    Row("check2-precedes-check3", {}, alter(4, 11, [1, 2]), "NOT_CONTROLLER", {}),
    Row("check2-precedes-check4", {}, alter(6, 10, [1, 2], broker=2), "NOT_CONTROLLER", {}),
    # check 3: "leader_epoch older: FENCED_LEADER_EPOCH"; first match wins: an old leader_epoch
    # from a non-leader with an old partition_epoch is FENCED_LEADER_EPOCH.
    Row("check3-fenced-leader-epoch", {}, alter(4, 10, [1, 2]), "FENCED_LEADER_EPOCH", {}),
    Row("check3-precedes-check4-and-5", {}, alter(4, 9, [2, 3], broker=2), "FENCED_LEADER_EPOCH", {}),
    # check 4: "sender is not the leader: INVALID_REQUEST", "This includes a leaderless
    # partition"; first match wins: a non-leader with an old partition_epoch is INVALID_REQUEST,
    # not INVALID_UPDATE_VERSION.
    Row("check4-sender-not-leader", {}, alter(5, 10, [1, 2], broker=2), "INVALID_REQUEST", {}),
    Row("check4-precedes-check5", {}, alter(5, 9, [1, 2], broker=2), "INVALID_REQUEST", {}),
    Row("check4-leaderless-partition", {"leader": -1, "isr": [], "elr": [1], "fenced": [2, 3]},
        alter(5, 10, [1], broker=1), "INVALID_REQUEST", {}),
    # check 5: "partition_epoch older: INVALID_UPDATE_VERSION"; first match wins: an old
    # partition_epoch with a malformed ISR is INVALID_UPDATE_VERSION.
    Row("check5-invalid-update-version", {}, alter(5, 9, [1, 2]), "INVALID_UPDATE_VERSION", {}),
    Row("check5-precedes-check6", {}, alter(5, 9, [1, 4]), "INVALID_UPDATE_VERSION", {}),
    # check 6: "ISR has a non-replica, a duplicate, or lacks the leader ...: INVALID_REQUEST";
    # "asks RECOVERING with more than one member" or "from RECOVERED": INVALID_REQUEST.
    Row("check6-non-replica", {}, alter(5, 10, [1, 2, 4]), "INVALID_REQUEST", {}),
    Row("check6-duplicate", {}, alter(5, 10, [1, 2, 2]), "INVALID_REQUEST", {}),
    Row("check6-lacks-leader", {}, alter(5, 10, [2, 3]), "INVALID_REQUEST", {}),
    Row("check6-empty", {}, alter(5, 10, []), "INVALID_REQUEST", {}),
    Row("check6-recovering-with-more-than-one-member", RECOVERING_1,
        alter(5, 10, [1, 2], leader_recovery_state="RECOVERING"), "INVALID_REQUEST", {}),
    Row("check6-recovering-from-recovered", {"isr": [1]}, alter(5, 10, [1], leader_recovery_state="RECOVERING"),
        "INVALID_REQUEST", {}),
    # first match wins: a malformed ISR listing a fenced broker is INVALID_REQUEST, not
    # INELIGIBLE_REPLICA.
    Row("check6-precedes-check7-duplicate", FENCED_2, alter(5, 10, [1, 2, 2]), "INVALID_REQUEST", {}),
    Row("check6-precedes-check7-lacks-leader", FENCED_2, alter(5, 10, [2, 3]), "INVALID_REQUEST", {}),
    # check 7: "This applies to every member, old ones and the leader included": a shrink that
    # keeps a stale-epoch old member is refused; so is a leader whose own member epoch is stale,
    # or which is fenced or shutting down (its request epoch is correct, so check 1 passes).
    Row("check7-old-member-stale-epoch", {}, alter(5, 10, [1, 2], {1: 101, 2: 42}), "INELIGIBLE_REPLICA", {}),
    Row("check7-leader-stale-epoch", {}, alter(5, 10, [1, 2], {1: 99}), "INELIGIBLE_REPLICA", {}),
    Row("check7-leader-fenced", {"fenced": [1]}, alter(5, 10, [1, 2], {1: 101}), "INELIGIBLE_REPLICA", {}),
    Row("check7-leader-shutting-down", {"in_controlled_shutdown": [1]}, alter(5, 10, [1, 2], {1: 101}),
        "INELIGIBLE_REPLICA", {}),
]


@pytest.mark.parametrize("row", AP_TABLE, ids=[row.id for row in AP_TABLE])
def test_alter_partition_table(row):
    """docs/protocol.md, "AlterPartition": each row is one request against AP_INIT (+ the row's
    initial block); a refused request changes no controller state; an accepted one runs the
    pipeline."""
    ops = [row.ops] if isinstance(row.ops, dict) else list(row.ops)
    sim, before, err = ap(*ops, initial=row.initial)
    assert err == row.error
    if row.error is not None:
        assert sim.s.ctrl == before
    expect(sim.s, **row.fields)


# =========================================================================== check 7 over several events


def test_ap_check7_fenced_member_then_unfenced_accepted():
    """docs/protocol.md, "AlterPartition" check 7: "any proposed member ... fenced ...:
    INELIGIBLE_REPLICA" (ReplicationControlManagerTest testAlterPartitionShouldRejectFencedBrokers)."""
    sim = Sim(conf(replicas=(1, 2, 3, 4), min_isr=1))
    sim.do(fence(3))
    expect(sim.s, isr=[1, 2, 4], le=0, pe=1)
    full = alter(0, 1, [1, 2, 3, 4], {1: 101, 2: 102, 3: 103, 4: 104})
    before = sim.s.ctrl
    assert sim.do(full) == "INELIGIBLE_REPLICA"
    assert sim.s.ctrl == before
    sim.do(unfence(3))
    assert sim.do(full) is None
    expect(sim.s, isr=[1, 2, 3, 4], pe=2, le=0)


def test_ap_check7_shutting_down_member():
    """docs/protocol.md, "AlterPartition" check 7: "in controlled shutdown: INELIGIBLE_REPLICA"."""
    sim = Sim(conf(min_isr=1))
    sim.do(cshut(3))
    expect(sim.s, isr=[1, 2], pe=1)
    assert sim.do(alter(0, 1, [1, 2, 3])) == "INELIGIBLE_REPLICA"
    expect(sim.s, isr=[1, 2], pe=1)


def test_ap_check7_stale_member_epoch_and_minus_one_skips():
    """docs/protocol.md, "AlterPartition" check 7: "whose broker epoch is not -1 and differs from its
    registered epoch: INELIGIBLE_REPLICA" (ReplicationControlManagerTest
    testAlterPartitionShouldRejectBrokersWithStaleEpoch)."""
    sim = Sim(conf(replicas=(1, 2, 3, 4), min_isr=2))
    sim.do(register(4), unfence(4))
    expect(sim.s, isr=[1, 2, 3], pe=1)
    assert sim.s.ctrl.broker_epoch(4) == 1104
    assert sim.do(alter(0, 1, [1, 2, 3, 4], {1: 101, 2: 102, 3: 103, 4: 104})) == "INELIGIBLE_REPLICA"
    expect(sim.s, isr=[1, 2, 3], pe=1)
    assert sim.do(alter(0, 1, [1, 2, 3, 4], {1: 101, 2: 102, 3: 103, 4: -1})) is None
    expect(sim.s, isr=[1, 2, 3, 4], pe=2)


def test_ap_check7_member_without_epoch_is_not_checked():
    """docs/protocol.md, "AlterPartition" check 7 (KIP-903) as docs/SCENARIOS.md (alter_partition)
    drives it: "A proposed member without an entry in broker_epochs is sent as -1 (no epoch
    check)"; with the registered epoch it is accepted too."""
    sim = Sim(conf(min_isr=2))
    sim.do(register(3), unfence(3))
    assert sim.do(alter(0, 1, [1, 2, 3], {3: 1103})) is None
    expect(sim.s, isr=[1, 2, 3], pe=2)


def test_ap_check7_unregistered_replica():
    """docs/protocol.md, "AlterPartition" check 7: "any proposed member unregistered":
    INELIGIBLE_REPLICA (a reassignment target that has never registered)."""
    sim = Sim(conf(min_isr=1), None, universe=(4,))
    assert 4 not in sim.s.ctrl.registered
    sim.do(reassign([1, 2, 3, 4]))
    expect(sim.s, replicas=[1, 2, 3, 4], adding=[4], pe=1)
    assert sim.do(alter(0, 1, [1, 2, 3, 4])) == "INELIGIBLE_REPLICA"
    expect(sim.s, isr=[1, 2, 3], pe=1)


def test_pre_kip_903_skips_only_the_epoch_check():
    """docs/protocol.md, "Rule switches": preset `pre-kip-903` = "no per-member broker epoch check
    in AlterPartition" (KIP-903); fenced members are still INELIGIBLE_REPLICA."""
    cfg = conf(min_isr=2, preset="pre-kip-903")
    sim = Sim(cfg)
    sim.do(register(3), unfence(3))
    assert sim.do(alter(0, 1, [1, 2, 3], {1: 101, 2: 102, 3: 103})) is None
    expect(sim.s, isr=[1, 2, 3], pe=2)
    sim2 = Sim(cfg)
    sim2.do(fence(3))
    assert sim2.do(alter(0, 1, [1, 2, 3])) == "INELIGIBLE_REPLICA"
    # check 1 (the sender's own epoch) still applies
    assert sim2.do(alter(0, 1, [1, 2], request_broker_epoch=7)) == "STALE_BROKER_EPOCH"


# =========================================================================== NEW_LEADER_ELECTED


def test_reassignment_removing_the_leader_new_leader_elected():
    """docs/protocol.md, "Controller events" (reassignment) and "AlterPartition":
    NEW_LEADER_ELECTED when completion removes the leader (ReplicationControlManagerTest
    testReassignPartitions: [3,2,1] -> [0,2,1])."""
    sim = Sim(conf(replicas=(3, 2, 1), min_isr=2, brokers=[0]))
    sim.do(reassign([0, 2, 1]))
    expect(sim.s, replicas=[0, 2, 1, 3], adding=[0], removing=[3], isr=[3, 2, 1], leader=3, le=0, pe=1)
    err = sim.do(alter(0, 1, [3, 0, 2, 1]))
    assert err == "NEW_LEADER_ELECTED"
    expect(sim.s, replicas=[0, 2, 1], isr=[0, 2, 1], leader=0, adding=[], removing=[], le=1, pe=2)


def test_new_reassignment_during_ongoing_one_removes_previously_adding_replicas():
    """docs/protocol.md, "Controller events" (reassignment; ReplicationControlManagerTest
    testReassignPartitionsHandlesNewReassignmentThatRemovesPreviouslyAddingReplicas): [0,1] ->
    [2,3] (2 joins the ISR and is elected preferred leader) -> [4,5] gives replicas
    [4,5,0,1,2,3], removing [0,1,2,3], adding [4,5], leader 2 still a replica; completing it
    answers NEW_LEADER_ELECTED with leader 4."""
    sim = Sim(conf(replicas=(0, 1), min_isr=1, brokers=[2, 3, 4, 5]))
    sim.do(reassign([2, 3]))
    expect(sim.s, replicas=[2, 3, 0, 1], adding=[2, 3], removing=[0, 1])
    assert sim.do(alter(0, 1, [0, 1, 2])) is None
    assert sim.do(elect("preferred")) is None
    expect(sim.s, leader=2, le=1, pe=3)
    sim.do(reassign([4, 5]))
    expect(sim.s, replicas=[4, 5, 0, 1, 2, 3], adding=[4, 5], removing=[0, 1, 2, 3], leader=2,
           isr=[0, 1, 2])
    assert sim.do(alter(1, 4, [0, 1, 2, 3, 4, 5])) == "NEW_LEADER_ELECTED"
    expect(sim.s, leader=4, replicas=[4, 5], isr=[4, 5], adding=[], removing=[])
