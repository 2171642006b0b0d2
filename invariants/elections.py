"""Step properties of leader elections: who may be elected, and when an election may be
unclean."""
from __future__ import annotations

from invariants import explain as E
from invariants import twins as Z
from invariants.registry import TOLERANCE, step_invariant
from specs.kernel.properties import step_holds



@step_invariant("LeaderElectedRegisteredUnfenced", "election", explain=E.elected_unacceptable,
                symbolic=Z.leader_elected_registered_unfenced, proved=True)
def leader_elected_registered_unfenced(cfg, prev, label, s) -> bool:
    """A new leader is an acceptable leader: registered, unfenced, not in controlled shutdown
    (docs/protocol.md, "The pipeline"). The unclean-recovery tool proposal (KAFKA-20098) asks
    the same of a designated leader: in the replica set, unfenced, with an online replica."""
    return step_holds(cfg, prev, label, s, "LeaderElectedRegisteredUnfenced")


@step_invariant("ElectedLeaderWasCandidate", "election", explain=E.elected_outside_candidates,
                symbolic=Z.elected_leader_was_candidate, proved=True)
def elected_leader_was_candidate(cfg, prev, label, s) -> bool:
    """KIP-966: "In addition to the ISR members, replicas in ELR are also eligible for leader
    election during a clean election process." A clean election takes its leader from the ISR
    or the ELR; any other choice must be flagged unclean (leader_recovery_state RECOVERING)."""
    return step_holds(cfg, prev, label, s, "ElectedLeaderWasCandidate")


@step_invariant("UncleanElectionOnlyAfterMinIsrUncleanShutdowns", "election", explain=E.unclean_election_too_early,
                symbolic=Z.unclean_election_only_after_min_isr_unclean_shutdowns, proved=True)
def unclean_election_only_after_min_isr_unclean_shutdowns(cfg, prev, label, s) -> bool:
    """KIP-966: "ELR + ISR size will not be dropped below the min ISR unless the controller
    discovers an ELR member has an unclean shutdown." So ISR and ELR are both empty, and the
    controller elects uncleanly on its own (unclean.leader.election.enable off), only after
    min ISR unclean shutdowns: the least effective min ISR of the run, since the count runs
    from its start and a raise cannot add members to ISR and ELR (docs/protocol.md,
    "Durability")."""
    return step_holds(cfg, prev, label, s, "UncleanElectionOnlyAfterMinIsrUncleanShutdowns")


@step_invariant("OneLeaderPerEpoch", "election", explain=E.leader_epoch_reused)
def one_leader_per_epoch(cfg, prev, label, s) -> bool:
    """The leader epoch is bumped whenever the leader field is written, a leader becoming -1
    included (docs/protocol.md, "The pipeline"). So every leader change raises the leader
    epoch, and a leader epoch names one leader: the fence that FENCED_LEADER_EPOCH and fetch
    truncation rely on."""
    return step_holds(cfg, prev, label, s, "OneLeaderPerEpoch")


@step_invariant("RecoveryElectsAReplicaWithEveryAnsweredRecord", "election", TOLERANCE,
                explain=E.recovery_elected_less, symbolic=Z.recovery_elects_a_replica_with_every_answered_record)
def recovery_elects_a_replica_with_every_answered_record(cfg, prev, label, s) -> bool:
    """KIP-966, "Unclean recovery": "The one with the highest leader epoch plus the longest log
    end offset will be the new leader", i.e. the replica that "persisted the most data". So
    while durability still holds (within KIP-966's tolerance before the round), the replica a
    recovery round elects holds every acknowledged record that any replica that answered
    GetReplicaLogInfo (running and an acceptable leader) holds: the round itself loses nothing
    it was told about."""
    return step_holds(cfg, prev, label, s, "RecoveryElectsAReplicaWithEveryAnsweredRecord")