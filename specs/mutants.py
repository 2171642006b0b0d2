"""The mutation catalogue: deliberately broken protocol rules.

Each entry names one rule of the real protocol and breaks it at exactly one
place in specs/ (grep for the name). The checker must kill every one of them;
a mutant that survives means the invariants do not watch that rule.
"""
from __future__ import annotations

MUTANTS: dict[str, str] = {
    "hwm-maximal-isr":
        "the leader's min-ISR gate for advancing the HWM counts the maximal ISR (pending additions) "
        "instead of the ISR the controller committed",
    "hwm-ignores-min-isr":
        "the leader advances the HWM while |ISR| < min ISR (the pre-KIP-966 rule, alone)",
    "hwm-uses-leader-leo":
        "the leader advances the HWM to its own log end offset without waiting for the ISR",
    "elr-not-cleared":
        "ELR is not emptied when the ISR grows back to min ISR",
    "elr-includes-target-isr":
        "the new ELR does not exclude members of the target ISR",
    "fenced-not-into-elr":
        "a member that leaves the ISR below min ISR is not added to ELR",
    "unclean-shutdown-kept-in-elr":
        "a broker registering after an unclean shutdown is left in ELR",
    "unclean-registration-treated-clean":
        "the controller treats every registration as clean (ignores the clean-shutdown broker epoch)",
    "register-keeps-isr":
        "a broker registering after an unclean shutdown is left in the ISR",
    "fenced-elr-elected":
        "an ELR member is elected leader while fenced",
    "elr-leader-not-added-to-isr":
        "a leader elected from ELR is not moved into the ISR",
    "unclean-election-marked-clean":
        "with no candidate left, the first live replica is elected as if the election were clean",
    "no-broker-epoch-check":
        "the controller ignores the per-member broker epochs of AlterPartition (KIP-903 check off)",
    "expand-without-catch-up":
        "the leader proposes a follower for the ISR before it has caught up to the HWM",
    "unfence-adds-to-isr":
        "unfencing a broker adds it back to the ISR of its partitions",
    "follower-no-truncate":
        "a follower keeps a divergent suffix instead of truncating to the leader's log",
    "leader-epoch-not-bumped":
        "a leader change does not bump leader_epoch",
}
