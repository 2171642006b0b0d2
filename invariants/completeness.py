"""Data properties: who holds the committed log, and whether anything acknowledged or
shown to a consumer was lost.

"Committed" is the prefix of records below the highest HWM any leader reached (the
history variable `visible`); "acknowledged" is what acks=all producers were told.
A stopped broker is exempt from the candidate properties: it cannot serve until it
registers again, and registration is where the controller learns of an unclean
shutdown. The durability claims hold within KIP-966's tolerance: fewer than min ISR
unclean shutdowns that lost data, and no unclean election (the documented point at
which Kafka trades durability for availability).
"""
from __future__ import annotations

from invariants import explain as E
from invariants import twins as Z
from invariants.registry import TOLERANCE, state_invariant
from specs.facts import holds_committed_log, leader_candidates, replica, running_leader, within_tolerance


@state_invariant("LeaderCandidateCompleteness", "elr", TOLERANCE, explain=E.candidate_lacks_committed,
                 symbolic=Z.leader_candidate_completeness, proved=True)
def leader_candidate_completeness(cfg, s) -> bool:
    """Every leader candidate (an ISR member, or an unfenced ELR member) holds the whole
    committed log: the property ELR exists for (docs/protocol.md, "State"). KIP-966: "The
    member of ELR should have the data at least to HWM." """
    if not within_tolerance(cfg, s):
        return True
    for b in leader_candidates(s):
        r = replica(cfg, s, b)
        if r is not None and r.alive and not holds_committed_log(s, r):
            return False
    return True


@state_invariant("LeaderCompleteness", "data", TOLERANCE, explain=E.leader_lacks_acknowledged)
def leader_completeness(cfg, s) -> bool:
    """The leader holds every acknowledged record. A leader that lacks committed records makes
    its followers truncate to its log, so one replica's loss becomes the partition's
    (docs/protocol.md, "Broker side")."""
    r = running_leader(cfg, s)
    if r is None or not within_tolerance(cfg, s):
        return True
    held = {rec for (_, rec) in r.log}
    return all(rec in held for rec in s.hist.acked)


@state_invariant("NoCommittedRecordLostGlobally", "data", TOLERANCE, explain=E.acknowledged_gone)
def no_committed_record_lost_globally(cfg, s) -> bool:
    """KIP-966 Motivation: "This proposal solves this 'last replica standing' data loss issue
    in KRaft clusters, providing MinISR-1 tolerance to data loss unclean shutdown events."
    No acknowledged record is gone from every replica."""
    if not within_tolerance(cfg, s):
        return True
    held = {rec for r in s.replicas for (_, rec) in r.log}
    return all(rec in held for rec in s.hist.acked)


@state_invariant("ConsumerHwmNeverBackward", "data", TOLERANCE, explain=E.leader_lacks_committed)
def consumer_hwm_never_backward(cfg, s) -> bool:
    """KIP-966: "the HWM stored on broker 1 is lower than broker 2. This can cause HWM to move
    backward and impacts the consumers." Every record a consumer was shown below the HWM is
    still in the leader's log at the same offset."""
    r = running_leader(cfg, s)
    return r is None or not within_tolerance(cfg, s) or holds_committed_log(s, r)


@state_invariant("NoLostReplicaInIsr", "data", explain=E.lost_replica_in_isr)
def no_lost_replica_in_isr(cfg, s) -> bool:
    """KIP-903: "A replica with a stale broker epoch is not eligible to join the ISR." Every
    running ISR member holds the leader's log up to the leader's HWM, so no replica whose log
    was lost sits in the ISR."""
    lrep = running_leader(cfg, s)
    if lrep is None:
        return True
    leader, prefix = s.ctrl.partition.leader, lrep.log[:lrep.hwm]
    members = ((b, replica(cfg, s, b)) for b in s.ctrl.partition.isr if b != leader)
    return all(r.log[:lrep.hwm] == prefix for b, r in members if r is not None and r.alive)


@state_invariant("FollowerLogMatchesLeader", "data", explain=E.follower_diverges)
def follower_log_matches_leader(cfg, s) -> bool:
    """A follower truncates to the leader's log before it appends (docs/protocol.md, "Broker
    side"), so up to the offset the leader saw a follower fetch (in this leader epoch, from its
    current incarnation) the follower's log is the leader's."""
    lrep = running_leader(cfg, s)
    if lrep is None:
        return True
    ctrl = s.ctrl
    for b, r, fs in zip(cfg.brokers, s.replicas, s.followers):
        if fs.leo < 0 or not r.alive or b == ctrl.partition.leader or fs.broker_epoch != ctrl.broker_epoch(b):
            continue
        if fs.leo > len(lrep.log) or r.log[:fs.leo] != lrep.log[:fs.leo]:
            return False
    return True


@state_invariant("LogMatching", "data", explain=E.logs_disagree)
def log_matching(cfg, s) -> bool:
    """Truncation by leader epoch (KIP-101; docs/protocol.md, "Broker side"): two logs with an
    entry of the same leader epoch at the same offset agree up to it."""
    logs = [r.log for r in s.replicas if r.log]
    for i, a in enumerate(logs):
        for b in logs[i + 1:]:
            for k in range(min(len(a), len(b)) - 1, -1, -1):
                if a[k][0] == b[k][0]:
                    if a[:k + 1] != b[:k + 1]:
                        return False
                    break
    return True
