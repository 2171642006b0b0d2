"""The partition-change pipeline (specs/pipeline.py, Kafka's PartitionChangeBuilder): epochs, effective
min ISR, the ELR update, leader election, last_known_elr and the last replica standing with ELR disabled
(docs/protocol.md, "The pipeline"). Expectations follow Kafka; the KIP-966 text runs under
`use_last_known_leader=False` (docs/protocol.md, "Where Kafka and the KIP texts differ").
"""
from __future__ import annotations

from specs.state import NO_LEADER

from .helpers import Sim, alter, conf, cshut, elect, expect, fence, register, run, unfence

# =========================================================================== epochs


def test_isr_shrink_bumps_partition_epoch_only():
    """docs/protocol.md, "The pipeline" (epochs): "every change bumps partition_epoch by one ...
    ISR shrinks do not bump the leader epoch." """
    s, err = run(conf(), None, alter(0, 0, [1, 2]))
    assert err is None
    expect(s, isr=[1, 2], leader=1, le=0, pe=1)


def test_fence_of_follower_bumps_partition_epoch_only():
    """docs/protocol.md, "The pipeline" (epochs): "ISR shrinks do not bump the leader epoch" (a
    fence of a follower is one)."""
    s, _ = run(conf(), None, fence(3))
    expect(s, isr=[1, 2], leader=1, le=0, pe=1)


def test_each_change_bumps_partition_epoch_by_exactly_one():
    """docs/protocol.md, "The pipeline" (epochs): "every change bumps `partition_epoch` by one." """
    sim = Sim(conf(min_isr=1))
    for n, b in enumerate((3, 2), start=1):
        sim.do(fence(b))
        expect(sim.s, pe=n, le=0)


def test_leader_change_bumps_leader_epoch():
    """docs/protocol.md, "The pipeline" (epochs): "`leader_epoch` is bumped only when the leader
    field is written" (new leader)."""
    s, _ = run(conf(), None, fence(1))
    expect(s, leader=2, isr=[2, 3], le=1, pe=1)


def test_leader_becoming_none_bumps_leader_epoch():
    """docs/protocol.md, "The pipeline" (epochs): "`leader_epoch` is bumped only when the leader
    field is written (including a leader becoming -1)." """
    s, _ = run(conf(replicas=(1, 2), min_isr=1), None, fence(2), fence(1))
    expect(s, leader=NO_LEADER, le=1, pe=2)


def test_noop_alter_partition_bumps_nothing():
    """docs/protocol.md, "The pipeline": "A change that changes nothing writes nothing and bumps
    nothing." """
    sim = Sim(conf(), {"leader_epoch": 3, "partition_epoch": 7})
    before = sim.s
    assert sim.do(alter(3, 7, [1, 2, 3])) is None
    expect(sim.s, le=3, pe=7, isr=[1, 2, 3])
    assert sim.s.ctrl == before.ctrl


def test_noop_events_bump_nothing():
    """docs/protocol.md, "The pipeline": "A change that changes nothing writes nothing and bumps
    nothing": fencing an already fenced broker, unfencing when the partition has a leader."""
    sim = Sim(conf(), {"fenced": [3], "isr": [1, 2]})
    sim.do(fence(3))
    expect(sim.s, pe=0, le=0, isr=[1, 2])
    sim.do(unfence(3))
    expect(sim.s, pe=0, le=0, isr=[1, 2], fenced=[])


def test_isr_expansion_does_not_bump_leader_epoch():
    """docs/protocol.md, "The pipeline" (epochs): "`leader_epoch` is bumped only when the leader
    field is written"; an ISR expansion writes only the ISR."""
    s, err = run(conf(), {"isr": [1, 2]}, alter(0, 0, [1, 2, 3]))
    assert err is None
    expect(s, isr=[1, 2, 3], le=0, pe=1)


def test_leader_epoch_bump_on_isr_shrink_flag():
    """docs/protocol.md, "Rule switches": `leader_epoch_bump_on_isr_shrink` (metadata versions
    before 3.6): an ISR shrink bumps the leader epoch; an expansion still does not."""
    cfg = conf(leader_epoch_bump_on_isr_shrink=True)
    sim = Sim(cfg)
    assert sim.do(alter(0, 0, [1, 2])) is None
    expect(sim.s, isr=[1, 2], leader=1, le=1, pe=1)
    assert sim.do(alter(1, 1, [1, 2, 3])) is None
    expect(sim.s, isr=[1, 2, 3], le=1, pe=2)
    sim.do(fence(3))
    expect(sim.s, isr=[1, 2], leader=1, le=2, pe=3)


