"""Named predicates over states and steps. Engines call them; they never call engines."""
from __future__ import annotations

from invariants import completeness, elections, structure  # noqa: F401  (registration)
from invariants.registry import REGISTRY, Invariant

BY_NAME = {inv.name: inv for inv in REGISTRY}
STATE_INVARIANTS = tuple(inv for inv in REGISTRY if inv.kind == "state")
STEP_INVARIANTS = tuple(inv for inv in REGISTRY if inv.kind == "step")
ELR_INVARIANTS = ("IsrElrDisjoint", "ElrOnlyBelowMinIsr", "LeaderCandidateCompleteness",
                  "ElectedLeaderWasCandidate")


def select(names=None) -> tuple[Invariant, ...]:
    """The invariants to check: all, or the named ones (unknown names raise KeyError)."""
    if not names:
        return tuple(REGISTRY)
    return tuple(BY_NAME[n] for n in names)


def state_violations(cfg, state, invariants=STATE_INVARIANTS) -> list[str]:
    return [inv.name for inv in invariants if inv.kind == "state" and not inv.check(cfg, state)]


def step_violations(cfg, prev, label, state, invariants=STEP_INVARIANTS) -> list[str]:
    return [inv.name for inv in invariants if inv.kind == "step" and not inv.check(cfg, prev, label, state)]


__all__ = ["REGISTRY", "Invariant", "BY_NAME", "STATE_INVARIANTS", "STEP_INVARIANTS", "ELR_INVARIANTS",
           "select", "state_violations", "step_violations"]
