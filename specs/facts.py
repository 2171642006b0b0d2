"""What properties and studies ask of a state, written once: who leads and runs, which
records a reader can no longer get, and whether KIP-966's durability promise still applies.

The invariants (invariants/) state their rules with these; the studies (availability) reach
them only through the Model's hooks, so no engine or study reads Kafka's fields itself.
"""
from __future__ import annotations

from typing import Optional

from specs.config import Config
from specs.state import NO_LEADER, Replica, State


def replica(cfg: Config, s: State, b: int) -> Optional[Replica]:
    """Broker b's replica, None if b is not a broker of this config (a NO_LEADER, a stranger)."""
    if b not in cfg.brokers:
        return None
    return s.replicas[cfg.brokers.index(b)]


def running_leader(cfg: Config, s: State) -> Optional[Replica]:
    """The leader's replica if the partition has a leader and its process runs (a crashed leader
    serves nobody while its session has not yet timed out), else None."""
    leader = s.ctrl.partition.leader
    r = replica(cfg, s, leader) if leader != NO_LEADER else None
    return r if r is not None and r.alive else None


def holds_committed_log(cfg: Config, s: State, b: int) -> bool:
    """Broker b's log starts with every committed record (the history's `visible`), at its
    offset (specs/kernel/mechanics.py, holds_committed_log)."""
    from specs.kernel import on_kernel
    return on_kernel(cfg, lambda k: k.fact(s, "holds_committed_log", b))


def promised_min_isr(s: State) -> int:
    """The min ISR the committed records were promised: the least effective min ISR since the
    first commit (a later raise does not raise it; History.promised_min_isr)."""
    return s.hist.promised_min_isr or s.ctrl.effective_min_isr


def least_min_isr(s: State) -> int:
    """The least effective min ISR since the run began (History.least_min_isr)."""
    return s.hist.least_min_isr or s.ctrl.effective_min_isr


def within_tolerance(cfg: Config, s: State) -> bool:
    """KIP-966's durability promise applies: fewer lossy crashes of the partition's replicas
    than the min ISR the committed records were promised (`promised_min_isr`), and no unclean
    election an operator chose (specs/kernel/mechanics.py, within_tolerance, which the
    properties run)."""
    from specs.kernel import on_kernel
    return on_kernel(cfg, lambda k: k.fact(s, "within_tolerance"))


def lost_records(cfg: Config, s: State) -> set:
    """Acknowledged records a reader cannot get: missing from the running leader's log, or,
    with no running leader, from every replica's log."""
    acked = s.hist.acked
    if not acked:
        return set()
    r = running_leader(cfg, s)
    held = {rec for _, rec in r.log} if r is not None else {rec for x in s.replicas for _, rec in x.log}
    return set(acked) - held


def hits_running_broker(cfg: Config, s: State, target) -> bool:
    """A fault aimed at `target` hits a running broker (the fence of a stopped broker is its
    session timing out, not a fault)."""
    r = replica(cfg, s, target) if target is not None else None
    return r is not None and r.alive