# =========================================================================== effective min ISR


def test_effective_min_isr_is_capped_by_replication_factor():
    """docs/protocol.md, "The pipeline": "Effective min ISR = min(min.insync.replicas, number of
    replicas)." With min.insync.replicas 5 and RF 3 a full ISR is at min ISR (no ELR), two
    members are below."""
    sim = Sim(conf(min_isr=5))
    expect(sim.s, effective_min_isr=3)
    sim.do(fence(3))
    expect(sim.s, isr=[1, 2], elr=[3])
    sim.do(unfence(3))
    assert sim.do(alter(0, 1, [1, 2, 3])) is None
    expect(sim.s, isr=[1, 2, 3], elr=[])


def test_effective_min_isr_below_rf_uses_config():
    """docs/protocol.md, "The pipeline": "Effective min ISR = min(min.insync.replicas, number of
    replicas)": with min 2 and RF 3, an ISR of 2 is at min ISR and nobody enters ELR."""
    sim = Sim(conf(min_isr=2))
    expect(sim.s, effective_min_isr=2)
    sim.do(fence(3))
    expect(sim.s, isr=[1, 2], elr=[])


# =========================================================================== ELR update


def test_elr_formula_adds_members_of_current_isr():
    """docs/protocol.md, "The pipeline" (ELR update): "ELR = (old ELR ∪ CURRENT ISR) − target ISR
    − ...": members that leave while the ISR is below min ISR join ELR (KIP-966;
    ReplicationControlManagerTest testEligibleLeaderReplicas_ShrinkAndExpandIsr)."""
    s, err = run(conf(replicas=(0, 1, 2), min_isr=2), None, alter(0, 0, [0]))
    assert err is None
    expect(s, isr=[0], elr=[1, 2], lke=[], leader=0, le=0, pe=1)


def test_alter_partition_shrink_below_min_isr_kafka_example():
    """docs/protocol.md, "The pipeline" (ELR update; PartitionChangeBuilderTest
    testEligibleLeaderReplicas_IsrShrinkBelowMinISR): ISR [1,2,3,4] -> [1,2] with min ISR 3 gives
    ELR [3,4], epochs LE100/PE201."""
    s, err = run(conf(replicas=(1, 2, 3, 4), min_isr=3), {"leader_epoch": 100, "partition_epoch": 200},
                 alter(100, 200, [1, 2]))
    assert err is None
    expect(s, isr=[1, 2], elr=[3, 4], lke=[], leader=1, le=100, pe=201)


def test_member_leaving_while_isr_at_min_is_not_in_elr():
    """docs/protocol.md, "The pipeline" (ELR update): "if |target ISR| >= min ISR, ELR ...
    become[s] empty", so a member that left while the ISR stayed at min ISR never enters ELR
    later; the next one does."""
    sim = Sim(conf(min_isr=2))
    sim.do(fence(3))
    expect(sim.s, isr=[1, 2], elr=[])
    sim.do(fence(2))
    expect(sim.s, isr=[1], elr=[2], leader=1)


def test_fencing_does_not_remove_from_elr():
    """docs/protocol.md, "The pipeline" (ELR update): "Fencing does not remove anyone from ELR."
    Fencing an ELR member that is not in the ISR changes nothing."""
    sim = Sim(conf(min_isr=3), {"isr": [1], "elr": [2, 3]})
    sim.do(fence(2))
    expect(sim.s, isr=[1], elr=[2, 3], pe=0, le=0, fenced=[2])


def test_fenced_elr_members_stay_when_isr_shrinks_again():
    """docs/protocol.md, "The pipeline" (ELR update): ELR = (old ELR ∪ current ISR) − target ISR;
    fenced ELR members stay."""
    sim = Sim(conf(replicas=(1, 2, 3, 4), min_isr=3))
    sim.do(fence(4), fence(3))
    expect(sim.s, isr=[1, 2], elr=[3])   # 4 left while the ISR was at min ISR
    sim.do(fence(2))
    expect(sim.s, isr=[1], elr=[2, 3], fenced=[2, 3, 4])


