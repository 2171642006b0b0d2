"""Liveness properties: `premise ~> goal` ("leads to") under weak fairness of the steps a
healthy cluster keeps taking on its own.

Each property says: whenever `premise` holds, `goal` holds then or later, in every run in
which no fair action stays enabled forever without being taken (an action declared `fair=True`,
specs/actions/, which the Model lists as `fair_actions`). The fair actions are the ones
no person has to trigger: a stopped broker restarts, a running fenced broker heartbeats
(unfence), followers fetch, the controller processes the AlterPartition in flight, a broker in
controlled shutdown stops, a caught-up follower joins the ISR (which reports RECOVERED), and the controller runs a
recovery round when its strategy lets it elect. Faults, produces, ISR shrinks and operator
actions (admin elections, config changes, reassignment) are not fair: a run may take them or
not, which is what makes a counterexample a possible history.

`by_design` names the documented exception: under unclean_recovery_strategy None the
controller never elects uncleanly on its own (KIP-966: "the controller will not attempt to
elect a leader. Waiting for the user operations"), so a partition whose ISR and ELR hold no
running replica waits for an operator's designated election. A lasso whose cycle waits like
that is reported as that exception, never as a pass.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

from specs.facts import holds_committed_log, replica
from specs.state import NO_LEADER, RECOVERING

class LivenessProperty(NamedTuple):
    name: str
    premise: Callable        # (cfg, state) -> bool
    goal: Callable           # (cfg, state) -> bool
    quote: str

    def by_design(self, cfg, s) -> Optional[str]:
        """Why a run that stays in `s` without reaching the goal is the documented behaviour."""
        return waits_for_operator(cfg, s)


def waits_for_operator(cfg, s) -> Optional[str]:
    p = s.ctrl.partition
    if cfg.rules.unclean_recovery_strategy != "none" or p.leader != NO_LEADER:
        return None
    running = [b for b in set(p.isr) | set(p.elr) if (r := replica(cfg, s, b)) is not None and r.alive]
    if running:
        return None
    return ("unclean_recovery_strategy none: no running replica is in ISR or ELR, and the controller waits "
            "for an operator's designated election (KIP-966: 'Waiting for the user operations')")


def _leaderless(cfg, s) -> bool:
    return s.ctrl.partition.leader == NO_LEADER


def _not(predicate):
    """The goal that is the premise's end: `not premise`."""
    return lambda cfg, s: not predicate(cfg, s)


_has_leader = _not(_leaderless)


def _leaderless_with_live_complete_candidate(cfg, s) -> bool:
    p = s.ctrl.partition
    if p.leader != NO_LEADER:
        return False
    for b in set(p.isr) | set(p.elr):
        r = replica(cfg, s, b)
        if r is not None and r.alive and holds_committed_log(cfg, s, b):
            return True
    return False


def _recovering(cfg, s) -> bool:
    return s.ctrl.partition.leader_recovery_state == RECOVERING


_recovered = _not(_recovering)


LIVENESS: tuple[LivenessProperty, ...] = (
    LivenessProperty(
        "CompleteCandidateEventuallyLeads", _leaderless_with_live_complete_candidate, _has_leader,
        "A leaderless partition with a running ISR or ELR member that holds the committed log eventually has "
        "a leader: ELR exists so that such a member can be elected cleanly (KIP-966, 'Leader election')."),
    LivenessProperty(
        "RecoveringEventuallyRecovered", _recovering, _recovered,
        "A RECOVERING partition eventually becomes RECOVERED: the leader elected uncleanly reports it with its "
        "first AlterPartition, which its first ISR change sends (docs/protocol.md, 'Broker side', Recovery)."),
    LivenessProperty(
        "LeaderlessEventuallyLeads", _leaderless, _has_leader,
        "A leaderless partition eventually has a leader once faults stop: what unclean recovery (or the last "
        "known leader) is for. Strategy None is the documented exception: it waits for an operator."),
)

BY_NAME = {p.name: p for p in LIVENESS}
