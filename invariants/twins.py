"""The z3 twins of the concrete properties: the same rule over symbolic states (specs/symbolic/),
for any cluster size. Each concrete invariant names its twin where it is declared
(`symbolic=`); tests/specs/symbolic/ checks that every twin agrees with its concrete property
on the abstraction of reachable and random states.

z3 is imported when a formula is built, not when this module is: a search that never asks
for a proof does not pay for loading the solver.
"""
from __future__ import annotations

from specs.actions import operator_steps


def _z3():
    import z3

    from specs import symbolic as S
    return z3, S


def isr_elr_disjoint(enc, s):
    return s.isr & s.elr == 0


def elr_only_below_min_isr(enc, s):
    z3, S = _z3()
    return z3.Or(s.elr == 0, z3.ULT(S.popcount(s.isr), s.min_isr))


def leader_candidate_completeness(enc, s):
    """Running candidates (ISR, unfenced ELR) are complete, within KIP-966's tolerance as the
    concrete predicate states it: fewer lossy crashes than the min ISR the committed records
    were promised (`promised_min_isr`), and no unclean election an operator chose
    (`operator_unclean`; the controller's own last-known-leader election is no excuse)."""
    z3, _ = _z3()
    candidates = s.isr | (s.elr & ~s.fenced)
    return z3.Or(s.operator_unclean, z3.UGE(s.lossy_crashes, s.promised_min_isr),
                 candidates & s.alive & ~s.complete == 0)


def elected_leader_was_candidate(enc, s, p, t):
    z3, S = _z3()
    new_leader = z3.And(t.leader != 0, t.leader != s.leader)
    from_isr_or_elr = z3.If(p.action == S.ACTION_ID["alter_partition"], S.meets(t.leader, t.isr),
                            S.meets(t.leader, s.isr | s.elr))
    return z3.Or(z3.Not(new_leader), p.unclean, from_isr_or_elr)


def leader_in_isr(enc, s):
    z3, S = _z3()
    return z3.Or(s.leader == 0, S.meets(s.leader, s.isr))


def leader_elected_registered_unfenced(enc, s, p, t):
    z3, S = _z3()
    new_leader = z3.And(t.leader != 0, t.leader != s.leader)
    return z3.Or(z3.Not(new_leader), S.meets(t.leader, enc.acceptable(t)))


def unclean_election_only_after_min_isr_unclean_shutdowns(enc, s, p, t):
    """As the concrete predicate (unclean shutdowns against the least min ISR of the run), and
    void once an unclean election has happened (`lost`): an operator's unclean election empties
    the ELR, and the count starts over."""
    z3, S = _z3()
    by_operator = z3.Or(*(p.action == S.ACTION_ID[a] for a in operator_steps()))
    return z3.Or(z3.Not(p.unclean), by_operator, s.unclean_leader_election, s.lost,
                 z3.UGE(t.unclean_shutdowns, t.least_min_isr))


def recovery_elects_a_replica_with_every_answered_record(enc, s, p, t):
    """As the concrete predicate, at the abstraction's grain: within KIP-966's tolerance, if
    any replica that answered the round holds every committed record, the one it elects does."""
    z3, S = _z3()
    answered = s.alive & enc.acceptable(s)
    new_leader = z3.And(t.leader != 0, t.leader != s.leader)
    return z3.Or(p.action != S.ACTION_ID["unclean_recovery"], s.operator_unclean,
                 z3.UGE(s.lossy_crashes, s.promised_min_isr),
                 z3.Not(new_leader), answered & s.complete == 0, S.meets(t.leader, s.complete))
