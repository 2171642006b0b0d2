"""The findings docs/FINDINGS.md reports about Kafka, as the model recognises them in a run.

A counterexample another engine finds (a z3 refutation made concrete, a fuzz or simulate run)
is named after the finding it is an instance of, with the `check` command that shows the
finding, so a reader goes from "refuted" to the entry that says what it means for Kafka. A
recogniser reads the run's story (which steps happened, what the controller chose, which
property broke), not its exact steps: a shorter or reordered run of the same story is the same
finding. A run no recogniser claims is reported as no known finding, which is itself news.
tests/specs/test_findings.py holds every recogniser to the finding's own scenario files and
docs/FINDINGS.md to this catalogue.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

DURABILITY = ("LeaderCandidateCompleteness", "LeaderCompleteness", "NoCommittedRecordLostGlobally",
              "ConsumerHwmNeverBackward", "RecoveryElectsAReplicaWithEveryAnsweredRecord")


class Finding(NamedTuple):
    id: str                              # "F6", as docs/FINDINGS.md numbers them
    title: str                           # its heading there
    check: str                           # the command that finds it (its "found by")
    scenarios: tuple[str, ...]           # under specs/scenarios/findings/
    recognize: Callable                  # (trace) -> bool


def _story(trace) -> tuple[list, list]:
    return [trace.initial] + [s for _, s in trace.steps], [label for label, _ in trace.steps]


def _controller_unclean(states) -> list[int]:
    """Steps at which the controller elected uncleanly on its own (no operator chose it)."""
    return [i for i in range(1, len(states))
            if states[i].hist.unclean_elections > states[i - 1].hist.unclean_elections
            and states[i].hist.operator_unclean_elections == states[i - 1].hist.operator_unclean_elections]


def _elr_cleared_by_min_isr(states, labels) -> list[int]:
    """set_min_isr steps that emptied a non-empty ELR (Kafka clears ELR on every change)."""
    return [i for i in range(1, len(states)) if labels[i - 1][0] == "set_min_isr"
            and states[i - 1].ctrl.partition.elr and not states[i].ctrl.partition.elr]


def _min_isr_change_then_unclean(trace) -> bool:
    states, labels = _story(trace)
    cleared = _elr_cleared_by_min_isr(states, labels)
    broken = set(trace.violated) & (set(DURABILITY) | {"UncleanElectionOnlyAfterMinIsrUncleanShutdowns"})
    return trace.config.rules.elr and bool(broken) and any(c < e for c in cleared for e in _controller_unclean(states))


def _last_known_leader_after_unclean_shutdowns(trace) -> bool:
    from specs.facts import least_min_isr
    states, labels = _story(trace)
    if not trace.config.rules.elr or _elr_cleared_by_min_isr(states, labels):
        return False
    lossy = [i for i, label in enumerate(labels, 1) if label[0] == "crash_lossy"]
    return bool(set(trace.violated) & set(DURABILITY)) and any(
        lossy and lossy[0] < e and states[e].hist.unclean_shutdowns >= least_min_isr(states[e])
        for e in _controller_unclean(states))


def _last_replica_standing(trace) -> bool:
    states, labels = _story(trace)
    return (not trace.config.rules.elr and bool(set(trace.violated) & set(DURABILITY))
            and not _controller_unclean(states) and any(label[0] == "crash_lossy" for label in labels)
            and states[-1].hist.operator_unclean_elections == 0)


def _fenced_last_known_leader(trace) -> bool:
    last = trace.final
    return "LeaderElectedRegisteredUnfenced" in trace.violated and last.ctrl.partition.leader in last.ctrl.fenced


def _reassignment_leaves_elr(trace) -> bool:
    _, labels = _story(trace)
    return "ElrOnlyBelowMinIsr" in trace.violated and any(label[0] == "reassign" for label in labels)


FINDINGS = (
    Finding("F1", "A min.insync.replicas change, then the last known leader is elected uncleanly after one "
                  "unclean shutdown, and an acknowledged record is lost",
            "kraft-verify check --bound config_changes=1",
            ("min-isr-change-then-last-known-leader-elected-uncleanly.json",
             "min-isr-change-then-last-known-leader-loses-an-acknowledged-record.json"),
            _min_isr_change_then_unclean),
    Finding("F2", "A reassignment leaves a removed replica in ELR beside a full ISR",
            "kraft-verify matrix (row min-isr-above-rf)", ("reassignment-leaves-elr-beside-a-full-isr.json",),
            _reassignment_leaves_elr),
    Finding("F3", "Kafka 3.9: the last replica standing loses an acknowledged record after one lossy crash",
            "kraft-verify check --preset kafka-3.9", ("last-replica-standing-loses-an-acknowledged-record.json",),
            _last_replica_standing),
    Finding("F4", "Kafka 4.0 elects a fenced broker, its last known leader",
            "kraft-verify check --preset kafka-4.0 --bound config_changes=1 --bound isr_shrinks=1",
            ("kafka-4.0-elects-a-fenced-last-known-leader.json",), _fenced_last_known_leader),
    Finding("F6", "Two unclean shutdowns, one of them lossy: the last known leader, which lost the data, is "
                  "elected over the replica that kept it",
            "kraft-verify check --bound crashes=1",
            ("last-known-leader-loses-an-acknowledged-record-after-two-unclean-shutdowns.json",),
            _last_known_leader_after_unclean_shutdowns),
)
BY_ID = {f.id: f for f in FINDINGS}


def recognize(trace) -> Optional[Finding]:
    """The first finding whose story `trace` (a counterexample, specs.Trace) tells, or None."""
    if trace is None:
        return None
    return next((f for f in FINDINGS if f.recognize(trace)), None)


def named(trace) -> str:
    """'FINDINGS.md F6 (...), shown by `kraft-verify check --bound crashes=1`', or what it is not."""
    f = recognize(trace)
    if f is None:
        return "no finding of docs/FINDINGS.md tells this story: a new one, or a gap in the model, to look into"
    return f"FINDINGS.md {f.id}, {f.title[0].lower() + f.title[1:]}; shown by `{f.check}`"
