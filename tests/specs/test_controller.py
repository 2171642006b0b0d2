"""Controller events (specs/controller.py, specs/actions/control.py).

Fence, unfence, controlled shutdown and registration, the min.insync.replicas change, admin,
designated and periodic elections, and reassignment: docs/protocol.md, "Controller events". The
KIP-966 variants run under preset `kip-966` (docs/protocol.md, "Where Kafka and the KIP texts
differ"). AlterPartition is in test_alter_partition.py; KIP-966 unclean recovery, which chooses
by the replicas' logs, is in test_brokers.py. Each test quotes the rule it checks.
"""
from __future__ import annotations

from specs.state import NO_EPOCH, NO_LEADER

from .helpers import (PERIODIC, REBALANCE, Sim, alter, conf, cshut, elect, expect, fence, reassign, register, run,
                      set_min_isr, set_unclean, unfence)

# =========================================================================== fence, unfence


def test_fence_last_member_joins_elr():
    """docs/protocol.md, "Controller events" (Fence): "b joins ELR if the ISR falls below min ISR,
    even as the last member"."""
    s, _ = run(conf(min_isr=2), {"isr": [1], "elr": [2], "fenced": [2]}, fence(1))
    expect(s, isr=[], elr=[1, 2], leader=NO_LEADER, lke=[1], fenced=[1, 2])


def test_fence_of_broker_outside_isr_changes_no_partition():
    """docs/protocol.md, "Controller events" (Fence): "for partitions with b in the ISR, target ISR
    = ISR − {b}"; otherwise nothing is written."""
    s, _ = run(conf(min_isr=2), {"isr": [1, 2]}, fence(3))
    expect(s, isr=[1, 2], elr=[], pe=0, le=0, fenced=[3])


def test_fence_all_leaves_partition_leaderless():
    """docs/protocol.md, "Controller events" (Fence): "b joins ELR if the ISR falls below min ISR,
    even as the last member"; "The pipeline": "Otherwise leader = -1", then last_known_elr =
    [old leader]."""
    sim = Sim(conf(min_isr=2))
    sim.do(fence(3), fence(2))
    expect(sim.s, isr=[1], elr=[2], leader=1, le=0, pe=2)
    sim.do(fence(1))
    expect(sim.s, isr=[], elr=[1, 2], lke=[1], leader=NO_LEADER, le=1, pe=3)


def test_shrink_to_empty_isr_kafka_example():
    """docs/protocol.md, "Controller events" (Fence, clean Register; ReplicationControlManagerTest
    testEligibleLeaderReplicas_ShrinkToEmptyIsr): min ISR 3; every member leaving joins ELR; the
    last one leaves the partition leaderless with last_known_elr [0]."""
    sim = Sim(conf(replicas=(0, 1, 2), min_isr=3))
    sim.do(fence(1))
    expect(sim.s, isr=[0, 2], elr=[1])
    sim.do(fence(2))
    expect(sim.s, isr=[0], elr=[1, 2])
    sim.do(register(0, previous_broker_epoch=100))
    expect(sim.s, isr=[], elr=[0, 1, 2], lke=[0], leader=NO_LEADER, le=1, pe=3)


def test_unfence_never_adds_to_isr():
    """docs/protocol.md, "Controller events" (Unfence): "The ISR is not changed; unfencing never
    adds b back to an ISR"."""
    sim = Sim(conf(min_isr=3))
    sim.do(fence(3))
    expect(sim.s, isr=[1, 2], elr=[3], pe=1)
    sim.do(unfence(3))
    expect(sim.s, isr=[1, 2], elr=[3], pe=1, le=0, fenced=[])


def test_unfence_elects_only_on_leaderless_partition():
    """docs/protocol.md, "Controller events" (Unfence): "for every leaderless partition, re-run the
    election with b acceptable"; a partition with a leader is left alone even if b is replicas[0]
    in the ISR."""
    s, _ = run(conf(min_isr=1), {"leader": 2, "fenced": [1]}, unfence(1))
    expect(s, leader=2, le=0, pe=0, fenced=[])


