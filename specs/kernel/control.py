"""The controller's operations as steps (docs/protocol.md, "Controller events"): fencing,
heartbeats, controlled shutdown, admin elections, topic config changes, reassignment and
unclean recovery rounds. Their rules are the algebra's (specs/controller.py), reached through
the event table; what is here is each operation's guard (`<action>_params`) and what it does
on the broker side beside its event (`<action>_effect`), as in specs/kernel/data.py (a guard
is inlined into the successors loop, as there).
"""
from __future__ import annotations

from numba import njit

from specs.kernel.data import put
from specs.kernel.events import MISS, event, recovery_event, recovery_refused
from specs.kernel.lag import held_by
from specs.kernel.layout import L_NB, L_UNIVERSE
from specs.kernel.mechanics import (R_AUTO_LEADER_REBALANCE, R_DESIGNATED_ELECTIONS, R_RECOVERY_STRATEGY, alive,
                                    facts_of, has, stop_cleanly)
from specs.kernel.tables import (E_CONTROLLED_SHUTDOWN, E_ELECT, E_FENCE, E_PERIODIC_PREFERRED, E_PERIODIC_UNCLEAN,
                                 E_REASSIGN, E_SET_MIN_ISR, E_SET_UNCLEAN, E_UNFENCE, F_FENCED, F_LEADER, F_MIN_ISR,
                                 F_N_REPLICAS, F_REASSIGNING, F_REGISTERED, F_REPLICA_MASK, F_REPLICAS,
                                 F_SHUTTING_DOWN, F_UNCLEAN)


# ---------------------------------------------------------------- fence, unfence
@njit(cache=True, inline="always", _nrt=False)
def fence_params(r, lay, cv, f, tables, key, work, params):
    """A registered broker not yet fenced: its session times out (free for a stopped broker:
    the budget counts only a running one's, a network partition from the controller)."""
    m = 0
    for i in range(lay[L_UNIVERSE]):          # a registered stranger too
        if has(f[F_REGISTERED], i) and not has(f[F_FENCED], i):
            m = put(params, m, i, 0)
    return m


@njit(cache=True, _nrt=False)
def fence_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """It leaves the ISR and may join ELR (specs/controller.py, fence)."""
    return event(t, lay, f, tables, E_FENCE, p0, 0, 0, prefer, key, work)


@njit(cache=True, inline="always", _nrt=False)
def unfence_params(r, lay, cv, f, tables, key, work, params):
    """A fenced running broker, not in controlled shutdown, heartbeats (not one cut off from the
    controller: its metadata held)."""
    m = 0
    for i in range(lay[L_NB]):
        if has(f[F_FENCED], i) and alive(r, lay, i) and not has(f[F_SHUTTING_DOWN], i) and i != held_by(r, lay):
            m = put(params, m, i, 0)
    return m


@njit(cache=True, _nrt=False)
def unfence_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """The heartbeat unfences it; a leaderless partition elects again."""
    return event(t, lay, f, tables, E_UNFENCE, p0, 0, 0, prefer, key, work)


# ---------------------------------------------------------------- controlled_shutdown
@njit(cache=True, inline="always", _nrt=False)
def controlled_shutdown_params(r, lay, cv, f, tables, key, work, params):
    """A registered, running, unfenced broker not yet in controlled shutdown asks to shut down
    (not one cut off from the controller: its metadata held)."""
    m = 0
    for i in range(lay[L_NB]):
        if (has(f[F_REGISTERED], i) and alive(r, lay, i) and not has(f[F_FENCED], i)
                and not has(f[F_SHUTTING_DOWN], i) and i != held_by(r, lay)):
            m = put(params, m, i, 0)
    return m


@njit(cache=True, _nrt=False)
def controlled_shutdown_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """While it leads it enters controlled shutdown; a broker that leads nothing is told to shut
    down at once: fenced, it stops cleanly (it flushes and writes its clean-shutdown file).
    p1 = 1: it leads another partition (specs/partitions.py), so it enters controlled shutdown
    here too; the guard gives only p1 = 0, one partition's step."""
    if event(t, lay, f, tables, E_CONTROLLED_SHUTDOWN, p0, p1, 0, prefer, key, work) == MISS:
        return MISS
    if has(facts_of(t, lay, tables[3])[F_FENCED], p0) and not has(f[F_FENCED], p0):
        stop_cleanly(t, lay, f, p0)
    return 0