def test_elr_cleared_when_isr_reaches_min_isr():
    """docs/protocol.md, "The pipeline" (ELR update): "if |target ISR| >= min ISR, ELR and
    last_known_elr become empty" (ReplicationControlManagerTest
    testEligibleLeaderReplicas_ShrinkAndExpandIsr step 2)."""
    sim = Sim(conf(replicas=(0, 1, 2), min_isr=2))
    sim.do(alter(0, 0, [0]))
    expect(sim.s, elr=[1, 2])
    assert sim.do(alter(0, 1, [0, 1])) is None
    expect(sim.s, isr=[0, 1], elr=[], lke=[], le=0, pe=2)


def test_default_mode_reaching_min_isr_keeps_last_known_elr():
    """docs/protocol.md, "Where Kafka and the KIP texts differ": in the default (Kafka) mode reaching
    min ISR clears ELR but not last_known_elr (only a leader >= 0 being written clears it)."""
    s, err = run(conf(replicas=(1, 2, 3, 4), min_isr=3),
                 {"isr": [1, 2], "elr": [3], "last_known_elr": [4], "fenced": [4]},
                 alter(0, 0, [1, 2, 3]))
    assert err is None
    expect(s, isr=[1, 2, 3], elr=[], lke=[4], pe=1, le=0)


def test_kip_mode_reaching_min_isr_clears_last_known_elr():
    """docs/protocol.md, "The pipeline" (ELR update) as KIP-966 states it (PartitionChangeBuilderTest
    testEligibleLeaderReplicas_IsrExpandAboveMinISR, use_last_known_leader=false): at min ISR
    both ELR and last_known_elr become empty."""
    s, err = run(conf(replicas=(1, 2, 3, 4), min_isr=3, use_last_known_leader=False),
                 {"isr": [1, 2], "elr": [3], "last_known_elr": [4], "leader_epoch": 100,
                  "partition_epoch": 200, "fenced": [4]},
                 alter(100, 200, [1, 2, 3]))
    assert err is None
    expect(s, isr=[1, 2, 3], elr=[], lke=[], le=100, pe=201)


def test_unclean_shutdown_removed_from_elr():
    """docs/protocol.md, "The pipeline" (ELR update): ELR = ... "− replicas that had an unclean
    shutdown in this event" (PartitionChangeBuilderTest
    testEligibleLeaderReplicas_RemoveUncleanShutdownReplicasFromElr, default mode)."""
    s, _ = run(conf(replicas=(1, 2, 3, 4), min_isr=3), {"isr": [1], "elr": [2, 3]}, register(3))
    expect(s, isr=[1], elr=[2], lke=[], leader=1, le=0, pe=1, fenced=[3])


def test_elr_disabled_never_populates_elr():
    """docs/protocol.md, "The pipeline": "ELR update (only with ELR enabled)"."""
    s, _ = run(conf(min_isr=3, elr=False), None, alter(0, 0, [1]))
    expect(s, isr=[1], elr=[], lke=[], pe=1)


# =========================================================================== leader election


def test_election_in_replica_order_from_elr():
    """docs/protocol.md, "The pipeline" (election): "Candidates are tried in replica order" and "A
    leader taken from ELR is a clean election: ISR = [leader], it leaves ELR, the rest of ELR
    stays" (ReplicationControlManagerTest testEligibleLeaderReplicas_CleanElection)."""
    sim = Sim(conf(replicas=(0, 1, 2, 3), min_isr=3))
    sim.do(fence(1), fence(2), fence(3))
    expect(sim.s, isr=[0], elr=[2, 3], leader=0, pe=3)
    sim.do(unfence(2), unfence(3))
    expect(sim.s, isr=[0], elr=[2, 3], leader=0, pe=3)
    sim.do(fence(0))
    expect(sim.s, leader=2, isr=[2], elr=[0, 3], lke=[], le=1, pe=4, rec="RECOVERED")
    assert sim.s.hist.unclean_elections == 0


def test_election_in_replica_order_from_isr():
    """docs/protocol.md, "The pipeline" (election): "Candidates are tried in replica order", not ISR order."""
    s, _ = run(conf(replicas=(1, 2, 3)), {"isr": [1, 3, 2]}, fence(1))
    expect(s, leader=2, le=1)