def test_unfence_elects_isr_member_on_leaderless_partition():
    """docs/protocol.md, "Controller events" (Unfence): the election re-runs with b acceptable; b in
    the ISR is a clean leader."""
    s, _ = run(conf(min_isr=1), {"leader": -1, "isr": [2, 3], "fenced": [1, 2, 3]}, unfence(3))
    expect(s, leader=3, isr=[2, 3], rec="RECOVERED", le=1, pe=1)


# =========================================================================== controlled shutdown


def test_controlled_shutdown_of_leader_moves_leadership():
    """docs/protocol.md, "Controller events" (Controlled shutdown): "b stops being an acceptable
    leader and cannot be in an ISR; partitions with b in the ISR are processed as for fencing"
    (ReplicationControlManagerTest testProcessBrokerHeartbeatInControlledShutdown: isr [1,2],
    leader 1, LE1, PE1)."""
    s, _ = run(conf(replicas=(0, 1, 2), min_isr=2), None, cshut(0))
    expect(s, isr=[1, 2], leader=1, le=1, pe=1, shutting_down=[0], fenced=[])


def test_controlled_shutdown_last_member_with_elr():
    """docs/protocol.md, "Controller events" (Controlled shutdown, processed as fencing): the last
    member leaves the ISR, joins ELR below min ISR, leader -1, last_known_elr [b]."""
    s, _ = run(conf(min_isr=2), {"isr": [1]}, cshut(1))
    expect(s, isr=[], elr=[1], leader=NO_LEADER, lke=[1], le=1, pe=1)


def test_controlled_shutdown_then_shutdown_now_fences():
    """docs/protocol.md, "Controller events" (Controlled shutdown): the leader enters controlled
    shutdown; "a later shutdown-now fences it", writing nothing more for the partition (it left
    the ISR). A broker that leads nothing is told to shut down at once: fenced, never in
    controlled shutdown (BrokerHeartbeatManager.calculateNextBrokerState)."""
    sim = Sim(conf(min_isr=1))
    sim.do(cshut(1))
    expect(sim.s, isr=[2, 3], leader=2, pe=1, le=1, shutting_down=[1], fenced=[])
    sim.do(fence(1))
    expect(sim.s, isr=[2, 3], pe=1, fenced=[1], shutting_down=[1])
    sim.do(cshut(3))
    expect(sim.s, isr=[2], pe=2, le=1, fenced=[1, 3], shutting_down=[1])


# =========================================================================== register


def test_register_gets_new_larger_epoch_and_starts_fenced():
    """docs/protocol.md, "Controller events" (Register): "The new registration gets a new, larger
    broker epoch and starts fenced" (scenario default: new epoch = old + 1000; not shutting
    down)."""
    sim = Sim(conf(min_isr=1), {"in_controlled_shutdown": [3], "isr": [1, 2]})
    sim.do(register(3))
    expect(sim.s, fenced=[3], shutting_down=[])
    assert sim.s.ctrl.broker_epoch(3) == 1103
    sim.do(register(2, new_broker_epoch=5000))
    assert sim.s.ctrl.broker_epoch(2) == 5000
    expect(sim.s, fenced=[2, 3], isr=[1])


def test_register_clean_iff_previous_epoch_matches():
    """docs/protocol.md, "Controller events" (Register): "Clean iff the previous broker epoch read
    from its clean-shutdown file equals the epoch the controller has registered". Clean = like
    fencing (3 joins ELR); mismatched or absent (-1) = unclean (3 is not put in ELR)."""
    init = {"isr": [1, 2, 3]}
    clean, _ = run(conf(min_isr=3), init, register(3, previous_broker_epoch=103))
    expect(clean, isr=[1, 2], elr=[3])
    assert clean.hist.unclean_shutdowns == 0
    stale, _ = run(conf(min_isr=3), init, register(3, previous_broker_epoch=102))
    expect(stale, isr=[1, 2], elr=[])
    assert stale.hist.unclean_shutdowns == 1
    absent, _ = run(conf(min_isr=3), init, register(3))
    expect(absent, isr=[1, 2], elr=[])
    assert absent.hist.unclean_shutdowns == 1
    flag, _ = run(conf(min_isr=3), init, register(3, clean_shutdown=True))
    expect(flag, isr=[1, 2], elr=[3])


