"""The broker side of one partition: logs, fetch with truncation, the HWM rule,
the leader's ISR proposals, flush, crash and restart.

Metadata reaches brokers atomically: every broker acts on the controller's
current partition state. What a broker learns only through requests (a
follower's log end offset and broker epoch from Fetch) is kept separately, so
a leader can act on stale knowledge, as in Kafka.
"""
from __future__ import annotations

from typing import Optional

from specs.config import Config
from specs.state import (NO_EPOCH, NO_LEADER, RECOVERED, AlterPartitionRequest, FollowerState,
                         Replica, State)

UNKNOWN = FollowerState(-1, NO_EPOCH)


def replica_of(cfg: Config, s: State, b: int) -> Replica:
    return s.replicas[cfg.brokers.index(b)]


def set_replica(cfg: Config, s: State, b: int, r: Replica) -> State:
    i = cfg.brokers.index(b)
    return s._replace(replicas=s.replicas[:i] + (r,) + s.replicas[i + 1:])


def live_leader(cfg: Config, s: State) -> int:
    """The partition leader if its process is running, else NO_LEADER."""
    leader = s.ctrl.partition.leader
    if leader == NO_LEADER or leader not in cfg.brokers or not replica_of(cfg, s, leader).alive:
        return NO_LEADER
    return leader


def common_prefix(a: tuple, b: tuple) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def maximal_isr(s: State) -> tuple[int, ...]:
    """Committed ISR plus the additions of the leader's own pending AlterPartition."""
    p = s.ctrl.partition
    req = s.inflight
    if req is not None and req.broker == p.leader and req.leader_epoch == p.leader_epoch:
        return tuple(sorted(set(p.isr) | set(req.isr)))
    return p.isr


def follower_leo(cfg: Config, s: State, leader: int, b: int) -> int:
    if b == leader:
        return len(replica_of(cfg, s, leader).log)
    return s.followers[cfg.brokers.index(b)].leo


def next_hwm(cfg: Config, s: State) -> Optional[int]:
    """The HWM the leader may advance to now, or None if it may not advance."""
    leader = live_leader(cfg, s)
    if leader == NO_LEADER:
        return None
    p = s.ctrl.partition
    maximal = maximal_isr(s)
    gate = len(maximal) if cfg.rules.hwm_gate_counts_maximal_isr else len(p.isr)
    if (cfg.rules.hwm_requires_min_isr
            and gate < s.ctrl.effective_min_isr):
        return None
    log = replica_of(cfg, s, leader).log
    if not cfg.rules.hwm_waits_for_isr:
        target = len(log)
    else:
        target = min(follower_leo(cfg, s, leader, b) for b in maximal)
    current = replica_of(cfg, s, leader).hwm
    return target if target > current else None


def expand_candidates(cfg: Config, s: State, leader: int) -> list[int]:
    """Followers the leader may propose for the ISR (caught up, eligible in its metadata,
    and, with KIP-903, fetched with the broker epoch its metadata holds)."""
    ctrl = s.ctrl
    p = ctrl.partition
    hwm = replica_of(cfg, s, leader).hwm
    out = []
    for b in p.replicas:
        if b in p.isr or b not in cfg.brokers:
            continue
        fs = s.followers[cfg.brokers.index(b)]
        if cfg.rules.expand_requires_catch_up and (fs.leo < 0 or fs.leo < hwm):
            continue
        if not ctrl.acceptable_leader(b):
            continue
        if cfg.rules.broker_epoch_check and fs.broker_epoch != ctrl.broker_epoch(b):
            continue
        out.append(b)
    return out


def alter_partition_request(cfg: Config, s: State, leader: int, isr: tuple[int, ...],
                            recovery: int = RECOVERED) -> AlterPartitionRequest:
    """What the leader sends: with KIP-903 each member's epoch as learned from its Fetch."""
    ctrl = s.ctrl
    if cfg.rules.broker_epoch_check:
        epochs = tuple(ctrl.broker_epoch(b) if b == leader else s.followers[cfg.brokers.index(b)].broker_epoch
                       for b in isr)
    else:
        epochs = tuple(NO_EPOCH for _ in isr)
    p = ctrl.partition
    return AlterPartitionRequest(leader, ctrl.broker_epoch(leader), p.leader_epoch, p.partition_epoch,
                                 isr, epochs, recovery)


def fetch(cfg: Config, s: State, follower: int) -> State:
    """The follower truncates to its common prefix with the leader's log and copies the rest;
    the leader records the follower's new log end offset and broker epoch."""
    leader = s.ctrl.partition.leader
    lrep = replica_of(cfg, s, leader)
    frep = replica_of(cfg, s, follower)
    keep = common_prefix(frep.log, lrep.log)
    if not cfg.rules.follower_truncates:
        log = frep.log + lrep.log[len(frep.log):]
        keep = len(frep.log)
    else:
        log = lrep.log
    frep = frep._replace(log=log, flushed=min(frep.flushed, keep), hwm=min(lrep.hwm, len(log)))
    s = set_replica(cfg, s, follower, frep)
    i = cfg.brokers.index(follower)
    fs = FollowerState(len(log), s.ctrl.broker_epoch(follower))
    return s._replace(followers=s.followers[:i] + (fs,) + s.followers[i + 1:])


def stop_cleanly(cfg: Config, s: State, b: int) -> State:
    """A clean stop: the log is flushed and the clean-shutdown file holds the broker epoch."""
    r = replica_of(cfg, s, b)
    epoch = s.ctrl.broker_epoch(b)
    return set_replica(cfg, s, b, r._replace(alive=False, flushed=len(r.log),
                                             clean_file=NO_EPOCH if epoch is None else epoch))


def crash(cfg: Config, s: State, b: int, survivors: tuple) -> State:
    """Unclean shutdown: the process stops, the clean-shutdown file is absent, and the log is
    what reached the disk."""
    r = replica_of(cfg, s, b)
    r = r._replace(alive=False, log=survivors, hwm=min(r.hwm, len(survivors)),
                   flushed=min(r.flushed, len(survivors)), clean_file=NO_EPOCH)
    return set_replica(cfg, s, b, r)
