"""Why a property fails at the last step of a counterexample, in words a person can check
against the table: which record was acknowledged when, who holds it and who lost it by which
step; or which fields contradict the rule. Each invariant names its explanation where it is
declared (`explain=`); every function here takes (cfg, states, labels, describe) and returns
the sentence, or None when the state does not show the usual story (then `generic` speaks).
Reports reach these through the Invariant, so no engine or writer reads Kafka's state."""
from __future__ import annotations

import functools
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


def _steps_where(states, test) -> list[int]:
    return [i for i in range(1, len(states)) if test(states[i - 1], states[i])]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "es" if word.endswith("sh") else "s")


# Why a raise of min ISR leaves the kept value where it was (docs/protocol.md, "Durability").
_RAISE_AFTER_COMMIT = "a raise after a commit promises nothing for the records already at risk"
_RAISE_AFTER_SHRINK = "a raise brings back none of the ISR and ELR members the lower value let go"


def _min_isr_story(states, kept, since: str, why: str) -> str:
    """'min ISR 2' or, where the current one differs from the kept one (`kept(state)`), which
    step set what: 'min ISR 2 (the least since the first commit at step 3; it is 3 since step
    5, but <why>)'."""
    last = states[-1]
    value, current = kept(last), last.ctrl.effective_min_isr
    if value == current:
        return f"min ISR {value}"
    changed = max((i for i in range(1, len(states))
                   if states[i].ctrl.effective_min_isr != states[i - 1].ctrl.effective_min_isr), default=0)
    return f"min ISR {value} (the least {since}; it is {current} since step {changed}, but {why})"


def tolerance_story(cfg, states, labels, describe) -> str:
    """What KIP-966's tolerance had to absorb: the lossy crashes of replicas against the min
    ISR the committed records were promised (the least since the first commit, specs/facts.py),
    whether unclean elections were enabled, and each unclean election with who made it (the
    controller's own last-known-leader election excuses no loss: specs/facts.py)."""
    from specs.facts import promised_min_isr
    last = states[-1]
    crashes = [f"b{labels[i - 1][1]} at step {i}"
               for i in _steps_where(states, lambda a, b: b.hist.lossy_crashes > a.hist.lossy_crashes)]
    n = last.hist.lossy_crashes
    first = _first(states, lambda s: s.hist.acked or s.hist.visible)
    since = "since the first commit" + (f" at step {first}" if first is not None else "")
    text = (f"after {_plural(n, 'lossy crash')}" + (f" ({', '.join(crashes)})" if crashes else "")
            + f" against {_min_isr_story(states, promised_min_isr, since, _RAISE_AFTER_COMMIT)}")
    if not any(s.ctrl.unclean_leader_election for s in states):
        text += ", with unclean.leader.election.enable=false"
    elections = []
    for i in _steps_where(states, lambda a, b: b.hist.unclean_elections > a.hist.unclean_elections):
        chosen = states[i].hist.operator_unclean_elections > states[i - 1].hist.operator_unclean_elections
        who = "an operator's choice" if chosen else "the controller's own, of its last known leader"
        elections.append(f"b{states[i].ctrl.partition.leader} at step {i} ({describe(labels[i - 1])}; {who})")
    if elections:
        text += "; unclean election" + ("s" if len(elections) > 1 else "") + ": " + "; ".join(elections)
    return text


def leader_lacks_acknowledged(cfg, states, labels, describe) -> Optional[str]:
    """The leader lacks acknowledged records: since when it leads, and each record's story."""
    last = states[-1]
    leader = last.ctrl.partition.leader
    missing = [rec for rec in last.hist.acked if not _holds(last, cfg, leader, rec)]
    if leader == NO_LEADER or not missing:
        return None
    return (f"the leader b{leader} lacks acknowledged record(s) {', '.join(f'r{r}' for r in missing)}: "
            f"{_leader_story(cfg, states, labels, describe)}; "
            + "; ".join(_record_story(cfg, states, labels, describe, r) for r in missing)
            + "; " + tolerance_story(cfg, states, labels, describe))


def acknowledged_gone(cfg, states, labels, describe) -> Optional[str]:
    """An acknowledged record no replica holds: when it was acknowledged, how each copy went."""
    last = states[-1]
    gone = [rec for rec in last.hist.acked if not any(_holds(last, cfg, b, rec) for b in cfg.brokers)]
    if not gone:
        return None
    return ("; ".join(_record_story(cfg, states, labels, describe, r) for r in gone)
            + "; " + tolerance_story(cfg, states, labels, describe))