def test_first_registration_is_unclean():
    """docs/protocol.md, "Controller events" (Register): "(-1 when the file is absent; a first
    registration is unclean)"."""
    sim = Sim(conf(min_isr=1))
    sim.do(register(4, previous_broker_epoch=NO_EPOCH, new_broker_epoch=900))
    assert sim.s.hist.unclean_shutdowns == 1
    assert 4 in sim.s.ctrl.registered and sim.s.ctrl.broker_epoch(4) == 900
    expect(sim.s, fenced=[4], pe=0)


def test_register_unclean_removes_from_isr_and_elr_of_partition():
    """docs/protocol.md, "Controller events" (Register, unclean): "b is removed from the ISR and
    from the ELR of every partition, and is not put in ELR even if it was the last ISR member.
    last_known_elr is not changed"."""
    sim = Sim(conf(min_isr=3), {"isr": [3], "elr": [1, 2], "leader": 3, "fenced": [1, 2]})
    sim.do(register(3))
    expect(sim.s, isr=[], elr=[1, 2], leader=NO_LEADER, lke=[3], le=1, pe=1)
    sim.do(register(2))
    expect(sim.s, isr=[], elr=[1], lke=[3], leader=NO_LEADER, le=1, pe=2)


def test_unclean_shutdown_member_leaving_isr_not_added_to_elr():
    """docs/protocol.md, "Controller events" (Register): "Unclean (ELR enabled): b is removed from
    the ISR ... and is not put in ELR"; a clean registration is processed like fencing, so b joins
    ELR."""
    unclean, _ = run(conf(min_isr=3), {"isr": [1, 2], "elr": [3]}, register(2))
    expect(unclean, isr=[1], elr=[3], leader=1, pe=1)
    clean, _ = run(conf(min_isr=3), {"isr": [1, 2], "elr": [3]}, register(2, previous_broker_epoch=102))
    expect(clean, isr=[1], elr=[2, 3], leader=1, pe=1)


def test_unclean_registration_of_last_isr_leader_sets_lke():
    """docs/protocol.md, "Where Kafka and the KIP texts differ" (ReplicationControlManagerTest
    testEligibleLeaderReplicas_UncleanShutdown): an unclean registration of the leader that was
    the last ISR member makes the partition leaderless and sets last_known_elr = [it], although
    it is not put in ELR."""
    sim = Sim(conf(replicas=(0, 1, 2, 3), min_isr=3))
    sim.do(fence(1), fence(2), fence(3))
    expect(sim.s, isr=[0], elr=[2, 3], pe=3)
    sim.do(register(3))
    expect(sim.s, isr=[0], elr=[2], lke=[], pe=4, le=0)
    sim.do(register(0))
    expect(sim.s, isr=[], elr=[2], lke=[0], leader=NO_LEADER, le=1, pe=5, fenced=[0, 1, 2, 3])
    assert sim.s.ctrl.broker_epoch(0) == 1100


def test_unclean_registration_without_elr_is_processed_like_fence():
    """docs/protocol.md, "Controller events" (Register): "Clean, or ELR disabled: processed like
    fencing" (QuorumControllerTest testUncleanShutdownElrDisabled): each unclean registration of
    the leader moves leadership, bumps LE and removes it from the ISR; the last one leaves ISR
    [b], leader -1."""
    sim = Sim(conf(min_isr=2, elr=False))
    sim.do(register(1))
    expect(sim.s, leader=2, isr=[2, 3], le=1)
    sim.do(register(2))
    expect(sim.s, leader=3, isr=[3], le=2)
    sim.do(register(3))
    expect(sim.s, leader=NO_LEADER, isr=[3], le=3, elr=[], lke=[])


