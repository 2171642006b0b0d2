"""Named predicates over states and steps (invariants/registry.py), handed to the engines by the
command line; they never call engines (checking them is verifier/core/properties.py)."""
from __future__ import annotations

from invariants import completeness, elections, structure  # noqa: F401  (registration)
from invariants.registry import REGISTRY, Invariant

BY_NAME = {inv.name: inv for inv in REGISTRY}
STATE_INVARIANTS = tuple(inv for inv in REGISTRY if inv.kind == "state")
STEP_INVARIANTS = tuple(inv for inv in REGISTRY if inv.kind == "step")
ELR_INVARIANTS = ("IsrElrDisjoint", "ElrOnlyBelowMinIsr", "LeaderCandidateCompleteness",
                  "ElectedLeaderWasCandidate")


__all__ = ["REGISTRY", "Invariant", "BY_NAME", "STATE_INVARIANTS", "STEP_INVARIANTS", "ELR_INVARIANTS"]
