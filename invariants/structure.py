"""Invariants of the controller's partition record (ISR, ELR, leader)."""
from __future__ import annotations

from invariants import explain as E
from invariants import twins as Z
from invariants.registry import state_invariant
from specs.kernel.properties import holds


@state_invariant("IsrElrDisjoint", "elr", explain=E.isr_elr_overlap, symbolic=Z.isr_elr_disjoint, proved=True)
def isr_elr_disjoint(cfg, s) -> bool:
    """KIP-966, ELR invariants: "The member of ELR should not be in ISR." """
    return holds(cfg, s, "IsrElrDisjoint")


@state_invariant("ElrOnlyBelowMinIsr", "elr", explain=E.elr_at_min_isr, symbolic=Z.elr_only_below_min_isr, proved=True)
def elr_only_below_min_isr(cfg, s) -> bool:
    """KIP-966, ELR invariants: "If ELR is not empty, the ISR is under min ISR." """
    return holds(cfg, s, "ElrOnlyBelowMinIsr")


@state_invariant("LeaderInIsr", "elr", explain=E.leader_outside_isr, symbolic=Z.leader_in_isr, proved=True)
def leader_in_isr(cfg, s) -> bool:
    """KIP-966, Leader election: a replica elected from ELR is "added to ISR, and removed from
    ELR"; every other election takes the leader from the ISR or sets ISR = [leader]."""
    return holds(cfg, s, "LeaderInIsr")