def test_current_leader_kept_while_valid():
    """docs/protocol.md, "The pipeline" (election): "the current leader is kept while valid" (even if
    not replicas[0])."""
    s, _ = run(conf(min_isr=1), {"leader": 3}, fence(2))
    expect(s, leader=3, isr=[1, 3], le=0, pe=1)


def test_elr_election_keeps_rest_of_elr_kafka_example():
    """docs/protocol.md, "The pipeline" (election): ELR election is clean, ISR = [leader], rest of
    ELR stays (PartitionChangeBuilderTest testEligibleLeaderReplicas_ElrCanBeElected:
    LE101/PE201, RECOVERED)."""
    s, _ = run(conf(replicas=(1, 2, 3, 4), min_isr=3),
               {"isr": [1], "elr": [3], "leader_epoch": 100, "partition_epoch": 200}, fence(1))
    expect(s, leader=3, isr=[3], elr=[1], lke=[], rec="RECOVERED", le=101, pe=201)


def test_elr_not_a_candidate_while_target_isr_nonempty():
    """docs/protocol.md, "The pipeline" (election): a valid leader is in the target ISR, "or (only
    when the target ISR is empty) in the ELR". An unfenced ELR member is not elected while a
    fenced member remains in the ISR; the partition becomes leaderless."""
    s, _ = run(conf(min_isr=3), {"isr": [1, 2], "elr": [3], "fenced": [2]}, fence(1))
    expect(s, leader=NO_LEADER, isr=[2], elr=[1, 3], lke=[1], le=1, pe=1)


def test_shutting_down_replica_not_acceptable_leader():
    """docs/protocol.md, "The pipeline" (election): acceptable = "registered, unfenced, not in controlled
    shutdown"."""
    s, _ = run(conf(min_isr=1), {"in_controlled_shutdown": [2]}, fence(1))
    expect(s, leader=3, isr=[2, 3], le=1)


def test_elr_member_in_controlled_shutdown_not_elected():
    """docs/protocol.md, "The pipeline" (election): a valid ELR leader must be acceptable:
    "registered, unfenced, not in controlled shutdown"."""
    s, _ = run(conf(replicas=(1, 2, 3), min_isr=3), {"isr": [1], "elr": [2, 3], "in_controlled_shutdown": [2]},
               fence(1))
    expect(s, leader=3, isr=[3], elr=[1, 2])


def test_elr_election_keeps_recovery_state_and_leaderless_keeps_recovering():
    """docs/protocol.md, "The pipeline" (election): a leader from ELR is "a clean election" - it
    does not set RECOVERING nor clear it (the state stays RECOVERED or RECOVERING as it was); a
    leader moving to -1 leaves RECOVERING as it is (PartitionChangeBuilderTest
    testChangeInLeadershipDoesNotChangeRecoveryState)."""
    sim = Sim(conf(min_isr=3), {"isr": [1], "elr": [2], "leader_recovery_state": "RECOVERING", "fenced": [3]})
    sim.do(fence(1))
    expect(sim.s, leader=2, isr=[2], elr=[1], rec="RECOVERING", le=1)
    sim2 = Sim(conf(min_isr=3), {"isr": [1], "leader_recovery_state": "RECOVERING", "fenced": [2, 3]})
    sim2.do(fence(1))
    expect(sim2.s, leader=NO_LEADER, rec="RECOVERING", le=1)


def test_last_known_leader_elected_uncleanly():
    """docs/protocol.md, "The pipeline" (election): "If none and ISR and ELR are both empty, the
    last known leader (last_known_elr = [b]) is elected if acceptable, as an UNCLEAN election" ->
    ISR [b], RECOVERING, last_known_elr [] (PartitionChangeBuilderTest
    testEligibleLeaderReplicas_ElectLastKnownLeader)."""
    s, err = run(conf(replicas=(1, 2, 3, 4), min_isr=3),
                 {"isr": [], "elr": [], "last_known_elr": [1], "leader": -1, "leader_epoch": 100,
                  "partition_epoch": 200, "fenced": [1, 2, 3, 4]},
                 unfence(1))
    assert err is None
    expect(s, leader=1, isr=[1], elr=[], lke=[], rec="RECOVERING", le=101, pe=201)
    assert s.hist.unclean_elections == 1


