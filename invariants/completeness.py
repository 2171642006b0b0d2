"""Data properties: who holds the committed log, and whether anything acknowledged or
shown to a consumer was lost.

"Committed" is the prefix of records below the highest HWM any leader reached (the
history variable `visible`); "acknowledged" is what acks=all producers were told.
A stopped broker is exempt from the candidate properties: it cannot serve until it
registers again, and registration is where the controller learns of an unclean
shutdown. The durability claims hold within KIP-966's tolerance: fewer unclean shutdowns
that lost data than the min ISR the committed records were promised (the least in force
since the first commit: an operator's later raise promises nothing for records already
at risk), and no unclean election an operator chose (the documented point at which Kafka
trades durability for availability; docs/protocol.md, "Durability").
"""
from __future__ import annotations

from invariants import explain as E
from invariants import twins as Z
from invariants.registry import TOLERANCE, state_invariant
from specs.kernel.properties import holds


@state_invariant("LeaderCandidateCompleteness", "elr", TOLERANCE, explain=E.candidate_lacks_committed,
                 symbolic=Z.leader_candidate_completeness, proved=True)
def leader_candidate_completeness(cfg, s) -> bool:
    """Every leader candidate (an ISR member, or an unfenced ELR member) holds the whole
    committed log: the property ELR exists for (docs/protocol.md, "State"). KIP-966: "The
    member of ELR should have the data at least to HWM." """
    return holds(cfg, s, "LeaderCandidateCompleteness")


@state_invariant("LeaderCompleteness", "data", TOLERANCE, explain=E.leader_lacks_acknowledged)
def leader_completeness(cfg, s) -> bool:
    """The leader holds every acknowledged record. A leader that lacks committed records makes
    its followers truncate to its log, so one replica's loss becomes the partition's
    (docs/protocol.md, "Broker side")."""
    return holds(cfg, s, "LeaderCompleteness")


@state_invariant("NoCommittedRecordLostGlobally", "data", TOLERANCE, explain=E.acknowledged_gone)
def no_committed_record_lost_globally(cfg, s) -> bool:
    """KIP-966 Motivation: "This proposal solves this 'last replica standing' data loss issue
    in KRaft clusters, providing MinISR-1 tolerance to data loss unclean shutdown events."
    No acknowledged record is gone from every replica."""
    return holds(cfg, s, "NoCommittedRecordLostGlobally")


@state_invariant("ConsumerHwmNeverBackward", "data", TOLERANCE, explain=E.consumer_read_gone)
def consumer_hwm_never_backward(cfg, s) -> bool:
    """KIP-966: "the HWM stored on broker 1 is lower than broker 2. This can cause HWM to move
    backward and impacts the consumers." Every record a consumer was shown below the HWM is
    still in the leader's log at the same offset."""
    return holds(cfg, s, "ConsumerHwmNeverBackward")


@state_invariant("NoLostReplicaInIsr", "data", explain=E.lost_replica_in_isr)
def no_lost_replica_in_isr(cfg, s) -> bool:
    """KIP-903: "A replica with a stale broker epoch is not eligible to join the ISR." Every
    running ISR member holds the leader's log up to the leader's HWM, so no replica whose log
    was lost sits in the ISR."""
    return holds(cfg, s, "NoLostReplicaInIsr")


@state_invariant("FollowerLogMatchesLeader", "data", explain=E.follower_diverges)
def follower_log_matches_leader(cfg, s) -> bool:
    """A follower truncates to the leader's log before it appends (docs/protocol.md, "Broker
    side"), so up to the offset the leader saw a follower fetch (in this leader epoch, from its
    current incarnation) the follower's log is the leader's."""
    return holds(cfg, s, "FollowerLogMatchesLeader")


@state_invariant("LogMatching", "data", explain=E.logs_disagree)
def log_matching(cfg, s) -> bool:
    """Truncation by leader epoch (KIP-101; docs/protocol.md, "Broker side"): two logs with an
    entry of the same leader epoch at the same offset agree up to it."""
    return holds(cfg, s, "LogMatching")