# =========================================================================== min.insync.replicas change


def test_min_isr_change_clears_elr_kafka_example():
    """docs/protocol.md, "Controller events" (min.insync.replicas change): "ELR and last_known_elr
    are cleared for the topic on ANY change ... partition epoch +1" (ReplicationControlManagerTest
    testElrsRemovedOnMinIsrUpdate)."""
    sim = Sim(conf(replicas=(1, 2, 4), min_isr=2))
    sim.do(fence(4))
    expect(sim.s, isr=[1, 2])
    sim.do(fence(1))
    expect(sim.s, leader=2, isr=[2], elr=[1], le=1, pe=2)
    assert sim.do(set_min_isr(1)) is None
    expect(sim.s, elr=[], lke=[], pe=3, le=1, leader=2, effective_min_isr=1)


def test_min_isr_change_to_same_value_clears_nothing():
    """docs/protocol.md, "Controller events" (min.insync.replicas change): setting the value the
    topic already has writes no ConfigRecord, so no ClearElrRecord (Kafka 4.x's
    ConfigurationControlManager); any other value clears."""
    sim = Sim(conf(min_isr=2), {"isr": [1], "elr": [2]})
    sim.do(set_min_isr(2))
    expect(sim.s, elr=[2], pe=0, le=0, isr=[1])
    sim.do(set_min_isr(3))
    expect(sim.s, elr=[], pe=1, le=0, isr=[1])


def test_min_isr_change_clears_last_known_elr_without_election():
    """docs/protocol.md, "Controller events" (min.insync.replicas change): it clears ELR and
    last_known_elr and "No leader election follows" - the leaderless partition stays
    leaderless."""
    init = {"isr": [], "elr": [2], "last_known_elr": [1], "leader": -1, "fenced": [1, 2],
            "leader_epoch": 4, "partition_epoch": 9}
    sim = Sim(conf(min_isr=2), init)
    sim.do(set_min_isr(3))
    expect(sim.s, elr=[], lke=[], leader=NO_LEADER, le=4, pe=10)
    sim.do(unfence(2), unfence(1))
    expect(sim.s, leader=NO_LEADER, isr=[], pe=10)


def test_min_isr_change_with_nothing_to_clear_bumps_nothing():
    """docs/protocol.md, "Controller events" (min.insync.replicas change): "partition epoch +1 only
    if something was non-empty" (ReplicationControlManagerTest
    testElrsRemovedShouldNotBumpPartitionEpochIfNoChange); the new value takes effect."""
    sim = Sim(conf(min_isr=2))
    sim.do(set_min_isr(3))
    expect(sim.s, pe=0, le=0, effective_min_isr=3)
    sim.do(fence(3))
    expect(sim.s, isr=[1, 2], elr=[3])


def test_kip966_min_isr_change_clears_only_when_new_min_fits_isr():
    """docs/protocol.md, "Where Kafka and the KIP texts differ" (min.insync.replicas change,
    KIP-966): "clears ELR only when the new min ISR <= |ISR|" (preset kip-966)."""
    cfg = conf(min_isr=3, preset="kip-966")
    sim = Sim(cfg, {"isr": [1, 2], "elr": [3]})
    sim.do(set_min_isr(3))
    expect(sim.s, elr=[3], pe=0)
    sim.do(set_min_isr(2))
    expect(sim.s, elr=[], pe=1)


# =========================================================================== admin elections


def test_preferred_election_not_needed():
    """docs/protocol.md, "Controller events" (admin elections): ELECTION_NOT_NEEDED when
    replicas[0] already leads."""
    sim = Sim(conf())
    assert sim.do(elect("preferred")) == "ELECTION_NOT_NEEDED"
    expect(sim.s, leader=1, le=0, pe=0)