def _lacks_committed(cfg, states, labels, describe, candidates) -> Optional[str]:
    last = states[-1]
    p = last.ctrl.partition
    short = [(b, rec) for b in sorted(candidates) for rec in last.hist.visible
             if b in cfg.brokers and last.replicas[cfg.brokers.index(b)].alive and not _holds(last, cfg, b, rec)]
    if not short:
        return None
    b, rec = short[0]
    role = "the leader" if b == p.leader else f"a leader candidate (isr={_ids(p.isr)}, elr={_ids(p.elr)})"
    return (f"b{b} is {role} but lacks committed record r{rec}: "
            + _record_story(cfg, states, labels, describe, rec, "committed")
            + "; " + tolerance_story(cfg, states, labels, describe))


def candidate_lacks_committed(cfg, states, labels, describe) -> Optional[str]:
    """A running leader candidate (ISR, or unfenced ELR) lacks a committed record."""
    last = states[-1]
    p = last.ctrl.partition
    candidates = set(p.isr) | {b for b in p.elr if b not in last.ctrl.fenced}
    return _lacks_committed(cfg, states, labels, describe, candidates)


def consumer_read_gone(cfg, states, labels, describe) -> Optional[str]:
    """A record a consumer was shown (below the highest HWM) is not at its offset in the running
    leader's log: what the consumer read, where, since when, and what the leader has there."""
    last = states[-1]
    leader = last.ctrl.partition.leader
    if leader == NO_LEADER or leader not in cfg.brokers or not last.replicas[cfg.brokers.index(leader)].alive:
        return None
    log = [rec for _, rec in last.replicas[cfg.brokers.index(leader)].log]
    off = next((o for o, rec in enumerate(last.hist.visible) if o >= len(log) or log[o] != rec), None)
    if off is None:
        return None
    rec = last.hist.visible[off]
    shown = _first(states, lambda s: len(s.hist.visible) > off and s.hist.visible[off] == rec)
    there = f"holds r{log[off]} there" if off < len(log) else f"ends at offset {len(log)}"
    return (f"a consumer was shown r{rec} at offset {off} (below the high watermark since step {shown}); after "
            f"step {len(states) - 1} the leader b{leader} {there}, so the high watermark a consumer reads went "
            f"back past a record it had read; " + _record_story(cfg, states, labels, describe, rec, "committed")
            + "; " + tolerance_story(cfg, states, labels, describe))


def recovery_elected_less(cfg, states, labels, describe) -> Optional[str]:
    """The recovery round's choice against the replicas that answered it: who was elected, which
    acknowledged record it lacks, and who answered holding it."""
    if len(states) < 2:
        return None
    prev, last = states[-2], states[-1]
    new = last.ctrl.partition.leader
    if new == NO_LEADER or new not in cfg.brokers:
        return None
    chosen = {rec for _, rec in last.replicas[cfg.brokers.index(new)].log}
    answered = [b for b in prev.ctrl.partition.replicas if b in cfg.brokers
                and prev.replicas[cfg.brokers.index(b)].alive and prev.ctrl.acceptable_leader(b)]
    missing = [(b, rec) for b in answered for rec in prev.hist.acked if _holds(prev, cfg, b, rec) and rec not in chosen]
    if not missing:
        return None
    b, rec = missing[0]
    return (f"at {_last_step(states, labels, describe)} the recovery round elected b{new}, whose log lacks the "
            f"acknowledged r{rec}, though b{b} answered the round holding it (the replicas that answered: "
            f"{_ids(answered)}): the round chose less data than it was told of; "
            + tolerance_story(cfg, states[:-1], labels[:-1], describe))


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


def _last_step(states, labels, describe) -> str:
    k = len(states) - 1
    return f"step {k} ({describe(labels[-1])})" if labels else "the initial state"


def unclean_election_too_early(cfg, states, labels, describe) -> Optional[str]:
    """Who was elected uncleanly, by whom, after how many unclean shutdowns against the least
    min ISR of the run."""
    from specs.facts import least_min_isr
    prev, last = states[-2:] if len(states) > 1 else (None, None)
    if last is None:
        return None
    p = last.ctrl.partition
    shutdowns = [f"b{labels[i - 1][1]}'s registration at step {i}"
                 for i in _steps_where(states, lambda a, b: b.hist.unclean_shutdowns > a.hist.unclean_shutdowns)
                 if len(labels[i - 1]) > 1]
    n = last.hist.unclean_shutdowns
    return (f"at {_last_step(states, labels, describe)} the controller elected b{p.leader} uncleanly "
            f"(isr={_ids(prev.ctrl.partition.isr)} and elr={_ids(prev.ctrl.partition.elr)} held no acceptable "
            f"candidate; it took its last known leader, leader_recovery_state RECOVERING) with "
            f"unclean.leader.election.enable=false, after {_plural(n, 'unclean shutdown')}"
            + (f" ({', '.join(shutdowns)})" if shutdowns else "")
            + f" where KIP-966 needs {_min_isr_story(states, least_min_isr, 'of the run', _RAISE_AFTER_SHRINK)}")