# ---------------------------------------------------------------- elect
@njit(cache=True, inline="always", _nrt=False)
def elect_params(r, lay, cv, f, tables, key, work, params):
    """Admin elections (ElectLeaders): (0: preferred, -1) always; while leaderless (1: unclean,
    -1) and, with designated_elections, (2: designated, each replica)."""
    m = put(params, 0, 0, -1)
    if f[F_LEADER] < 0:
        m = put(params, m, 1, -1)
        if cv[R_DESIGNATED_ELECTIONS]:
            for k in range(f[F_N_REPLICAS]):
                m = put(params, m, 2, f[F_REPLICAS + k])
    return m


@njit(cache=True, _nrt=False)
def elect_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    return event(t, lay, f, tables, E_ELECT, p0, p1, 0, prefer, key, work)


# ---------------------------------------------------------------- topic config
@njit(cache=True, inline="always", _nrt=False)
def set_min_isr_params(r, lay, cv, f, tables, key, work, params):
    """Any min.insync.replicas from 1 to |replicas| but the topic's own."""
    m = 0
    for v in range(1, f[F_N_REPLICAS] + 1):
        if v != f[F_MIN_ISR]:
            m = put(params, m, v, 0)
    return m


@njit(cache=True, _nrt=False)
def set_min_isr_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    return event(t, lay, f, tables, E_SET_MIN_ISR, p0, 0, 0, -1, key, work)


@njit(cache=True, inline="always", _nrt=False)
def set_unclean_params(r, lay, cv, f, tables, key, work, params):
    """unclean.leader.election.enable flipped."""
    return put(params, 0, 1 - f[F_UNCLEAN], 0)


@njit(cache=True, _nrt=False)
def set_unclean_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    return event(t, lay, f, tables, E_SET_UNCLEAN, p0, 0, 0, -1, key, work)


# ---------------------------------------------------------------- periodic_unclean_election
@njit(cache=True, inline="always", _nrt=False)
def periodic_unclean_election_params(r, lay, cv, f, tables, key, work, params):
    """A leaderless partition of a topic with unclean elections on; variant: recovery rounds
    (unclean_recovery_strategy) replace the periodic task."""
    if f[F_UNCLEAN] and f[F_LEADER] < 0 and cv[R_RECOVERY_STRATEGY] < 0:
        return put(params, 0, 0, 0)
    return 0


@njit(cache=True, _nrt=False)
def periodic_unclean_election_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    return event(t, lay, f, tables, E_PERIODIC_UNCLEAN, 0, 0, 0, prefer, key, work)


# ---------------------------------------------------------------- periodic_preferred_election
@njit(cache=True, inline="always", _nrt=False)
def periodic_preferred_election_params(r, lay, cv, f, tables, key, work, params):
    """With auto_leader_rebalance: a partition whose leader is not its first replica (Kafka's
    imbalanced partitions, leaderless ones too)."""
    if cv[R_AUTO_LEADER_REBALANCE] and f[F_LEADER] != f[F_REPLICAS]:
        return put(params, 0, 0, 0)
    return 0


@njit(cache=True, _nrt=False)
def periodic_preferred_election_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    return event(t, lay, f, tables, E_PERIODIC_PREFERRED, 0, 0, 0, prefer, key, work)


# ---------------------------------------------------------------- reassign
@njit(cache=True, inline="always", _nrt=False)
def reassign_params(r, lay, cv, f, tables, key, work, params):
    """With no reassignment under way: the replica set with one replica swapped for a spare
    broker, as base-16 digits (index + 1, first replica lowest)."""
    if f[F_REASSIGNING]:
        return 0
    m = 0
    n = f[F_N_REPLICAS]
    for k in range(n):
        for e in range(lay[L_NB]):
            if has(f[F_REPLICA_MASK], e):
                continue
            code = 0
            for j in range(n - 1, -1, -1):
                code = code * 16 + (e if j == k else f[F_REPLICAS + j]) + 1
            m = put(params, m, code, 0)
    return m


@njit(cache=True, _nrt=False)
def reassign_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    return event(t, lay, f, tables, E_REASSIGN, p0, 0, 0, -1, key, work)


# ---------------------------------------------------------------- unclean_recovery
@njit(cache=True, inline="always", _nrt=False)
def unclean_recovery_params(r, lay, cv, f, tables, key, work, params):
    """With a recovery strategy, a leaderless partition whose round would elect (a round that
    must wait changes nothing): (the strategy)."""
    strategy = cv[R_RECOVERY_STRATEGY]
    if strategy < 0 or f[F_LEADER] >= 0:
        return 0
    refused = recovery_refused(r, lay, f, tables, strategy, key)
    if refused == MISS:
        return MISS
    return 0 if refused else put(params, 0, strategy, 0)


@njit(cache=True, _nrt=False)
def unclean_recovery_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """Ask the replicas for their logs, elect the highest last leader epoch, then the longest log."""
    return recovery_event(t, lay, f, tables, p0, key, work)