def test_preferred_election_moves_to_replicas0():
    """docs/protocol.md, "Controller events" (admin elections): "PREFERRED (replicas[0] if valid
    ...)"."""
    s, err = run(conf(), {"leader": 2}, elect("preferred"))
    assert err is None
    expect(s, leader=1, isr=[1, 2, 3], le=1, pe=1, rec="RECOVERED")


def test_preferred_leader_not_available():
    """docs/protocol.md, "Controller events" (admin elections): PREFERRED falls back to "the current
    leader" when replicas[0] is not valid -> nothing changes: PREFERRED_LEADER_NOT_AVAILABLE."""
    sim = Sim(conf(), {"leader": 2, "isr": [2, 3]})
    before = sim.s.ctrl
    assert sim.do(elect("preferred")) == "PREFERRED_LEADER_NOT_AVAILABLE"
    assert sim.s.ctrl == before


def test_preferred_election_first_valid_replica_on_leaderless():
    """docs/protocol.md, "Controller events" (admin elections): PREFERRED "... else the first valid
    replica"."""
    s, err = run(conf(), {"leader": -1, "isr": [2, 3], "fenced": [1]}, elect("preferred"))
    assert err is None
    expect(s, leader=2, isr=[2, 3], rec="RECOVERED", le=1, pe=1)


def test_preferred_election_acceptable_last_known_leader():
    """docs/protocol.md, "Controller events" (admin elections): PREFERRED "... else the acceptable
    last known leader" (an unclean election: ISR [b], RECOVERING)."""
    s, err = run(conf(min_isr=2), {"leader": -1, "isr": [], "elr": [], "last_known_elr": [2],
                                   "fenced": [1]}, elect("preferred"))
    assert err is None
    expect(s, leader=2, isr=[2], rec="RECOVERING", lke=[], le=1, pe=1)


def test_preferred_election_never_unclean():
    """docs/protocol.md, "Controller events" (admin elections): PREFERRED has no unclean fallback
    even with the topic config (ReplicationControlManagerTest
    testPreferredElectionDoesNotTriggerUncleanElection, ELR off)."""
    sim = Sim(conf(elr=False))
    sim.do(fence(2), fence(3), fence(1))
    expect(sim.s, isr=[1], leader=NO_LEADER)
    sim.do(unfence(2), set_unclean(True))
    before = sim.s.ctrl
    assert sim.do(elect("preferred")) == "PREFERRED_LEADER_NOT_AVAILABLE"
    assert sim.s.ctrl == before


def test_unclean_admin_election():
    """docs/protocol.md, "Controller events" (admin elections): "UNCLEAN (only on a leaderless
    partition)", ELIGIBLE_LEADERS_NOT_AVAILABLE when nobody is acceptable; it does not need the
    topic config (ReplicationControlManagerTest testElectUncleanLeaders_WithoutElr)."""
    sim = Sim(conf(elr=False))
    assert sim.do(elect("unclean")) == "ELECTION_NOT_NEEDED"
    sim.do(fence(2), fence(3), fence(1))
    expect(sim.s, isr=[1], leader=NO_LEADER, le=1, pe=3)
    assert sim.do(elect("unclean")) == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    expect(sim.s, leader=NO_LEADER, pe=3)
    sim.do(unfence(2))
    expect(sim.s, leader=NO_LEADER, pe=3)
    assert sim.do(elect("unclean")) is None
    expect(sim.s, leader=2, isr=[2], rec="RECOVERING", le=2, pe=4)


def test_unclean_admin_election_prefers_clean_candidate():
    """docs/protocol.md, "The pipeline" (election) and "Controller events" (admin UNCLEAN): the
    candidate order applies (clean first): an acceptable ELR member with an empty ISR is a clean
    election, RECOVERED."""
    s, err = run(conf(min_isr=2), {"leader": -1, "isr": [], "elr": [3], "fenced": [1]}, elect("unclean"))
    assert err is None
    expect(s, leader=3, isr=[3], elr=[], rec="RECOVERED")


