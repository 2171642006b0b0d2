"""The broker side's steps (docs/protocol.md, "Broker side"): produce, replicate, advance the
HWM, propose ISR changes, and the process faults. This is the model's one copy of them: every
engine runs these functions, compiled (specs/kernel/successors.py) or interpreted.

Each action is its guard, `<action>_params` (the parameter tuples it is enabled for, written
to `params`: their count, or MISS), beside its effect, `<action>_effect` (the step applied
to the row `t`: 0, or MISS). The declarations in specs/actions/data.py give each action's
description, parameters, budget and category. `f` is the row's controller facts. A guard is
compiled into the successors loop itself (inline="always": specs/kernel/successors.py says why).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from specs.kernel.events import MISS, NOT_ENOUGH_REPLICAS, NOT_LEADER_OR_FOLLOWER, event, refuse, request_event
from specs.kernel.layout import (CLEAN_FILE, FETCH_EPOCH, FLUSHED, H_LOSSY, H_PRODUCED, HWM, I_ISR, I_PRESENT, LEO,
                                 LOG, LOG_LEN, L_HIST, L_INFL, L_NB, NONE)
from specs.kernel.lag import (acting_leader, deliver_metadata_effect, deliver_metadata_params,  # noqa: F401
                              forget_view, held_by, hold_metadata_effect, hold_metadata_params, serves_fetch,
                              stale_advance_hwm_effect, stale_advance_hwm_params, stale_produce_effect,
                              stale_produce_params)
from specs.kernel.mechanics import (CV_IDS, R_BROKER_EPOCH_CHECK, R_EXPAND_REQUIRES_CATCH_UP, R_RESTART_BEFORE_FENCE,
                                    acceptable_leader, alive, at, broker_epoch, clear_inflight, crash, fetch, has,
                                    log_len, next_hwm, propose, raise_hwm, revive_replica, same_log, stop_cleanly)
from specs.kernel.tables import (E_ALTER_PARTITION, E_FENCE, E_REGISTER, F_EFFECTIVE_MIN_ISR, F_FENCED, F_ISR_MASK,
                                 F_LEADER, F_LEADER_EPOCH, F_N_ISR, F_N_REPLICAS, F_REPLICA_MASK, F_REPLICAS,
                                 F_SHUTTING_DOWN)


@njit(cache=True, inline="always", _nrt=False)
def put(params, m, a, b):
    params[m, 0], params[m, 1], params[m, 2] = a, b, 0
    return m + 1


# ---------------------------------------------------------------- produce
@njit(cache=True, inline="always", _nrt=False)
def produce_params(r, lay, cv, f, tables, key, work, params):
    """acks=all produce to the running leader; refused (NOT_ENOUGH_REPLICAS) while |ISR| < min ISR."""
    if acting_leader(r, lay, f) >= 0 and f[F_N_ISR] >= f[F_EFFECTIVE_MIN_ISR]:
        return put(params, 0, 0, 0)
    return 0


@njit(cache=True, _nrt=False)
def produce_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """The leader appends (its leader epoch, the next record id)."""
    leader = acting_leader(t, lay, f)
    if leader < 0:
        refuse(work, NOT_LEADER_OR_FOLLOWER)
        return 0
    if f[F_N_ISR] < f[F_EFFECTIVE_MIN_ISR]:
        refuse(work, NOT_ENOUGH_REPLICAS)
        return 0
    h = lay[L_HIST]
    n = log_len(t, lay, leader)
    record = t[h + H_PRODUCED] + 1
    t[at(lay, leader, LOG) + 2 * n] = f[F_LEADER_EPOCH]
    t[at(lay, leader, LOG) + 2 * n + 1] = record
    t[at(lay, leader, LOG_LEN)] = n + 1
    t[h + H_PRODUCED] = record
    return 0


# ---------------------------------------------------------------- fetch
@njit(cache=True, inline="always", _nrt=False)
def fetch_params(r, lay, cv, f, tables, key, work, params):
    """A running follower (in replica order) whose log, log end offset, broker epoch or HWM
    the running leader has not yet caught up with (one whose metadata is held at an older
    leader epoch refuses them: lag.serves_fetch)."""
    leader = serves_fetch(r, lay, f)
    m = 0
    if leader < 0:
        return 0
    llen, lhwm = log_len(r, lay, leader), r[at(lay, leader, HWM)]
    for k in range(f[F_N_REPLICAS]):
        i = f[F_REPLICAS + k]
        if i == leader or not alive(r, lay, i) or i == held_by(r, lay):   # a held broker leads, to itself
            continue
        if (not same_log(r, lay, i, leader) or r[at(lay, i, LEO)] != llen
                or r[at(lay, i, FETCH_EPOCH)] != broker_epoch(f, i) or r[at(lay, i, HWM)] != min(lhwm, llen)):
            m = put(params, m, i, 0)
    return m


@njit(cache=True, _nrt=False)
def fetch_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """Follower p0 truncates to the leader's log and copies the rest (mechanics.fetch)."""
    fetch(t, lay, cv, f, f[F_LEADER], p0)
    return 0


