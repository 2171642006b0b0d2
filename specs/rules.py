"""Every protocol variation as a field of one frozen value, `Rules`.

A preset is a named set of field values and a mutant a named replacement of a few of them
(specs/catalogue.py). Model code reads these fields and nothing else: there is no other
switch, so a rule changed here changes what every engine checks.

Each field says where its rule lives (`source`: the Kafka class or the KIP) and how the z3
engine sees it (`z3`):
- SHARED: read by the controller rules (specs/pipeline.py, specs/controller.py), which the
  concrete model and the z3 encoding both run;
- BROKER: read by the broker side, which the z3 encoding abstracts by hand
  (specs/symbolic/brokers.py), so the concrete and the symbolic broker code both read it;
- an `Outside` reason: deliberately not in the z3 encoding; `prove` refuses a config that
  changes it, since a verdict would be about a model the user did not ask for.
docs/protocol.md states each rule in words.
"""
from __future__ import annotations

from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, NamedTuple, Optional

SHARED = "shared"
BROKER = "broker"
RECOVERY_STRATEGIES = ("aggressive", "balanced", "none")


class Outside(NamedTuple):
    """Why a rule is not in the z3 encoding. `only_in`: the rule matters only inside an action
    the encoding does not have, so a proof still covers every run without that action."""
    reason: str
    only_in: Optional[str] = None


def _rule(default: Any, doc: str, source: str, z3: Any, kind: str = "protocol") -> Any:
    return field(default=default, metadata={"doc": doc, "source": source, "z3": z3, "kind": kind})


_EPOCHS = Outside("epochs: the z3 encoding keeps no leader or partition epochs")
_LOGS = Outside("logs: the z3 encoding keeps one completeness bit per replica, not logs")


@dataclass(frozen=True)
class Rules:
    """The rules the model runs by. Defaults are Apache Kafka trunk (docs/protocol.md)."""

    # -- protocol variants (Kafka releases, the KIP texts) ---------------------------------
    elr: bool = _rule(
        True, "KIP-966 Eligible Leader Replicas: a member leaving the ISR below min ISR stays "
        "eligible for a clean election", "KIP-966; PartitionChangeBuilder", SHARED)
    hwm_requires_min_isr: bool = _rule(
        True, "the leader advances the high watermark only while |ISR| >= min ISR",
        "KIP-966; Partition.maybeIncrementLeaderHW", BROKER)
    broker_epoch_check: bool = _rule(
        True, "AlterPartition names each member's broker epoch as learned from its Fetch, and the "
        "leader proposes only followers whose Fetch epoch is the registered one",
        "KIP-903; Partition, ReplicationControlManager", BROKER)
    use_last_known_leader: bool = _rule(
        True, "last_known_elr holds the last known leader (Kafka); false: the KIP text's meaning "
        "(ELR members removed by an unclean shutdown) plus a separate last known leader",
        "KIP-966; PartitionChangeBuilder", SHARED)
    min_isr_change_always_clears_elr: bool = _rule(
        True, "any min.insync.replicas change clears ELR and last_known_elr (Kafka); false: only "
        "when the new min ISR <= |ISR| (KIP text)", "KIP-966; ReplicationControlManager", SHARED)
    reassignment_requires_min_isr: bool = _rule(
        False, "reassignment completes only with |ISR| >= min ISR and ELR keeps only final "
        "replicas (KIP text; Kafka enforces neither)", "KIP-966; PartitionChangeBuilder",
        Outside("reassignment: the z3 encoding has no reassignment", only_in="reassign"))
    leader_epoch_bump_on_isr_shrink: bool = _rule(
        False, "an ISR shrink bumps the leader epoch (metadata versions before 3.6)",
        "PartitionChangeBuilder", _EPOCHS)
    unclean_recovery_strategy: Optional[str] = _rule(
        None, "KIP-966 unclean recovery rounds: aggressive, balanced or none (unset: no rounds)",
        "KIP-966", Outside("unclean recovery: the z3 encoding has no recovery rounds yet"))
    # -- an abstraction, not a protocol variant ---------------------------------------------
    any_candidate_elections: bool = _rule(
        False, "an election may pick ANY valid candidate, not only the first in replica order, "
        "and the ISR is kept as a set: over-approximates Kafka and makes brokers interchangeable",
        "abstraction (docs/protocol.md, Elections)", SHARED, kind="abstraction")
    # -- rules a mutant breaks (the default is Kafka's behaviour) ---------------------------
    hwm_gate_counts_maximal_isr: bool = _rule(
        False, "the leader's min-ISR gate counts the maximal ISR (pending additions) instead of the "
        "ISR the controller committed", "KIP-966; Partition.maybeIncrementLeaderHW", BROKER, "fault")
    hwm_waits_for_isr: bool = _rule(
        True, "the high watermark is the smallest log end offset over the maximal ISR (false: the "
        "leader's own log end)", "Partition.maybeIncrementLeaderHW", BROKER, "fault")
    elr_cleared_at_min_isr: bool = _rule(
        True, "ELR (and, in the KIP text, last_known_elr) is emptied once the ISR reaches min ISR",
        "KIP-966; PartitionChangeBuilder", SHARED, "fault")
    elr_excludes_target_isr: bool = _rule(
        True, "the new ELR leaves out every member of the target ISR", "KIP-966; PartitionChangeBuilder",
        SHARED, "fault")
    isr_leavers_join_elr: bool = _rule(
        True, "a member that leaves the ISR below min ISR joins ELR", "KIP-966; PartitionChangeBuilder",
        SHARED, "fault")
    unclean_shutdown_leaves_elr: bool = _rule(
        True, "a broker whose registration shows an unclean shutdown leaves ELR and is not added to it",
        "KIP-966; PartitionChangeBuilder", SHARED, "fault")
    registration_checks_clean_shutdown: bool = _rule(
        True, "a registration is clean only if its clean-shutdown file holds the registered broker "
        "epoch", "KIP-966; ReplicationControlManager.registerBroker", SHARED, "fault")
    unclean_registration_leaves_isr: bool = _rule(
        True, "a broker registering after an unclean shutdown leaves the ISR",
        "KIP-966; ReplicationControlManager", SHARED, "fault")
    elr_leader_must_be_unfenced: bool = _rule(
        True, "an ELR member is elected only if it is an acceptable leader (unfenced)",
        "KIP-966; PartitionChangeBuilder", SHARED, "fault")
    elr_leader_joins_isr: bool = _rule(
        True, "a leader elected from ELR becomes the ISR and leaves ELR", "KIP-966; PartitionChangeBuilder",
        SHARED, "fault")
    clean_election_needs_candidate: bool = _rule(
        True, "with no ISR or ELR candidate (and no unclean election) the partition stays leaderless "
        "(false: the first live replica is elected and the election marked clean)",
        "PartitionChangeBuilder", SHARED, "fault")
    controller_checks_member_epochs: bool = _rule(
        True, "the controller refuses an AlterPartition naming a member's stale broker epoch",
        "KIP-903; ReplicationControlManager", SHARED, "fault")
    expand_requires_catch_up: bool = _rule(
        True, "the leader proposes a follower for the ISR only once it has caught up to the high "
        "watermark", "Partition.maybeExpandIsr", BROKER, "fault")
    unfence_adds_to_isr: bool = _rule(
        False, "unfencing a broker adds it back to the ISR (Kafka never does)",
        "ReplicationControlManager", SHARED, "fault")
    follower_truncates: bool = _rule(
        True, "a follower truncates to the leader's log before it appends", "KIP-101; ReplicaFetcherThread",
        _LOGS, "fault")
    leader_change_bumps_leader_epoch: bool = _rule(
        True, "every leader change bumps leader_epoch", "PartitionChangeBuilder", _EPOCHS, "fault")