def test_unclean_admin_election_error_depends_on_record_not_leader():
    """docs/protocol.md, "Controller events" (admin elections, error names); Kafka's
    ReplicationControlManager.electLeaders: "If the builder returns no record: ... UNCLEAN ->
    ELIGIBLE_LEADERS_NOT_AVAILABLE. Otherwise NONE and the record is applied." Here the build
    clears a stale ELR (|ISR| >= min ISR) without a leader."""
    s, err = run(conf(min_isr=2), {"leader": -1, "isr": [2, 3], "elr": [1], "fenced": [1, 2, 3]},
                 elect("unclean"))
    assert err is None
    expect(s, leader=NO_LEADER, isr=[2, 3], elr=[], pe=1, le=0)


def test_designated_election_rules():
    """docs/protocol.md, "Controller events" (designated leader election): "only on a leaderless
    partition, only a replica that is in the replica set, registered and unfenced"."""
    init = {"leader": -1, "isr": [], "elr": [], "fenced": [1, 2], "brokers": [4]}
    tool = conf(designated_elections=True)
    assert run(tool, None, elect("designated", 2))[1] == "ELECTION_NOT_NEEDED"
    assert run(tool, init, elect("designated", 4))[1] == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    assert run(tool, init, elect("designated", 2))[1] == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    s, err = run(tool, init, elect("designated", 3))
    assert err is None
    expect(s, leader=3, isr=[3], rec="RECOVERING", le=1, pe=1)
    # No Kafka release has it: ElectLeaders refuses an election type it does not know.
    s, err = run(conf(), init, elect("designated", 3))
    assert err == "INVALID_REQUEST" and s.ctrl.partition.leader == NO_LEADER


def test_periodic_unclean_election_requires_topic_config():
    """docs/protocol.md, "Controller events": "A periodic task runs UNCLEAN elections on leaderless
    partitions of topics with unclean election enabled" (ReplicationControlManagerTest
    testMaybeTriggerUncleanLeaderElectionForLeaderlessPartitions)."""
    sim = Sim(conf(replicas=(1, 2, 4), elr=False))
    sim.do(fence(1), fence(2), fence(4))
    expect(sim.s, isr=[4], leader=NO_LEADER)
    sim.do(unfence(2))
    sim.do(PERIODIC)
    expect(sim.s, leader=NO_LEADER, isr=[4])
    sim.do(set_unclean(True))
    expect(sim.s, leader=NO_LEADER)
    sim.do(PERIODIC)
    expect(sim.s, leader=2, isr=[2], rec="RECOVERING")


def test_periodic_preferred_election_moves_the_leader_back_unasked_where_the_rule_runs_it():
    """docs/protocol.md, "Controller events": with auto_leader_rebalance the controller's periodic
    task (maybeBalancePartitionLeaders) runs the preferred election on a partition whose leader
    is not its first replica, as ElectLeaders would, answering nothing; where the preferred
    replica cannot lead it writes nothing; without the rule (the model's default) it is off."""
    on = conf(auto_leader_rebalance=True)
    s, err = run(on, {"leader": 2}, REBALANCE)
    assert err is None
    expect(s, leader=1, isr=[1, 2, 3], le=1, pe=1, rec="RECOVERED")
    assert s.ctrl == run(on, {"leader": 2}, elect("preferred"))[0].ctrl
    sim = Sim(on, {"leader": 2, "isr": [2, 3]})
    before = sim.s.ctrl
    assert sim.do(REBALANCE) is None and sim.s.ctrl == before     # 1 not in the ISR: nothing written
    s, err = run(on, {"leader": -1, "isr": [2, 3], "fenced": [1]}, REBALANCE)
    expect(s, leader=2, le=1, pe=1)                                 # a leaderless partition is imbalanced too
    off = Sim(conf(), {"leader": 2})
    before = off.s.ctrl
    assert off.do(REBALANCE) is None and off.s.ctrl == before


