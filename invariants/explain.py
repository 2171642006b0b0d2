"""Why a property fails at the last step of a counterexample, in words a person can check
against the table: which record was acknowledged when, who holds it and who lost it by which
step; or which fields contradict the rule. The engines reach this through the Model's
`explain` hook, so they never read Kafka's state themselves."""
from __future__ import annotations

from typing import Optional

from specs.state import NO_LEADER

DURABILITY = ("LeaderCompleteness", "NoCommittedRecordLostGlobally", "LeaderCandidateCompleteness",
              "ConsumerHwmNeverBackward", "RecoveryElectsAReplicaWithEveryAnsweredRecord")


def _ids(xs) -> str:
    return "[" + ",".join(f"b{x}" for x in xs) + "]"


def _holds(state, cfg, b, rec) -> bool:
    return b in cfg.brokers and any(r == rec for _, r in state.replicas[cfg.brokers.index(b)].log)


def _first(states, test) -> Optional[int]:
    return next((i for i, s in enumerate(states) if test(s)), None)


def _how_lost(cfg, states, labels, describe, b, rec) -> str:
    """'b1 lost it at step 7 (crash broker=1 lossy)', or '' if b never held it."""
    held = [i for i, s in enumerate(states) if _holds(s, cfg, b, rec)]
    if not held or held[-1] + 1 >= len(states):
        return f"b{b} never held it" if not held else ""
    k = held[-1] + 1
    label, leader = labels[k - 1], states[k].ctrl.partition.leader
    how = {"fetch": f"truncated to the log of the leader b{leader}",
           "crash_lossy": "lost its unflushed records in a crash"}.get(label[0], describe(label))
    return f"b{b} {how} at step {k} ({describe(label)})"


def _record_story(cfg, states, labels, describe, rec, kind: str = "acknowledged") -> str:
    field = "acked" if kind == "acknowledged" else "visible"
    at = _first(states, lambda s: rec in getattr(s.hist, field))
    last = states[-1]
    holders = [b for b in cfg.brokers if _holds(last, cfg, b, rec)]
    lost = [x for x in (_how_lost(cfg, states, labels, describe, b, rec) for b in cfg.replicas) if x]
    text = f"record r{rec} was {kind} at step {at}"
    who = f"only {_ids(holders)} hold" if holders else "no replica holds"
    text += f"; after step {len(states) - 1} {who} it"
    return text + (": " + "; ".join(lost) if lost else "")


def _leader_story(cfg, states, labels, describe) -> str:
    last = states[-1]
    leader = last.ctrl.partition.leader
    k = max((i for i in range(1, len(states)) if states[i - 1].ctrl.partition.leader != leader), default=0)
    return f"b{leader} leads since step {k}" + (f" ({describe(labels[k - 1])})" if k else "")


def explain(cfg, initial, steps, name: str, describe) -> str:
    """One paragraph: why `name` fails after the last of `steps` ((label, state) pairs)."""
    states = [initial] + [s for _, s in steps]
    labels = [label for label, _ in steps]
    last, n = states[-1], len(states) - 1
    p = last.ctrl.partition
    if name in ("LeaderCompleteness", "RecoveryElectsAReplicaWithEveryAnsweredRecord"):
        leader = p.leader
        missing = [rec for rec in last.hist.acked if not _holds(last, cfg, leader, rec)]
        if leader != NO_LEADER and missing:
            return (f"the leader b{leader} lacks acknowledged record(s) {', '.join(f'r{r}' for r in missing)}: "
                    f"{_leader_story(cfg, states, labels, describe)}; "
                    + "; ".join(_record_story(cfg, states, labels, describe, r) for r in missing))
    if name == "NoCommittedRecordLostGlobally":
        gone = [rec for rec in last.hist.acked if not any(_holds(last, cfg, b, rec) for b in cfg.brokers)]
        if gone:
            return "; ".join(_record_story(cfg, states, labels, describe, r) for r in gone)
    if name in ("LeaderCandidateCompleteness", "ConsumerHwmNeverBackward"):
        candidates = set(p.isr) | {b for b in p.elr if b not in last.ctrl.fenced}
        if name == "ConsumerHwmNeverBackward":
            candidates = {p.leader} - {NO_LEADER}
        short = [(b, rec) for b in sorted(candidates) for rec in last.hist.visible
                 if b in cfg.brokers and last.replicas[cfg.brokers.index(b)].alive and not _holds(last, cfg, b, rec)]
        if short:
            b, rec = short[0]
            role = "the leader" if b == p.leader else f"a leader candidate (isr={_ids(p.isr)}, elr={_ids(p.elr)})"
            return f"b{b} is {role} but lacks committed record r{rec}: " + _record_story(
                cfg, states, labels, describe, rec, "committed")
    if name == "IsrElrDisjoint":
        return f"after step {n} b{sorted(set(p.isr) & set(p.elr))} are in both isr={_ids(p.isr)} and elr={_ids(p.elr)}"
    if name == "ElrOnlyBelowMinIsr":
        return (f"after step {n} elr={_ids(p.elr)} is not empty although |isr|={len(p.isr)} reaches "
                f"min ISR {last.ctrl.effective_min_isr}: ELR is meant only for a partition below min ISR")
    if name == "LeaderInIsr" and p.leader != NO_LEADER:
        return f"after step {n} the leader b{p.leader} is not in isr={_ids(p.isr)}"
    return (f"{name} fails after step {n} ({describe(labels[-1]) if labels else 'the initial state'}): "
            f"leader={p.leader}, isr={_ids(p.isr)}, elr={_ids(p.elr)}, acked={list(last.hist.acked)}")