RULE_FIELDS: dict[str, Field] = {f.name: f for f in fields(Rules)}
DEFAULT_RULES = Rules()


def rule_type(name: str) -> type:
    """The Python type a rule field takes (str for the recovery strategy, else bool)."""
    return str if name == "unclean_recovery_strategy" else bool


def rule_doc(name: str) -> str:
    return RULE_FIELDS[name].metadata["doc"]


def outside_z3(name: str) -> Optional[str]:
    """Why the z3 encoding leaves this rule out, or None if it encodes it."""
    z3 = RULE_FIELDS[name].metadata["z3"]
    return z3.reason if isinstance(z3, Outside) else None


def refused_by_z3(rules: "Rules") -> list[str]:
    """The rules whose value here makes a z3 verdict meaningless: changed from Kafka's, and
    outside the encoding in a way a proof cannot ignore (not merely inside an absent action)."""
    out = []
    for name, value in changed(rules).items():
        z3 = RULE_FIELDS[name].metadata["z3"]
        if isinstance(z3, Outside) and z3.only_in is None:
            out.append(f"{name}={value} ({z3.reason})")
    return out


def check_value(name: str, value: Any) -> Optional[str]:
    """None if `value` is a valid value of rule `name`, else what is wrong (one line)."""
    if name not in RULE_FIELDS:
        return f"unknown rule '{name}'"
    if name == "unclean_recovery_strategy":
        if value is None or value in RECOVERY_STRATEGIES:
            return None
        return f"unclean_recovery_strategy must be one of {', '.join(RECOVERY_STRATEGIES)}, got {value!r}"
    if not isinstance(value, bool):
        return f"rule '{name}' must be true or false, got {value!r}"
    return None


def changed(rules: Rules, base: Rules = DEFAULT_RULES) -> dict[str, Any]:
    """The fields where `rules` differs from `base`, in declaration order."""
    return {n: getattr(rules, n) for n in RULE_FIELDS if getattr(rules, n) != getattr(base, n)}


assert all(f.default is not MISSING for f in fields(Rules)), "every rule has a default"
