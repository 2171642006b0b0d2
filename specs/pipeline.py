"""The controller's one partition-change pipeline (Kafka's PartitionChangeBuilder.build).

Every controller event computes a target ISR and calls `build`. The order is Kafka's:
reassignment completion, ELR update, leader election, ISR write, last_known_elr, epochs;
a change that changes nothing writes nothing and bumps nothing (docs/protocol.md, "The
pipeline"). The rules are written in the algebra `R` (specs/algebra.py), so the z3
encoding runs this very code on formulas.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from specs.rules import Rules
from specs.state import RECOVERING

ONLINE = "online"            # unclean too when the topic enables unclean.leader.election
CLEAN = "clean"              # never unclean (Kafka's ONLINE election where no handler sets UNCLEAN)
PREFERRED = "preferred"
UNCLEAN = "unclean"
DESIGNATED = "designated"


class Change(NamedTuple):
    partition: Any            # the partition after the change (specs.state.Partition)
    unclean_election: Any     # the new leader came from outside ISR/ELR (data loss possible)
    # ... and an operator chose it: unclean.leader.election.enable, an admin UNCLEAN or
    # designated election, a recovery round of the strategy the operator set. The last-known-
    # leader election is the controller's own (KIP-966's "ELR only" mode), never a choice.
    operator_unclean: Any = False


def acceptable(R, ctrl, xs):
    """The members of xs that may lead: registered, unfenced, not in controlled shutdown."""
    return R.minus(R.minus(R.inter(xs, ctrl.registered), ctrl.fenced), ctrl.shutting_down)


def is_acceptable(R, ctrl, b):
    return R.all(R.member(b, ctrl.registered), R.not_(R.member(b, ctrl.fenced)),
                 R.not_(R.member(b, ctrl.shutting_down)))


def build(R, rules: Rules, ctrl, target_isr, *, election: str = ONLINE, designated=None,
          unclean_shutdown=None, target_recovery=None, target_replicas=None, adding=None,
          removing=None, bump_leader_epoch: bool = False, prefer=None) -> Change:
    """The partition after an event that proposes `target_isr`. `unclean_shutdown`: brokers
    whose registration in this event showed an unclean shutdown. `prefer` picks the new leader
    among the valid candidates when rules.any_candidate_elections lets an election choose any
    of them; Kafka takes the first in replica order."""
    p = ctrl.partition
    replicas = p.replicas if target_replicas is None else target_replicas
    adding = p.adding_replicas if adding is None else adding
    removing = p.removing_replicas if removing is None else removing
    target = target_isr
    unclean_shutdown = R.empty if unclean_shutdown is None else unclean_shutdown
    min_isr = R.effective_min_isr(ctrl)      # from the replica list before the change
    elr, lke = p.elr, p.last_known_elr
    if adding or removing:
        replicas, target, adding, removing, elr, reassigned = _complete_reassignment(
            R, rules, ctrl, replicas, target, adding, removing, elr)
        bump_leader_epoch = bump_leader_epoch or reassigned

    elr, lke = _update_elr(R, rules, p, target, elr, lke, min_isr, unclean_shutdown)
    leader, unclean, chosen, target = _elect(R, rules, ctrl, replicas, target, elr, election, designated, prefer)

    # The ISR write: an unclean leader or a leader from ELR becomes the whole ISR.
    changed = R.all(R.ne(leader, p.leader), R.not_(R.is_none(leader)))
    unclean_now = R.all(changed, unclean)
    from_elr = R.false
    if rules.elr_leader_joins_isr:
        from_elr = R.all(changed, R.not_(unclean), R.not_(R.member(leader, target)), R.member(leader, elr))
    new_isr = R.ite(R.any(unclean_now, from_elr), R.single(leader), target)
    recovery = p.leader_recovery_state if target_recovery is None or not rules.recovered_state_accepted \
        else target_recovery
    recovery = R.ite(unclean_now, RECOVERING, recovery)
    elr = R.ite(unclean_now, R.empty, R.ite(from_elr, R.minus(elr, R.single(leader)), elr))
    lke = R.ite(unclean_now, R.empty, lke)
    if not rules.elr:         # last replica standing: without ELR the ISR is never written empty
        new_isr = R.ite(R.is_empty(new_isr), p.isr, new_isr)
    if rules.any_candidate_elections:
        new_isr = R.as_set(new_isr)

    # The record sets the leader field when the leader changes, when a reassignment removes
    # replicas, and (metadata before 3.6) when the ISR shrinks: each bumps the leader epoch.
    leader_set = R.true if bump_leader_epoch else R.ne(leader, p.leader)
    if R.epochs and rules.leader_epoch_bump_on_isr_shrink:      # outside z3: it keeps no epochs
        leader_set = R.any(leader_set, R.not_(R.subset(p.isr, new_isr)))
    lke, lkl = _update_last_known(R, rules, p, leader, leader_set, new_isr, lke)
    new = p._replace(replicas=replicas, isr=new_isr, elr=R.as_set(elr), last_known_elr=R.as_set(lke),
                     leader=leader, leader_recovery_state=recovery, adding_replicas=adding,
                     removing_replicas=removing, last_known_leader=lkl)

    wrote = R.ne(new, p)
    if not R.epochs:
        return Change(new, R.all(unclean, wrote), R.all(chosen, wrote))
    bump = leader_set
    if not rules.leader_change_bumps_leader_epoch:
        bump = False
    if not wrote and not bump:
        return Change(p, False)
    return Change(new._replace(leader_epoch=p.leader_epoch + (1 if bump else 0),
                               partition_epoch=p.partition_epoch + 1), unclean, chosen)


def written_again(before, after, times: int):
    """The partition after the same PartitionChangeRecord is replayed `times` more times: the
    same fields, the partition epoch up once more each time, the leader epoch too if the record
    set the leader."""
    if after == before or times <= 0:
        return after
    return after._replace(partition_epoch=after.partition_epoch + times,
                          leader_epoch=after.leader_epoch + times * (after.leader_epoch != before.leader_epoch))


def _complete_reassignment(R, rules, ctrl, replicas, target, adding, removing, elr):
    """A reassignment completes once the ISR without the removing replicas is not empty and
    holds every adding replica, and, when it removes more replicas than it adds, every final
    replica (PartitionReassignmentReplicas.maybeCompleteReassignment; before Kafka 4.3, every
    final replica in any case); the KIP text also asks
    |ISR| >= min ISR and keeps only final replicas in ELR. Outside the z3 encoding: its
    partitions have no reassignment, so this never runs there."""
    final = R.minus(replicas, removing)
    final_isr = R.minus(target, removing)
    allowed = not R.is_empty(final_isr) and not R.is_empty(final)
    if rules.reassignment_completes_once_adding_in_isr:
        allowed = allowed and R.subset(adding, final_isr) and (R.size(adding) >= R.size(removing)
                                                               or R.subset(final, final_isr))
    else:        # variant (Kafka 4.2 and earlier): every final replica must be in the ISR
        allowed = allowed and R.subset(final, final_isr)
    if allowed and rules.reassignment_requires_min_isr:
        allowed = R.ge(R.size(final_isr), R.cap_min_isr(ctrl.min_isr, final))
    if not allowed:
        return replicas, target, adding, removing, elr, False
    if rules.reassignment_requires_min_isr:
        elr = R.inter(elr, final)
    return final, final_isr, R.empty, R.empty, elr, not R.is_empty(removing)


def _update_elr(R, rules, p, target, elr, lke, min_isr, unclean_shutdown):
    """1. ELR update: at min ISR the ELR empties; below it, ELR = (ELR + current ISR) - target
    ISR - brokers that had an unclean shutdown. Kafka leaves last_known_elr to step 3; the KIP
    text keeps there the candidates that left without returning to ISR or ELR."""
    if not rules.elr:
        return R.empty, R.empty
    enough = R.ge(R.size(target), min_isr) if rules.elr_cleared_at_min_isr else R.false
    before = R.union(elr, p.isr)
    candidates = before if rules.isr_leavers_join_elr else elr
    if rules.elr_excludes_target_isr:
        candidates = R.minus(candidates, target)
    if rules.unclean_shutdown_leaves_elr:
        candidates = R.minus(candidates, unclean_shutdown)
    if not rules.use_last_known_leader:
        lke = R.ite(enough, R.empty, R.minus(R.minus(R.union(before, lke), target), candidates))
    return R.ite(enough, R.empty, candidates), lke


def _elect(R, rules, ctrl, replicas, target, elr, election, designated, prefer):
    """2. Leader election: (leader, unclean?, unclean by an operator's choice?, target ISR).
    The leader stays while valid: in the
    target ISR, or (target ISR empty) in ELR, and acceptable. Otherwise the first valid replica
    in replica order; then the acceptable last known leader (unclean); then, if unclean
    elections are allowed, the first acceptable replica (unclean). With a recovery strategy
    neither unclean fallback runs: recovery rounds (specs/controller.py) take their place."""
    p = ctrl.partition
    from_elr = R.ite(R.is_empty(target), elr, R.empty) if rules.elr else R.empty
    if rules.elr_leader_must_be_unfenced:
        valid = R.union(acceptable(R, ctrl, target), acceptable(R, ctrl, from_elr))
    else:
        valid = R.union(acceptable(R, ctrl, target),
                        R.minus(R.inter(from_elr, ctrl.registered), ctrl.shutting_down))
    if election == DESIGNATED:
        leader = R.none if designated is None else designated
        unclean = R.not_(R.member(leader, valid))
        return leader, unclean, unclean, target

    def first(candidates):
        chosen = R.first(candidates, replicas)
        if rules.any_candidate_elections and prefer is not None:
            return R.ite(R.member(prefer, candidates), prefer, chosen)
        return chosen

    chosen = first(valid)
    # Variant (KIP-966 unclean recovery): with a recovery strategy, recovery rounds replace the
    # last-known-leader election and unclean.leader.election ("The unclean leader election will
    # be replaced by the unclean recovery"); only an operator's election is unclean here.
    rounds = rules.unclean_recovery_strategy is not None
    known = R.none
    claims = R.false         # the last-known-leader rule decides the election, whatever it yields
    if rules.elr and not rounds:
        known = R.only(p.last_known_elr) if rules.use_last_known_leader else p.last_known_leader
        # Variant (Kafka 4.0, before KAFKA-19522): the last known leader need not be acceptable,
        # and a last_known_elr of one entry decides the election even when that entry is -1
        # (4.0's rule can write [-1]): the leader stays -1 and no unclean election follows
        # (PartitionChangeBuilder.canElectLastKnownLeader; conform found it against 4.0.2).
        # In z3 [-1] is the empty set, so this corner is the concrete model's alone.
        if rules.last_known_leader_must_be_acceptable:
            ok = is_acceptable(R, ctrl, known)
        else:
            ok = R.not_(R.is_none(known))
            if rules.use_last_known_leader:
                claims = R.all(R.is_empty(target), R.is_empty(elr), R.eq(R.size(p.last_known_elr), 1))
        known = R.ite(R.all(R.is_empty(target), R.is_empty(elr), ok), known, R.none)
    fallback = R.ite(R.is_none(chosen), known, chosen)
    # The controller's own unclean election (KIP-966 "ELR only": "the LastKnownLeader is
    # preferred when ELR and ISR are both empty"): no operator chose it, so it excuses no loss.
    by_known = R.all(R.is_none(chosen), R.not_(R.is_none(known)))
    unclean = by_known
    online = R.false if rounds or election == CLEAN else ctrl.unclean_leader_election
    allowed = online if election in (ONLINE, CLEAN) else (R.true if election == UNCLEAN else R.false)
    any_live = R.ite(R.all(allowed, R.not_(R.all(R.is_none(chosen), claims))), first(acceptable(R, ctrl, replicas)),
                     R.none)
    unclean = R.any(unclean, R.all(R.is_none(fallback), R.not_(R.is_none(any_live))))
    fallback = R.ite(R.is_none(fallback), any_live, fallback)
    if not rules.clean_election_needs_candidate:
        live = R.first(acceptable(R, ctrl, replicas), replicas)
        marked = R.all(R.is_none(fallback), R.not_(R.is_none(live)))
        target = R.ite(marked, R.single(live), target)
        fallback = R.ite(R.is_none(fallback), live, fallback)
    keep = R.member(p.leader, valid)
    leader = R.ite(keep, p.leader, fallback)
    unclean = R.all(R.not_(keep), unclean)
    if election == PREFERRED:
        preferred = R.first(replicas, replicas)
        preferred_ok = R.member(preferred, valid)
        leader = R.ite(preferred_ok, preferred, leader)
        unclean = R.all(R.not_(preferred_ok), unclean)
    # Chosen: any unclean election but the last known leader's, and that one too where the
    # operator allowed unclean elections (the topic's config, an admin UNCLEAN election).
    return leader, unclean, R.all(unclean, R.any(R.not_(by_known), allowed)), target


def _update_last_known(R, rules, p, leader, leader_set, new_isr, lke):
    """3. last_known_elr (maybeUpdateLastKnownLeader), from what the record writes. Kafka (4.1.1
    and later): [old leader] when the record sets the leader to -1 and it was empty; cleared
    when the record sets a leader. Kafka 4.0 and 4.1.0 (`last_known_elr_set_by_empty_isr`):
    [current leader] when the record writes an empty ISR, unless it holds exactly that; cleared
    while the partition keeps or gets a leader. The KIP text keeps a separate last known leader."""
    lkl = p.last_known_leader
    if not rules.elr:
        return lke, lkl
    sets_leader = R.all(leader_set, R.not_(R.is_none(leader)))
    if rules.use_last_known_leader and rules.last_known_elr_set_by_empty_isr:   # variant (Kafka 4.0, 4.1.0)
        empties_isr = R.all(R.is_empty(new_isr), R.not_(R.is_empty(p.isr)))
        keeps_or_gets = R.any(sets_leader, R.all(R.not_(R.is_none(p.leader)),
                                                 R.not_(R.all(leader_set, R.is_none(leader)))))
        lke = R.ite(R.all(empties_isr, R.ne(p.last_known_elr, R.entry(p.leader))), R.entry(p.leader),
                    R.ite(R.all(R.not_(R.is_empty(p.last_known_elr)), keeps_or_gets), R.empty, lke))
    elif rules.use_last_known_leader:
        went_leaderless = R.all(leader_set, R.is_none(leader))
        lke = R.ite(went_leaderless, R.ite(R.is_empty(p.last_known_elr), R.entry(p.leader), lke),
                    R.ite(sets_leader, R.empty, lke))
    else:
        went_leaderless = R.all(R.is_none(leader), R.not_(R.is_none(p.leader)))
        lkl = R.ite(went_leaderless, p.leader, lkl)
    changed = R.all(R.ne(leader, p.leader), R.not_(R.is_none(leader)))
    return lke, R.ite(changed, R.none, lkl)
