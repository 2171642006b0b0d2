"""Why a property fails at the last step of a counterexample, in words a person can check
against the table: which record was acknowledged when, who holds it and who lost it by which
step; or which fields contradict the rule. Each invariant names its explanation where it is
declared (`explain=`); every function here takes (cfg, states, labels, describe) and returns
the sentence, or None when the state does not show the usual story (then `generic` speaks).
Reports reach these through the Invariant, so no engine or writer reads Kafka's state."""
from __future__ import annotations

from typing import Optional

from specs.state import NO_LEADER

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


def leader_lacks_acknowledged(cfg, states, labels, describe) -> Optional[str]:
    """The leader lacks acknowledged records: since when it leads, and each record's story."""
    last = states[-1]
    leader = last.ctrl.partition.leader
    missing = [rec for rec in last.hist.acked if not _holds(last, cfg, leader, rec)]
    if leader == NO_LEADER or not missing:
        return None
    return (f"the leader b{leader} lacks acknowledged record(s) {', '.join(f'r{r}' for r in missing)}: "
            f"{_leader_story(cfg, states, labels, describe)}; "
            + "; ".join(_record_story(cfg, states, labels, describe, r) for r in missing))


def acknowledged_gone(cfg, states, labels, describe) -> Optional[str]:
    """An acknowledged record no replica holds: when it was acknowledged, how each copy went."""
    last = states[-1]
    gone = [rec for rec in last.hist.acked if not any(_holds(last, cfg, b, rec) for b in cfg.brokers)]
    return "; ".join(_record_story(cfg, states, labels, describe, r) for r in gone) or None


def _lacks_committed(cfg, states, labels, describe, candidates) -> Optional[str]:
    last = states[-1]
    p = last.ctrl.partition
    short = [(b, rec) for b in sorted(candidates) for rec in last.hist.visible
             if b in cfg.brokers and last.replicas[cfg.brokers.index(b)].alive and not _holds(last, cfg, b, rec)]
    if not short:
        return None
    b, rec = short[0]
    role = "the leader" if b == p.leader else f"a leader candidate (isr={_ids(p.isr)}, elr={_ids(p.elr)})"
    return f"b{b} is {role} but lacks committed record r{rec}: " + _record_story(
        cfg, states, labels, describe, rec, "committed")


def candidate_lacks_committed(cfg, states, labels, describe) -> Optional[str]:
    """A running leader candidate (ISR, or unfenced ELR) lacks a committed record."""
    last = states[-1]
    p = last.ctrl.partition
    candidates = set(p.isr) | {b for b in p.elr if b not in last.ctrl.fenced}
    return _lacks_committed(cfg, states, labels, describe, candidates)


def leader_lacks_committed(cfg, states, labels, describe) -> Optional[str]:
    """The running leader lacks a record a consumer was shown."""
    return _lacks_committed(cfg, states, labels, describe, {states[-1].ctrl.partition.leader} - {NO_LEADER})


def isr_elr_overlap(cfg, states, labels, describe) -> str:
    p = states[-1].ctrl.partition
    return (f"after step {len(states) - 1} b{sorted(set(p.isr) & set(p.elr))} are in both isr={_ids(p.isr)} "
            f"and elr={_ids(p.elr)}")


def elr_at_min_isr(cfg, states, labels, describe) -> str:
    last = states[-1]
    p = last.ctrl.partition
    return (f"after step {len(states) - 1} elr={_ids(p.elr)} is not empty although |isr|={len(p.isr)} reaches "
            f"min ISR {last.ctrl.effective_min_isr}: ELR is meant only for a partition below min ISR")


def leader_outside_isr(cfg, states, labels, describe) -> Optional[str]:
    p = states[-1].ctrl.partition
    if p.leader == NO_LEADER:
        return None
    return f"after step {len(states) - 1} the leader b{p.leader} is not in isr={_ids(p.isr)}"