def test_unclean_topic_elects_at_unfence():
    """docs/protocol.md, "The pipeline" (election fallback) inside "Controller events": topics
    with the config run UNCLEAN elections inside unfence, no need to wait for the periodic
    task."""
    sim = Sim(conf(replicas=(1, 2, 4), elr=False, unclean_leader_election=True))
    sim.do(fence(1), fence(2), fence(4))
    expect(sim.s, isr=[4], leader=NO_LEADER)
    sim.do(unfence(2))
    expect(sim.s, leader=2, isr=[2], rec="RECOVERING")


# =========================================================================== reassignment


def test_reassignment_adding_replica():
    """docs/protocol.md, "Controller events" (reassignment): replicas = target + removing, adding
    listed, no leader bump; completes once the ISR covers the target."""
    sim = Sim(conf(min_isr=2, brokers=[4]))
    assert sim.do(reassign([1, 2, 3, 4])) is None
    expect(sim.s, replicas=[1, 2, 3, 4], adding=[4], removing=[], isr=[1, 2, 3], leader=1, le=0, pe=1)
    assert sim.do(alter(0, 1, [1, 2, 3, 4])) is None
    expect(sim.s, replicas=[1, 2, 3, 4], adding=[], removing=[], isr=[1, 2, 3, 4], le=0, pe=2)


def test_reassignment_not_complete_until_isr_covers_target():
    """docs/protocol.md, "Controller events" (reassignment): completion requires the ISR (without
    removing) to cover the target."""
    sim = Sim(conf(min_isr=1, brokers=[4]))
    sim.do(reassign([1, 2, 4]))
    expect(sim.s, replicas=[1, 2, 4, 3], adding=[4], removing=[3], le=0, pe=1)
    assert sim.do(alter(0, 1, [1, 2])) is None
    expect(sim.s, replicas=[1, 2, 4, 3], adding=[4], removing=[3], isr=[1, 2], le=0, pe=2)
    assert sim.do(alter(0, 2, [1, 2, 4])) is None
    expect(sim.s, replicas=[1, 2, 4], adding=[], removing=[], isr=[1, 2, 4], leader=1, le=1, pe=3)


def test_reassignment_removing_replica_completes_at_once_with_leader_bump():
    """docs/protocol.md, "Controller events" (reassignment) and "The pipeline" (reassignment
    completion): a pure shrink whose ISR covers the target completes at once, and removing
    replicas rewrites the leader: leader_epoch +1."""
    s, err = run(conf(min_isr=1), None, reassign([1, 2]))
    assert err is None
    expect(s, replicas=[1, 2], adding=[], removing=[], isr=[1, 2], leader=1, le=1, pe=1)


def test_reassignment_kafka_keeps_removed_replica_in_elr():
    """docs/protocol.md, "Where Kafka and the KIP texts differ" (reassignment): "(Kafka enforces
    neither: a removed replica can stay in ELR)"."""
    s, _ = run(conf(min_isr=3), {"isr": [1, 2], "elr": [3], "fenced": [3]}, reassign([1, 2]))
    expect(s, replicas=[1, 2], isr=[1, 2], elr=[3], le=1, pe=1)


def test_reassignment_kip_elr_keeps_only_final_replicas():
    """docs/protocol.md, "Where Kafka and the KIP texts differ" (reassignment, KIP-966): "ELR keeps
    only final replicas" (preset kip-966)."""
    s, _ = run(conf(min_isr=3, preset="kip-966"), {"isr": [1, 2], "elr": [3], "fenced": [3]},
               reassign([1, 2]))
    expect(s, replicas=[1, 2], isr=[1, 2], elr=[], le=1, pe=1)
