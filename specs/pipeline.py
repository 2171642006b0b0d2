"""The controller's single partition-change pipeline (Kafka's PartitionChangeBuilder).

Every controller event computes a target ISR and calls `build`. The order is
the implementation's: reassignment completion, ELR update, leader election,
ISR write, last_known_elr, epochs. A change that changes nothing bumps nothing.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from specs.config import Config
from specs.state import NO_LEADER, RECOVERING, Controller, Partition, sorted_tuple

ONLINE = "online"
PREFERRED = "preferred"
UNCLEAN = "unclean"
DESIGNATED = "designated"


class Change(NamedTuple):
    partition: Partition
    unclean_election: bool    # the new leader came from outside ISR/ELR (data loss possible)


def effective_min_isr(min_isr: int, replicas: tuple[int, ...]) -> int:
    return min(min_isr, len(replicas))


def build(cfg: Config, ctrl: Controller, target_isr, *, election: str = ONLINE,
          designated: Optional[int] = None, unclean_shutdown: frozenset = frozenset(),
          target_recovery: Optional[int] = None, target_replicas: Optional[tuple[int, ...]] = None,
          adding: Optional[tuple[int, ...]] = None, removing: Optional[tuple[int, ...]] = None,
          bump_leader_epoch: bool = False, prefer: Optional[int] = None) -> Change:
    """`prefer` picks the new leader among the valid candidates when the config lets an
    election choose any of them (any_candidate_elections); Kafka takes the first in replica order."""
    flags, mutant = cfg.flags, cfg.mutant
    p = ctrl.partition
    replicas = p.replicas if target_replicas is None else target_replicas
    adding = p.adding_replicas if adding is None else adding
    removing = p.removing_replicas if removing is None else removing
    target = tuple(target_isr)            # ordered: Kafka compares ISR lists order-sensitively
    min_isr = effective_min_isr(ctrl.min_isr, p.replicas)   # from the pre-change replica list
    recovery = p.leader_recovery_state if target_recovery is None else target_recovery
    elr = set(p.elr)
    lke = set(p.last_known_elr)
    lkl = p.last_known_leader

    # Reassignment completes once the ISR without the removing replicas covers the final replicas.
    if adding or removing:
        final = tuple(r for r in replicas if r not in removing)
        final_isr = tuple(r for r in target if r not in removing)
        allowed = bool(final_isr) and bool(final) and set(final) <= set(final_isr)
        if allowed and flags.reassignment_requires_min_isr:
            allowed = len(final_isr) >= effective_min_isr(ctrl.min_isr, final)
        if allowed:
            if removing:
                bump_leader_epoch = True
            replicas, target, adding, removing = final, final_isr, (), ()
            if flags.reassignment_requires_min_isr:
                elr &= set(final)

    # 1. ELR update. Kafka's last_known_elr (the last known leader) is left to step 3; the
    # KIP-text variant keeps there the candidates that left without returning to ISR or ELR.
    if flags.elr:
        if len(target) >= min_isr and mutant != "elr-not-cleared":
            elr = set()
            if not flags.use_last_known_leader:
                lke = set()
        else:
            before = set(elr) | set(p.isr)
            candidates = set(elr) if mutant == "fenced-not-into-elr" else set(before)
            if mutant != "elr-includes-target-isr":
                candidates -= set(target)
            if mutant != "unclean-shutdown-kept-in-elr":
                candidates -= unclean_shutdown
            elr = candidates
            if not flags.use_last_known_leader:
                lke = (before | lke) - set(target) - elr
    else:
        elr, lke = set(), set()

    # 2. Leader election.
    def valid(b: int) -> bool:
        if b == NO_LEADER:
            return False
        from_elr = flags.elr and not target and b in elr
        if b not in target and not from_elr:
            return False
        if from_elr and mutant == "fenced-elr-elected":
            return b in ctrl.registered and b not in ctrl.shutting_down
        return ctrl.acceptable_leader(b)

    def last_known_leader() -> int:
        if not flags.elr or target or elr:
            return NO_LEADER
        if flags.use_last_known_leader:
            known = p.last_known_elr[0] if len(p.last_known_elr) == 1 else NO_LEADER
        else:
            known = p.last_known_leader
        return known if known != NO_LEADER and ctrl.acceptable_leader(known) else NO_LEADER

    def first(candidates) -> int:
        candidates = list(candidates)
        if flags.any_candidate_elections and prefer in candidates:
            return prefer
        return candidates[0] if candidates else NO_LEADER

    unclean = False
    leader = NO_LEADER
    if election == DESIGNATED:
        leader = designated if designated is not None else NO_LEADER
        unclean = not valid(leader)
    elif election == PREFERRED and valid(replicas[0]):
        leader = replicas[0]
    elif valid(p.leader):
        leader = p.leader
    else:
        leader = first(r for r in replicas if valid(r))
        if leader == NO_LEADER:
            leader = last_known_leader()
            unclean = leader != NO_LEADER
        if leader == NO_LEADER and (election == UNCLEAN or
                                    (election == ONLINE and ctrl.unclean_leader_election)):
            leader = first(r for r in replicas if ctrl.acceptable_leader(r))
            unclean = leader != NO_LEADER
        if leader == NO_LEADER and mutant == "unclean-election-marked-clean":
            leader = next((r for r in replicas if ctrl.acceptable_leader(r)), NO_LEADER)
            if leader != NO_LEADER:
                target = (leader,)

    new_isr = target
    if leader != p.leader and leader != NO_LEADER:
        if unclean:
            new_isr = (leader,)
            recovery = RECOVERING
            elr, lke = set(), set()
        elif leader not in target and leader in elr and mutant != "elr-leader-not-added-to-isr":
            new_isr = (leader,)
            elr.discard(leader)
    if not flags.elr and not new_isr:
        new_isr = p.isr       # without ELR the ISR is never written empty: last replica standing
    if flags.any_candidate_elections:
        new_isr = tuple(sorted(new_isr))

    # 3. last_known_elr (Kafka: the last known leader) / the KIP's separate last known leader.
    if flags.elr:
        if leader == NO_LEADER and p.leader != NO_LEADER:
            if flags.use_last_known_leader:
                if not p.last_known_elr:
                    lke = {p.leader}
            else:
                lkl = p.leader
        elif leader != NO_LEADER and leader != p.leader:
            if flags.use_last_known_leader:
                lke = set()
            lkl = NO_LEADER

    bump = leader != p.leader or bump_leader_epoch
    if flags.leader_epoch_bump_on_isr_shrink and not set(p.isr) <= set(new_isr):
        bump = True
    if mutant == "leader-epoch-not-bumped":
        bump = False
    new = p._replace(replicas=replicas, isr=new_isr, elr=sorted_tuple(elr),
                     last_known_elr=sorted_tuple(lke), leader=leader,
                     leader_recovery_state=recovery, adding_replicas=adding,
                     removing_replicas=removing, last_known_leader=lkl)
    if new == p and not bump:
        return Change(p, False)
    return Change(new._replace(leader_epoch=p.leader_epoch + (1 if bump else 0),
                               partition_epoch=p.partition_epoch + 1), unclean)