def test_last_known_leader_not_elected_while_fenced():
    """docs/protocol.md, "The pipeline" (election): last known leader elected only "if acceptable"
    (PartitionChangeBuilderTest testEligibleLeaderReplicas_NotEligibleLastKnownLeader; the 4.0.x
    bug elected it)."""
    init = {"isr": [], "elr": [], "last_known_elr": [1], "leader": -1, "fenced": [1, 2, 3]}
    sim = Sim(conf(min_isr=3), init)
    before = sim.s.ctrl
    assert sim.do(elect("unclean")) == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    assert sim.s.ctrl == before


def test_last_known_leader_needs_empty_elr():
    """docs/protocol.md, "The pipeline" (election): the last known leader only "if none and ISR and
    ELR are both empty" (PartitionChangeBuilderTest
    testEligibleLeaderReplicas_ElectLastKnownLeaderShouldFail: a fenced ELR member blocks it)."""
    init = {"isr": [], "elr": [3], "last_known_elr": [1], "leader": -1, "fenced": [3]}
    sim = Sim(conf(min_isr=3), init)
    before = sim.s.ctrl
    assert sim.do(elect("preferred")) == "PREFERRED_LEADER_NOT_AVAILABLE"
    assert sim.s.ctrl == before


def test_last_known_leader_before_unclean_topic_fallback():
    """docs/protocol.md, "The pipeline" (election order): the last known leader is tried before
    "If still none and the topic has unclean.leader.election.enable, the first acceptable replica
    in replica order"."""
    s, _ = run(conf(min_isr=2, unclean_leader_election=True),
               {"leader": -1, "isr": [], "elr": [], "last_known_elr": [3], "fenced": [3]}, unfence(3))
    expect(s, leader=3, isr=[3], rec="RECOVERING", lke=[])


def test_unclean_topic_fallback_on_fence_with_elr():
    """docs/protocol.md, "The pipeline" (election): "If still none and the topic has
    unclean.leader.election.enable, the first acceptable replica in replica order is elected,
    UNCLEAN", which "sets ISR = [leader], ELR = [], last_known_elr = [], and
    leader_recovery_state = RECOVERING"."""
    s, _ = run(conf(min_isr=2, unclean_leader_election=True), {"isr": [1]}, fence(1))
    expect(s, leader=2, isr=[2], elr=[], lke=[], rec="RECOVERING", le=1, pe=1)
    assert s.hist.unclean_elections == 1


def test_no_unclean_fallback_without_topic_config():
    """docs/protocol.md, "The pipeline" (election): "Otherwise leader = -1" (and the last leader
    joins ELR / lke)."""
    s, _ = run(conf(min_isr=2), {"isr": [1]}, fence(1))
    expect(s, leader=NO_LEADER, isr=[], elr=[1], lke=[1], rec="RECOVERED", le=1, pe=1)


# =========================================================================== last_known_elr


def test_lke_set_when_leaderless_with_nonempty_isr():
    """docs/protocol.md, "The pipeline" (last_known_elr): "set to [old leader] when the partition
    becomes leaderless and it was empty" (also when the ISR stays non-empty)."""
    s, _ = run(conf(min_isr=2), {"isr": [1, 2], "fenced": [2]}, fence(1))
    expect(s, leader=NO_LEADER, isr=[2], elr=[1], lke=[1], le=1, pe=1)


def test_lke_not_overwritten_when_nonempty():
    """docs/protocol.md, "The pipeline" (last_known_elr): set to [old leader] only when "it was empty"."""
    s, _ = run(conf(min_isr=2), {"leader": 2, "isr": [2], "last_known_elr": [3], "fenced": [1, 3]},
               fence(2))
    expect(s, leader=NO_LEADER, isr=[], elr=[2], lke=[3])


def test_lke_cleared_when_leader_elected():
    """docs/protocol.md, "The pipeline" (last_known_elr): "cleared when a leader >= 0 is set"
    (QuorumControllerTest testUncleanShutdownBrokerElrEnabled: unfence b elects it from ELR)."""
    sim = Sim(conf(min_isr=2))
    sim.do(fence(1), fence(2), fence(3))
    expect(sim.s, isr=[], leader=NO_LEADER, elr=[2, 3], lke=[3])
    sim.do(register(3))
    expect(sim.s, elr=[2], lke=[3], leader=NO_LEADER)
    before = sim.s.ctrl.partition
    sim.do(register(2, previous_broker_epoch=102))
    assert sim.p == before
    sim.do(unfence(2))
    expect(sim.s, leader=2, isr=[2], elr=[], lke=[], rec="RECOVERED")


