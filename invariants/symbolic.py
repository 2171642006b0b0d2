"""The ELR invariants over symbolic states (specs/symbolic/), under the names of the
concrete predicates they restate. tests/specs/symbolic/ checks that each agrees with
its concrete twin on the abstraction of reachable and random concrete states.

LEMMAS are facts the proof may need to make the invariants inductive. They are not
claims of their own: the prover uses one only after proving it inductive together with
the invariants, and names it in the report.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import z3

from specs.symbolic import ACTION_ID, Encoding, Params, Sym, meets, one_hot_or_zero, popcount


class SymbolicInvariant(NamedTuple):
    name: str
    kind: str            # "state" or "step"
    formula: Callable    # (enc, s) -> BoolRef, or (enc, s, params, t) -> BoolRef
    why: str = ""


def isr_elr_disjoint(enc: Encoding, s: Sym) -> z3.BoolRef:
    return s.isr & s.elr == 0


def elr_only_below_min_isr(enc: Encoding, s: Sym) -> z3.BoolRef:
    return z3.Or(s.elr == 0, z3.ULT(popcount(s.isr), s.min_isr))


def leader_candidate_completeness(enc: Encoding, s: Sym) -> z3.BoolRef:
    """Running candidates (ISR, unfenced ELR) are complete, within KIP-966's tolerance as the
    concrete predicate states it: fewer than min ISR lossy crashes of candidates, and no
    unclean election yet (`lost`)."""
    candidates = s.isr | (s.elr & ~s.fenced)
    return z3.Or(s.lost, z3.UGE(s.lossy_crashes, s.min_isr), candidates & s.alive & ~s.complete == 0)


def elected_leader_was_candidate(enc: Encoding, s: Sym, p: Params, t: Sym) -> z3.BoolRef:
    new_leader = z3.And(t.leader != 0, t.leader != s.leader)
    from_isr_or_elr = z3.If(p.action == ACTION_ID["alter_partition"], meets(t.leader, t.isr),
                            meets(t.leader, s.isr | s.elr))
    return z3.Or(z3.Not(new_leader), p.unclean, from_isr_or_elr)


def leader_in_isr(enc: Encoding, s: Sym) -> z3.BoolRef:
    return z3.Or(s.leader == 0, meets(s.leader, s.isr))


def leader_elected_registered_unfenced(enc: Encoding, s: Sym, p: Params, t: Sym) -> z3.BoolRef:
    new_leader = z3.And(t.leader != 0, t.leader != s.leader)
    return z3.Or(z3.Not(new_leader), meets(t.leader, enc.acceptable(t)))


OPERATOR_ELECTIONS = ("elect_preferred", "elect_unclean", "elect_designated", "periodic_unclean_election",
                      "unclean_recovery")


def unclean_election_only_after_min_isr_unclean_shutdowns(enc: Encoding, s: Sym, p: Params, t: Sym) -> z3.BoolRef:
    """As the concrete predicate, and void once an unclean election has happened (`lost`):
    an operator's unclean election empties the ELR, and the count starts over."""
    by_operator = z3.Or(*(p.action == ACTION_ID[a] for a in OPERATOR_ELECTIONS))
    return z3.Or(z3.Not(p.unclean), by_operator, s.unclean_leader_election, s.lost,
                 z3.UGE(t.unclean_shutdowns, t.min_isr))


def recovery_elects_a_replica_with_every_answered_record(enc: Encoding, s: Sym, p: Params, t: Sym) -> z3.BoolRef:
    """As the concrete predicate, at the abstraction's grain: within KIP-966's tolerance, if
    any replica that answered the round holds every committed record, the one it elects does."""
    answered = s.alive & enc.acceptable(s)
    new_leader = z3.And(t.leader != 0, t.leader != s.leader)
    return z3.Or(p.action != ACTION_ID["unclean_recovery"], s.lost, z3.UGE(s.lossy_crashes, s.min_isr),
                 z3.Not(new_leader), answered & s.complete == 0, meets(t.leader, s.complete))


INVARIANTS = (
    SymbolicInvariant("IsrElrDisjoint", "state", isr_elr_disjoint),
    SymbolicInvariant("ElrOnlyBelowMinIsr", "state", elr_only_below_min_isr),
    SymbolicInvariant("LeaderCandidateCompleteness", "state", leader_candidate_completeness),
    SymbolicInvariant("ElectedLeaderWasCandidate", "step", elected_leader_was_candidate),
)
# Concrete properties beyond the four ELR invariants that the same encoding can state.
MORE_INVARIANTS = (
    SymbolicInvariant("LeaderInIsr", "state", leader_in_isr),
    SymbolicInvariant("LeaderElectedRegisteredUnfenced", "step", leader_elected_registered_unfenced),
    SymbolicInvariant("UncleanElectionOnlyAfterMinIsrUncleanShutdowns", "step",
                      unclean_election_only_after_min_isr_unclean_shutdowns),
    SymbolicInvariant("RecoveryElectsAReplicaWithEveryAnsweredRecord", "step",
                      recovery_elects_a_replica_with_every_answered_record),
)

LEMMAS = (
    SymbolicInvariant(
        "CandidatesCompleteOnReturn", "state",
        lambda enc, s: z3.Or(s.lost, (s.isr | s.elr) & (s.alive | s.clean_file) & ~s.complete == 0),
        "every ISR or ELR member that is running, or stopped cleanly and so will register "
        "cleanly, holds the committed log, fenced or not: unfencing or a clean registration "
        "makes it a candidate again without any check of its log"),
    SymbolicInvariant(
        "CleanlyStoppedIsFenced", "state",
        lambda enc, s: s.clean_file & (s.alive | ~s.fenced) == 0,
        "a clean shutdown ends with the controller fencing the broker, and only a new "
        "incarnation, which removes the file, can be unfenced: so no AlterPartition can add "
        "a cleanly stopped broker that missed records"),
    SymbolicInvariant(
        "CandidatesCoverMinIsr", "state",
        lambda enc, s: z3.Or(s.lost, z3.ULE(z3.ZeroExt(8, s.min_isr),
                                            z3.ZeroExt(8, popcount(s.isr | s.elr)) + z3.ZeroExt(8, s.unclean_shutdowns))),
        "ISR and ELR together shrink below min ISR only by unclean shutdowns (KIP-966: \"ELR + ISR "
        "size will not be dropped below the min ISR unless the controller discovers an ELR member has "
        "an unclean shutdown\"); needs fixed topic config, since Kafka clears ELR on a min ISR change"),
    SymbolicInvariant(
        "OneElrMemberAtMinIsrOne", "state",
        lambda enc, s: z3.Or(s.min_isr != 1, one_hot_or_zero(s.elr)),
        "with min ISR 1 the ELR only ever takes the last ISR member, so electing it from ELR "
        "cannot leave others behind in ELR beside a full ISR"),
)

BY_NAME = {inv.name: inv for inv in INVARIANTS + MORE_INVARIANTS + LEMMAS}