def elected_unacceptable(cfg, states, labels, describe) -> Optional[str]:
    """Which broker was elected and what made it unacceptable."""
    last = states[-1]
    ctrl, b = last.ctrl, last.ctrl.partition.leader
    why = ("not registered" if b not in ctrl.registered else "fenced" if b in ctrl.fenced
           else "in controlled shutdown" if b in ctrl.shutting_down else None)
    if why is None:
        return None
    return f"at {_last_step(states, labels, describe)} the controller elected b{b}, which is {why}"


def elected_outside_candidates(cfg, states, labels, describe) -> Optional[str]:
    """A clean election whose leader was in neither the ISR nor the ELR."""
    prev, last = states[-2], states[-1]
    p = prev.ctrl.partition
    return (f"at {_last_step(states, labels, describe)} b{last.ctrl.partition.leader} became leader in an "
            f"election not marked unclean, but before the step it was in neither isr={_ids(p.isr)} nor "
            f"elr={_ids(p.elr)}")


def leader_epoch_reused(cfg, states, labels, describe) -> Optional[str]:
    prev, last = states[-2].ctrl.partition, states[-1].ctrl.partition
    return (f"at {_last_step(states, labels, describe)} the leader moved from b{prev.leader} to b{last.leader} "
            f"but the leader epoch went from {prev.leader_epoch} to {last.leader_epoch}: two leaders share "
            f"an epoch")


def _log(log) -> str:
    return "[" + ",".join(f"e{e}:r{r}" for e, r in log) + "]"


def _leader_replica(cfg, state):
    """The leader's replica, or None if the partition has no leader among the brokers."""
    leader = state.ctrl.partition.leader
    return state.replicas[cfg.brokers.index(leader)] if leader in cfg.brokers else None


def _off_leader(off):
    """An explanation from `off(cfg, last state, partition, leader's replica)`, which yields a
    sentence for each replica whose log is not the leader's: the first, after the last step; None
    if the partition has no leader among the brokers or it yields none."""
    @functools.wraps(off)
    def explain(cfg, states, labels, describe) -> Optional[str]:
        last = states[-1]
        p, lrep = last.ctrl.partition, _leader_replica(cfg, last)
        said = None if lrep is None else next(off(cfg, last, p, lrep), None)
        return None if said is None else f"after {_last_step(states, labels, describe)} {said}"
    return explain


@_off_leader
def lost_replica_in_isr(cfg, last, p, lrep):
    """An ISR member whose log below the leader's HWM is not the leader's."""
    for b in p.isr:
        r = last.replicas[cfg.brokers.index(b)] if b in cfg.brokers else None
        if b != p.leader and r is not None and r.alive and r.log[:lrep.hwm] != lrep.log[:lrep.hwm]:
            yield (f"b{b} is in isr={_ids(p.isr)} but its log {_log(r.log)} differs from the leader "
                   f"b{p.leader}'s {_log(lrep.log)} below its HWM {lrep.hwm}")


@_off_leader
def follower_diverges(cfg, last, p, lrep):
    """A follower whose log differs from the leader's below the offset the leader saw it fetch."""
    for b, r, fs in zip(cfg.brokers, last.replicas, last.followers):
        if b != p.leader and fs.leo >= 0 and r.log[:fs.leo] != lrep.log[:fs.leo]:
            yield (f"the leader b{p.leader} saw b{b} fetch up to offset {fs.leo}, but b{b}'s log "
                   f"{_log(r.log)} is not the leader's {_log(lrep.log)} up to there")


def logs_disagree(cfg, states, labels, describe) -> Optional[str]:
    """Two logs with an entry of one leader epoch at one offset that differ before it."""
    last = states[-1]
    reps = [(b, r.log) for b, r in zip(cfg.brokers, last.replicas) if r.log]
    for i, (a, x) in enumerate(reps):
        for b, y in reps[i + 1:]:
            for k in range(min(len(x), len(y)) - 1, -1, -1):
                if x[k][0] == y[k][0]:
                    if x[:k + 1] != y[:k + 1]:
                        return (f"after {_last_step(states, labels, describe)} b{a}'s log {_log(x)} and b{b}'s "
                                f"{_log(y)} both hold leader epoch {x[k][0]} at offset {k} but differ up to it")
                    break
    return None