def test_kip_mode_last_known_elr_keeps_unclean_shutdown_elr_members():
    """docs/protocol.md, "Where Kafka and the KIP texts differ" (last_known_elr): "The KIP instead
    keeps in last_known_elr the ELR members removed by an unclean shutdown"
    (PartitionChangeBuilderTest testEligibleLeaderReplicas_RemoveUncleanShutdownReplicasFromElr,
    KIP mode: lke [3])."""
    s, _ = run(conf(replicas=(1, 2, 3, 4), min_isr=3, use_last_known_leader=False),
               {"isr": [1], "elr": [2, 3]}, register(3))
    expect(s, isr=[1], elr=[2], lke=[3], leader=1, le=0, pe=1)


def test_kip_mode_last_known_elr_survives_isr_change_below_min():
    """docs/protocol.md, "Where Kafka and the KIP texts differ" (PartitionChangeBuilderTest
    testEligibleLeaderReplicas_IsrAddNewMemberNotInELR): below min ISR, last_known_elr keeps
    earlier members not back in the ISR or ELR."""
    s, err = run(conf(replicas=(1, 2, 3, 4), min_isr=3, use_last_known_leader=False),
                 {"isr": [1], "elr": [3], "last_known_elr": [2], "fenced": [2, 3]},
                 alter(0, 0, [1, 4]))
    assert err is None
    expect(s, isr=[1, 4], elr=[3], lke=[2], pe=1, le=0)


def test_kip_mode_tracks_separate_last_known_leader():
    """docs/protocol.md, "Where Kafka and the KIP texts differ": "it tracks a separate last known
    leader" (KIP-966: with unclean.leader.election.enable false, "elect the LastKnownLeader once
    it is unfenced")."""
    sim = Sim(conf(min_isr=2, use_last_known_leader=False))
    sim.do(fence(3), fence(2), fence(1))
    expect(sim.s, leader=NO_LEADER, isr=[], elr=[1, 2])
    assert sim.p.last_known_leader == 1
    sim.do(register(1), register(2))        # unclean: both leave ELR
    expect(sim.s, leader=NO_LEADER, isr=[], elr=[], lke=[1, 2])
    sim.do(unfence(1))
    expect(sim.s, leader=1, isr=[1], rec="RECOVERING", elr=[], lke=[])


# =========================================================================== ELR disabled


def test_last_replica_standing_without_elr():
    """docs/protocol.md, "The pipeline" (ELR disabled): "With ELR disabled the ISR is never written
    empty: the last ISR member stays in the ISR when it is fenced, and the leader becomes -1"
    (LE+1, PE+1)."""
    sim = Sim(conf(min_isr=2, elr=False))
    sim.do(fence(2), fence(3))
    expect(sim.s, isr=[1], leader=1, le=0, pe=2)
    sim.do(fence(1))
    expect(sim.s, isr=[1], leader=NO_LEADER, elr=[], lke=[], le=1, pe=3)


def test_last_replica_standing_controlled_shutdown_without_elr():
    """docs/protocol.md, "The pipeline" (ELR disabled) with controlled shutdown: "With ELR off,
    controlled shutdown of the last member leaves ISR [b] and sets leader -1"."""
    s, _ = run(conf(min_isr=2, elr=False), {"isr": [1]}, cshut(1))
    expect(s, isr=[1], leader=NO_LEADER, le=1, pe=1, elr=[], lke=[])


def test_last_replica_standing_reelected_cleanly_on_unfence():
    """docs/protocol.md, "The pipeline" (ELR disabled) and "Controller events" (Unfence): the
    standing member is in the ISR, so unfencing it re-elects it cleanly (RECOVERED, ISR
    unchanged)."""
    sim = Sim(conf(min_isr=2, elr=False))
    sim.do(fence(2), fence(3), fence(1))
    sim.do(unfence(2))
    expect(sim.s, leader=NO_LEADER, isr=[1], pe=3)
    sim.do(unfence(1))
    expect(sim.s, leader=1, isr=[1], rec="RECOVERED", le=2, pe=4)