# ---------------------------------------------------------------- advance_hwm
@njit(cache=True, inline="always", _nrt=False)
def advance_hwm_params(r, lay, cv, f, tables, key, work, params):
    """The HWM rule (mechanics.next_hwm) lets the leader advance."""
    return put(params, 0, 0, 0) if acting_leader(r, lay, f) >= 0 and next_hwm(r, lay, cv, f) >= 0 else 0


@njit(cache=True, _nrt=False)
def advance_hwm_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """The leader advances the HWM; acks=all requests below it complete (acknowledged if
    |ISR| >= min ISR, records of its own leader epoch) and consumers may read below it."""
    raise_hwm(t, lay, f[F_LEADER], next_hwm(t, lay, cv, f), f[F_LEADER_EPOCH],
              f[F_N_ISR] >= f[F_EFFECTIVE_MIN_ISR])
    return 0


# ---------------------------------------------------------------- shrink_isr
@njit(cache=True, inline="always", _nrt=False)
def shrink_isr_params(r, lay, cv, f, tables, key, work, params):
    """An idle running leader (no AlterPartition in flight) drops a lagging ISR follower (LEO
    behind its own), and any others lagging as long (Kafka's maybeShrinkIsr drops every
    follower out of sync at its check in one request): each set once, as (its smallest member,
    the mask of the others), the others in combinations order."""
    leader = acting_leader(r, lay, f) if r[lay[L_INFL] + I_PRESENT] == 0 else -1
    if leader < 0:
        return 0
    nb = lay[L_NB]
    leo = log_len(r, lay, leader)
    lagging, pick = work[:nb], work[nb:2 * nb]
    count = 0
    for i in range(nb):
        if has(f[F_ISR_MASK], i) and i != leader and r[at(lay, i, LEO)] < leo:
            lagging[count] = i
            count += 1
    m = 0
    for a in range(count):
        rest = count - a - 1
        for size in range(rest + 1):
            for k in range(size):
                pick[k] = k
            while True:
                also = 0
                for k in range(size):
                    also |= 1 << lagging[a + 1 + pick[k]]
                m = put(params, m, lagging[a], also)
                k = size - 1          # the next combination in lexicographic order
                while k >= 0 and pick[k] == rest - size + k:
                    k -= 1
                if k < 0:
                    break
                pick[k] += 1
                for j in range(k + 1, size):
                    pick[j] = pick[j - 1] + 1
    return m


@njit(cache=True, _nrt=False)
def shrink_isr_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """The leader sends AlterPartition without p0 and the mask p1 (in flight until delivered)."""
    propose(t, lay, cv, f, f[F_ISR_MASK] & ~((1 << p0) | p1))
    return 0


# ---------------------------------------------------------------- expand_isr
@njit(cache=True, inline="always", _nrt=False)
def expand_isr_params(r, lay, cv, f, tables, key, work, params):
    """An idle running leader may propose a replica outside the ISR that caught up with its HWM
    (rule expand_requires_catch_up), is an acceptable leader in its metadata, and (KIP-903)
    fetched with the broker epoch its metadata holds."""
    leader = acting_leader(r, lay, f) if r[lay[L_INFL] + I_PRESENT] == 0 else -1
    if leader < 0:
        return 0
    nb, m = lay[L_NB], 0
    for k in range(f[F_N_REPLICAS]):
        i = f[F_REPLICAS + k]
        if has(f[F_ISR_MASK], i) or i >= nb:      # in the ISR, or a stranger a request named
            continue
        leo = r[at(lay, i, LEO)]
        if cv[R_EXPAND_REQUIRES_CATCH_UP] and (leo < 0 or leo < r[at(lay, leader, HWM)]):
            continue
        if not acceptable_leader(f, i):
            continue
        if cv[R_BROKER_EPOCH_CHECK] and r[at(lay, i, FETCH_EPOCH)] != broker_epoch(f, i):
            continue
        m = put(params, m, i, 0)
    return m


