"""The catalogue: presets (named rule sets) and mutants (named replacements of rules).

A preset says which protocol the model is: Kafka trunk, the KIP-966 text, or an older
protocol. A mutant breaks one rule of the real protocol on purpose; the checker must kill
every one, or the invariants do not watch that rule. Both are plain data over the fields
of `specs.rules.Rules`, checked when this module is imported: an unknown field or a value
of the wrong type fails at once, never silently at run time.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, NamedTuple

from specs.rules import DEFAULT_RULES, Rules, check_value, outside_z3


class Preset(NamedTuple):
    name: str
    doc: str
    changes: Mapping[str, Any]     # rule fields that differ from Kafka trunk


class Mutant(NamedTuple):
    name: str
    description: str
    changes: Mapping[str, Any]     # the rule fields it replaces

    def outside_z3(self) -> list[str]:
        """The reasons the z3 encoding cannot see this mutant (empty: it can)."""
        return [r for r in (outside_z3(n) for n in self.changes) if r]


def _checked(entry):
    if not entry.changes:
        raise ValueError(f"catalogue entry {entry.name!r} changes no rule")
    for name, value in entry.changes.items():
        problem = check_value(name, value)
        if problem:
            raise ValueError(f"catalogue entry {entry.name!r}: {problem}")
        if isinstance(entry, Mutant) and getattr(DEFAULT_RULES, name) == value:
            raise ValueError(f"mutant {entry.name!r}: {name}={value!r} is Kafka's rule, not a break")
    return entry


def _catalogue(*entries) -> dict:
    out = {}
    for e in entries:
        if e.name in out:
            raise ValueError(f"catalogue entry {e.name!r} twice")
        out[e.name] = e if e.name == "kafka" else _checked(e)
    return out


PRESETS: dict[str, Preset] = _catalogue(
    Preset("kafka", "Apache Kafka trunk (4.1/4.2) as docs/protocol.md states it (the default)", {}),
    Preset("kip-966", "the KIP-966 text where it differs from Kafka: last_known_elr, min ISR change, "
           "reassignment", {"use_last_known_leader": False, "min_isr_change_always_clears_elr": False,
                            "reassignment_requires_min_isr": True}),
    Preset("pre-kip-966", "no ELR; the ISR never empties; the HWM advances below min ISR",
           {"elr": False, "hwm_requires_min_isr": False}),
    Preset("pre-kip-903", "no per-member broker epoch check in AlterPartition", {"broker_epoch_check": False}),
)

MUTANTS: dict[str, Mutant] = _catalogue(
    Mutant("hwm-maximal-isr", "the leader's min-ISR gate for advancing the HWM counts the maximal ISR "
           "(pending additions) instead of the ISR the controller committed", {"hwm_gate_counts_maximal_isr": True}),
    Mutant("hwm-ignores-min-isr", "the leader advances the HWM while |ISR| < min ISR (the pre-KIP-966 rule, "
           "alone)", {"hwm_requires_min_isr": False}),
    Mutant("hwm-uses-leader-leo", "the leader advances the HWM to its own log end offset without waiting for "
           "the ISR", {"hwm_waits_for_isr": False}),
    Mutant("elr-not-cleared", "ELR is not emptied when the ISR grows back to min ISR",
           {"elr_cleared_at_min_isr": False}),
    Mutant("elr-includes-target-isr", "the new ELR does not exclude members of the target ISR",
           {"elr_excludes_target_isr": False}),
    Mutant("fenced-not-into-elr", "a member that leaves the ISR below min ISR is not added to ELR",
           {"isr_leavers_join_elr": False}),
    Mutant("unclean-shutdown-kept-in-elr", "a broker registering after an unclean shutdown is left in ELR",
           {"unclean_shutdown_leaves_elr": False}),
    Mutant("unclean-registration-treated-clean", "the controller treats every registration as clean "
           "(ignores the clean-shutdown broker epoch)", {"registration_checks_clean_shutdown": False}),
    Mutant("register-keeps-isr", "a broker registering after an unclean shutdown is left in the ISR",
           {"unclean_registration_leaves_isr": False}),
    Mutant("fenced-elr-elected", "an ELR member is elected leader while fenced", {"elr_leader_must_be_unfenced": False}),
    Mutant("elr-leader-not-added-to-isr", "a leader elected from ELR is not moved into the ISR",
           {"elr_leader_joins_isr": False}),
    Mutant("unclean-election-marked-clean", "with no candidate left, the first live replica is elected as if "
           "the election were clean", {"clean_election_needs_candidate": False}),
    Mutant("no-broker-epoch-check", "the controller ignores the per-member broker epochs of AlterPartition "
           "(KIP-903 check off)", {"controller_checks_member_epochs": False}),
    Mutant("expand-without-catch-up", "the leader proposes a follower for the ISR before it has caught up to "
           "the HWM", {"expand_requires_catch_up": False}),
    Mutant("unfence-adds-to-isr", "unfencing a broker adds it back to the ISR of its partitions",
           {"unfence_adds_to_isr": True}),
    Mutant("follower-no-truncate", "a follower keeps a divergent suffix instead of truncating to the leader's log",
           {"follower_truncates": False}),
    Mutant("leader-epoch-not-bumped", "a leader change does not bump leader_epoch",
           {"leader_change_bumps_leader_epoch": False}),
)


def preset_rules(name: str) -> Rules:
    return replace(DEFAULT_RULES, **PRESETS[name].changes)


def apply_mutant(rules: Rules, name: str) -> Rules:
    return replace(rules, **MUTANTS[name].changes)