@njit(cache=True, _nrt=False)
def expand_isr_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """The leader sends AlterPartition adding p0; until the controller commits it, p0 counts
    only in the maximal ISR."""
    propose(t, lay, cv, f, f[F_ISR_MASK] | (1 << p0))
    return 0


# ---------------------------------------------------------------- deliver_alter_partition
@njit(cache=True, inline="always", _nrt=False)
def deliver_alter_partition_params(r, lay, cv, f, tables, key, work, params):
    """An AlterPartition is in flight."""
    return put(params, 0, 0, 0) if r[lay[L_INFL] + I_PRESENT] else 0


@njit(cache=True, _nrt=False)
def deliver_alter_partition_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """The controller processes the request in flight, however late (specs/controller.py)."""
    if request_event(t, lay, f, tables, E_ALTER_PARTITION, prefer, key, work, lay[L_INFL],
                     I_ISR + 2 * lay[L_NB]) == MISS:
        return MISS
    clear_inflight(t, lay)
    return 0


# ---------------------------------------------------------------- crash, crash_lossy
@njit(cache=True, inline="always", _nrt=False)
def crash_params(r, lay, cv, f, tables, key, work, params):
    """A running broker."""
    m = 0
    for i in range(lay[L_NB]):
        if alive(r, lay, i):
            m = put(params, m, i, 0)
    return m


@njit(cache=True, _nrt=False)
def crash_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """Unclean shutdown keeping the page cache: the log survives, the clean-shutdown file does not."""
    crash(t, lay, p0, np.int64(log_len(t, lay, p0)))     # int64 at both calls: one compile of crash
    forget_view(t, lay, p0)
    return 0


@njit(cache=True, inline="always", _nrt=False)
def crash_lossy_params(r, lay, cv, f, tables, key, work, params):
    """A running broker, keeping `keep` entries for each keep from its flushed prefix up to its
    log end (the OS flushes in the background)."""
    m = 0
    for i in range(lay[L_NB]):
        if alive(r, lay, i):
            for keep in range(r[at(lay, i, FLUSHED)], log_len(r, lay, i)):
                m = put(params, m, i, keep)
    return m


@njit(cache=True, _nrt=False)
def crash_lossy_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """Unclean shutdown losing the unflushed suffix beyond p1 entries. Every replica's loss counts
    against KIP-966's tolerance, one outside ISR and ELR too (an AlterPartition sent before its
    crash can bring it back with its old broker epoch)."""
    crash(t, lay, p0, np.int64(max(p1, t[at(lay, p0, FLUSHED)])))
    forget_view(t, lay, p0)
    if has(f[F_REPLICA_MASK], p0):
        t[lay[L_HIST] + H_LOSSY] += 1
    return 0


# ---------------------------------------------------------------- restart
@njit(cache=True, inline="always", _nrt=False)
def restart_params(r, lay, cv, f, tables, key, work, params):
    """A stopped broker; variant (Kafka 3.9, restart_before_fence=false): only once the
    controller has fenced the old incarnation."""
    m = 0
    for i in range(lay[L_NB]):
        if not alive(r, lay, i) and (cv[R_RESTART_BEFORE_FENCE] or has(f[F_FENCED], i)):
            m = put(params, m, i, 0)
    return m


@njit(cache=True, _nrt=False)
def restart_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """A new incarnation reads (then deletes) its clean-shutdown file and registers with that
    previous broker epoch; its new epoch is the registered one + 1000 (100 + id at first)."""
    clean = np.int64(t[at(lay, p0, CLEAN_FILE)])    # int64 like every other call's: one compile of event
    revive_replica(t, lay, p0)
    epoch = broker_epoch(f, p0)
    new_epoch = (100 + cv[CV_IDS + p0] if epoch == NONE else epoch) + 1000
    return event(t, lay, f, tables, E_REGISTER, p0, clean, new_epoch, prefer, key, work)


# ---------------------------------------------------------------- clean_shutdown
@njit(cache=True, inline="always", _nrt=False)
def clean_shutdown_params(r, lay, cv, f, tables, key, work, params):
    """A running broker in controlled shutdown."""
    m = 0
    for i in range(lay[L_NB]):
        if has(f[F_SHUTTING_DOWN], i) and alive(r, lay, i):
            m = put(params, m, i, 0)
    return m


@njit(cache=True, _nrt=False)
def clean_shutdown_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """It flushes, writes its clean-shutdown file with its broker epoch and stops; the controller
    fences it (shutdown-now)."""
    stop_cleanly(t, lay, f, p0)
    forget_view(t, lay, p0)
    return event(t, lay, f, tables, E_FENCE, p0, 0, 0, prefer, key, work)
