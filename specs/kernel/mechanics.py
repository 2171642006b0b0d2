"""The broker side's mechanics over rows: named accessors, then fetch, crash and stop, the HWM
rule, the leader's AlterPartition, and installing a controller outcome.

These are plain Python over numpy arrays that numba compiles (`NUMBA_DISABLE_JIT=1` runs the
same functions interpreted). Each says which rule of docs/protocol.md ("Broker side") it is;
specs/kernel/actions.py builds the protocol's steps from them. A row `r` is one state
(specs/kernel/layout.py), `f` its controller's facts row (specs/kernel/tables.py), `cv` the
config vector (rules, bounds, broker ids: `config_vector`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from specs.config import BUDGETS, Config
from specs.kernel.layout import (ALIVE, CLEAN_FILE, FETCH_EPOCH, FLUSHED, H_ACKED, H_LEAST_MIN_ISR, H_LOSSY,
                                 H_OPERATOR_UNCLEAN, H_PROMISED_MIN_ISR, H_UNCLEAN_ELECTIONS, H_UNCLEAN_SHUTDOWNS,
                                 H_VISIBLE, H_VISIBLE_LEN, HWM, I_BROKER, I_BROKER_EPOCH, I_ISR, I_ISR_LEN,
                                 I_LEADER_EPOCH, I_PARTITION_EPOCH, I_PRESENT, I_RECOVERY, LEO, LOG, LOG_LEN, L_B0,
                                 L_BW, L_CAP, L_CTRL, L_HIST, L_INFL, L_NB, NONE)
from specs.kernel.tables import (F_EFFECTIVE_MIN_ISR, F_FENCED, F_ISR_MASK, F_LEADER, F_LEADER_EPOCH, F_N_ISR,
                                 F_PARTITION_EPOCH, F_REGISTERED, F_SHUTTING_DOWN, F_EPOCHS, F_ISR, O_CTRL,
                                 O_OPERATOR_UNCLEAN, O_UNCLEAN_ELECTION, O_UNCLEAN_SHUTDOWN)
from specs.rules import RECOVERY_STRATEGIES
from specs.state import NO_EPOCH

# The config vector: rule switches, then the budgets' bounds and the epoch caps, then ids.
(R_BROKER_EPOCH_CHECK, R_EXPAND_REQUIRES_CATCH_UP, R_FOLLOWER_TRUNCATES, R_HWM_GATE_COUNTS_MAXIMAL_ISR,
 R_HWM_REQUIRES_MIN_ISR, R_HWM_WAITS_FOR_ISR, R_LEADER_PROPOSES_SORTED_ISR, R_RESTART_BEFORE_FENCE,
 R_DESIGNATED_ELECTIONS, R_ANY_CANDIDATE_ELECTIONS, R_RECOVERY_STRATEGY, R_AUTO_LEADER_REBALANCE) = range(12)
CV_REPLICAS = 12                          # the replicas' slots, as a bit mask (what symmetry renames)
CV_BOUNDS = 16                            # one per budget, in BUDGETS order
CV_MAX_LEADER_EPOCH = CV_BOUNDS + len(BUDGETS)
CV_MAX_PARTITION_EPOCH = CV_MAX_LEADER_EPOCH + 1
CV_IDS = 32                               # broker ids by index
CV_SIZE = CV_IDS + 16
_SWITCHES = ("broker_epoch_check", "expand_requires_catch_up", "follower_truncates",
             "hwm_gate_counts_maximal_isr", "hwm_requires_min_isr", "hwm_waits_for_isr",
             "leader_proposes_sorted_isr", "restart_before_fence", "designated_elections",
             "any_candidate_elections")


def config_vector(cfg: Config) -> np.ndarray:
    """The config as the kernel reads it: every rule switch it reads, bound and broker id."""
    cv = np.zeros(CV_SIZE, dtype=np.int64)
    for k, name in enumerate(_SWITCHES):
        cv[k] = int(getattr(cfg.rules, name))
    strategy = cfg.rules.unclean_recovery_strategy
    cv[R_RECOVERY_STRATEGY] = -1 if strategy is None else RECOVERY_STRATEGIES.index(strategy)
    cv[R_AUTO_LEADER_REBALANCE] = int(cfg.rules.auto_leader_rebalance)
    for k, name in enumerate(BUDGETS):
        cv[CV_BOUNDS + k] = getattr(cfg.bounds, name)
    cv[CV_MAX_LEADER_EPOCH] = cfg.bounds.max_leader_epoch
    cv[CV_MAX_PARTITION_EPOCH] = cfg.bounds.max_partition_epoch
    for i, b in enumerate(cfg.brokers):
        cv[CV_IDS + i] = b
        cv[CV_REPLICAS] |= (b in cfg.replicas) << i
    return cv


# ---------------------------------------------------------------- accessors

@njit(cache=True, inline="always", _nrt=False)
def at(lay, i, field):
    """The offset of broker i's `field` (a layout constant: ALIVE, LOG_LEN, ...)."""
    return lay[L_B0] + i * lay[L_BW] + field


@njit(cache=True, inline="always", _nrt=False)
def facts_of(r, lay, facts):
    return facts[r[lay[L_CTRL]]]


@njit(cache=True, inline="always", _nrt=False)
def has(mask, i):
    return ((mask >> i) & 1) == 1


@njit(cache=True, inline="always", _nrt=False)
def broker_epoch(f, i):
    """The controller's registered broker epoch of broker i (NONE if it has none)."""
    return f[F_EPOCHS + i]


@njit(cache=True, inline="always", _nrt=False)
def acceptable_leader(f, i):
    """Registered, unfenced and not in controlled shutdown."""
    return has(f[F_REGISTERED], i) and not has(f[F_FENCED], i) and not has(f[F_SHUTTING_DOWN], i)


@njit(cache=True, inline="always", _nrt=False)
def alive(r, lay, i):
    """Broker i's process runs (a stranger a request named has no replica here: never)."""
    return i < lay[L_NB] and r[at(lay, i, ALIVE)] != 0


@njit(cache=True, inline="always", _nrt=False)
def log_len(r, lay, i):
    return r[at(lay, i, LOG_LEN)]


@njit(cache=True, inline="always", _nrt=False)
def entry_epoch(r, lay, i, k):
    return r[at(lay, i, LOG) + 2 * k]


@njit(cache=True, inline="always", _nrt=False)
def entry_record(r, lay, i, k):
    return r[at(lay, i, LOG) + 2 * k + 1]


@njit(cache=True, _nrt=False)
def live_leader(r, lay, f):
    """The partition leader if its process is running, else -1."""
    leader = f[F_LEADER]
    if leader < 0 or leader >= lay[L_NB] or not alive(r, lay, leader):
        return -1                  # no leader, a stranger (no replica here), or a stopped one
    return leader


@njit(cache=True, _nrt=False)
def common_prefix(r, lay, a, b):
    n = min(log_len(r, lay, a), log_len(r, lay, b))
    k = 0
    while k < n and entry_epoch(r, lay, a, k) == entry_epoch(r, lay, b, k) \
            and entry_record(r, lay, a, k) == entry_record(r, lay, b, k):
        k += 1
    return k


@njit(cache=True, _nrt=False)
def same_log(r, lay, a, b):
    return log_len(r, lay, a) == log_len(r, lay, b) and common_prefix(r, lay, a, b) == log_len(r, lay, a)


@njit(cache=True, _nrt=False)
def set_log_len(t, lay, i, n):
    """Cut (or declare) broker i's log at n entries; the slots past it are zero, so one state
    is one row."""
    t[at(lay, i, LOG_LEN)] = n
    for k in range(2 * n, 2 * lay[L_CAP]):
        t[at(lay, i, LOG) + k] = 0


# ---------------------------------------------------------------- the broker side

@njit(cache=True, _nrt=False)
def fetch(t, lay, cv, f, leader, fi):
    """Follower fetch (docs/protocol.md, "Broker side"): the follower truncates to its common
    prefix with the leader's log and copies the rest (variant follower_truncates=false: it
    appends past its own end without truncating); the leader learns its log end offset and
    broker epoch."""
    flen, llen = log_len(t, lay, fi), log_len(t, lay, leader)
    if cv[R_FOLLOWER_TRUNCATES]:
        keep = common_prefix(t, lay, fi, leader)
        start, n = 0, llen
    else:
        keep = flen
        start, n = flen, max(flen, llen)
    for k in range(start, llen):
        t[at(lay, fi, LOG) + 2 * k] = entry_epoch(t, lay, leader, k)
        t[at(lay, fi, LOG) + 2 * k + 1] = entry_record(t, lay, leader, k)
    set_log_len(t, lay, fi, n)
    t[at(lay, fi, FLUSHED)] = min(t[at(lay, fi, FLUSHED)], keep)
    t[at(lay, fi, HWM)] = min(t[at(lay, leader, HWM)], n)
    t[at(lay, fi, LEO)] = n
    t[at(lay, fi, FETCH_EPOCH)] = broker_epoch(f, fi)


@njit(cache=True, _nrt=False)
def stop_cleanly(t, lay, f, i):
    """A clean stop: the log is flushed and the clean-shutdown file holds the broker epoch."""
    epoch = broker_epoch(f, i)
    t[at(lay, i, ALIVE)] = 0
    t[at(lay, i, FLUSHED)] = log_len(t, lay, i)
    t[at(lay, i, CLEAN_FILE)] = NO_EPOCH if epoch == NONE else epoch


@njit(cache=True, _nrt=False)
def revive_replica(t, lay, i):
    """A new incarnation starts: running, its log flushed (what it reads from disk), its
    clean-shutdown file read and deleted."""
    t[at(lay, i, ALIVE)] = 1
    t[at(lay, i, FLUSHED)] = log_len(t, lay, i)
    t[at(lay, i, CLEAN_FILE)] = NO_EPOCH


@njit(cache=True, _nrt=False)
def crash(t, lay, i, survivors):
    """Unclean shutdown: the process stops, the clean-shutdown file is absent, and the log is
    its first `survivors` entries (what reached the disk)."""
    set_log_len(t, lay, i, survivors)
    t[at(lay, i, ALIVE)] = 0
    t[at(lay, i, HWM)] = min(t[at(lay, i, HWM)], survivors)
    t[at(lay, i, FLUSHED)] = min(t[at(lay, i, FLUSHED)], survivors)
    t[at(lay, i, CLEAN_FILE)] = NO_EPOCH


@njit(cache=True, _nrt=False)
def maximal_isr(r, lay, f):
    """Committed ISR plus the additions of the leader's own pending AlterPartition (a mask)."""
    mask = f[F_ISR_MASK]
    q = lay[L_INFL]
    if r[q + I_PRESENT] and r[q + I_BROKER] == f[F_LEADER] and r[q + I_LEADER_EPOCH] == f[F_LEADER_EPOCH]:
        for k in range(r[q + I_ISR_LEN]):
            mask |= 1 << r[q + I_ISR + k]
    return mask


@njit(cache=True, _nrt=False)
def follower_leo(r, lay, leader, i):
    if i == leader:
        return log_len(r, lay, leader)
    return r[at(lay, i, LEO)]


@njit(cache=True, _nrt=False)
def next_hwm(r, lay, cv, f):
    """The HWM the leader may advance to now, or -1 if it may not advance."""
    leader = live_leader(r, lay, f)
    if leader < 0:
        return -1
    return hwm_target(r, lay, cv, f, leader, maximal_isr(r, lay, f), f[F_N_ISR], True)


@njit(cache=True, _nrt=False)
def hwm_target(r, lay, cv, f, leader, maximal, n_isr, fetched):
    """The HWM `leader` may advance to with an ISR of n_isr members and the maximal ISR
    `maximal` (a mask), or -1 (the HWM rule: |ISR| >= min ISR, and the minimum log end offset of
    the maximal ISR). `fetched`: the row's follower log end offsets are what followers fetched
    from this leader (a deposed leader's are not: specs/kernel/lag.py)."""
    gate = n_isr
    if cv[R_HWM_GATE_COUNTS_MAXIMAL_ISR]:
        gate = 0
        for i in range(lay[L_NB]):
            gate += has(maximal, i)
    if cv[R_HWM_REQUIRES_MIN_ISR] and gate < f[F_EFFECTIVE_MIN_ISR]:
        return -1
    if not cv[R_HWM_WAITS_FOR_ISR]:
        target = log_len(r, lay, leader)
    else:
        if maximal == 0:
            raise ValueError("the HWM rule met an empty maximal ISR")
        target = 1 << 30
        for i in range(lay[L_NB]):
            if has(maximal, i):
                target = min(target, follower_leo(r, lay, leader, i) if fetched or i == leader else -1)
    return target if target > r[at(lay, leader, HWM)] else -1


@njit(cache=True, _nrt=False)
def raise_hwm(t, lay, leader, hwm, leader_epoch, acks):
    """`leader` advances its HWM to hwm: acks=all requests below it complete, acknowledged if
    `acks` (|ISR| >= min ISR) for records of its leader epoch, and consumers may read below it."""
    h = lay[L_HIST]
    old = t[at(lay, leader, HWM)]
    t[at(lay, leader, HWM)] = hwm
    n = log_len(t, lay, leader)
    if acks:
        for k in range(old, min(hwm, n)):
            if entry_epoch(t, lay, leader, k) == leader_epoch:
                t[h + H_ACKED] |= 1 << (entry_record(t, lay, leader, k) - 1)
    if hwm > t[h + H_VISIBLE_LEN]:
        m = min(hwm, n)
        for k in range(m):
            t[h + H_VISIBLE + k] = entry_record(t, lay, leader, k)
        t[h + H_VISIBLE_LEN] = m


@njit(cache=True, _nrt=False)
def propose(t, lay, cv, f, members):
    """The leader's AlterPartition in flight, proposing the ISR `members` (a mask): in broker id
    order (Kafka 4.x), or (variant, Kafka 3.9) the ISR's order with a new member last; with
    KIP-903 each member's broker epoch as learnt from its Fetch."""
    nb, q, leader = lay[L_NB], lay[L_INFL], f[F_LEADER]
    n = 0
    if cv[R_LEADER_PROPOSES_SORTED_ISR]:
        for i in range(nb):
            if has(members, i):
                t[q + I_ISR + n] = i
                n += 1
    else:
        for k in range(f[F_N_ISR]):
            i = f[F_ISR + k]
            if has(members, i):
                t[q + I_ISR + n] = i
                n += 1
        for i in range(nb):
            if has(members, i) and not has(f[F_ISR_MASK], i):
                t[q + I_ISR + n] = i
                n += 1
    for k in range(n):
        i = t[q + I_ISR + k]
        if not cv[R_BROKER_EPOCH_CHECK]:
            t[q + I_ISR + nb + k] = NO_EPOCH
        elif i == leader:
            t[q + I_ISR + nb + k] = broker_epoch(f, i)
        else:
            t[q + I_ISR + nb + k] = t[at(lay, i, FETCH_EPOCH)]
    for k in range(n, nb):
        t[q + I_ISR + k] = 0
        t[q + I_ISR + nb + k] = 0
    t[q + I_PRESENT] = 1
    t[q + I_BROKER] = leader
    t[q + I_BROKER_EPOCH] = broker_epoch(f, leader)
    t[q + I_LEADER_EPOCH] = f[F_LEADER_EPOCH]
    t[q + I_PARTITION_EPOCH] = f[F_PARTITION_EPOCH]
    t[q + I_RECOVERY] = 0
    t[q + I_ISR_LEN] = n


@njit(cache=True, _nrt=False)
def clear_inflight(t, lay):
    q = lay[L_INFL]
    for k in range(I_ISR + 2 * lay[L_NB]):
        t[q + k] = 0


@njit(cache=True, _nrt=False)
def after_controller(t, lay, facts, old, out):
    """Install a controller outcome (`out`, an events row). Metadata reaches brokers atomically:
    a new leader or leader epoch resets the leader's follower bookkeeping (learnt again from
    Fetch); the history counts unclean elections and shutdowns."""
    new = facts[out[O_CTRL]]
    t[lay[L_CTRL]] = out[O_CTRL]
    if new[F_LEADER_EPOCH] != old[F_LEADER_EPOCH] or new[F_LEADER] != old[F_LEADER]:
        for i in range(lay[L_NB]):
            t[at(lay, i, LEO)] = -1
            t[at(lay, i, FETCH_EPOCH)] = NO_EPOCH
    if out[O_UNCLEAN_ELECTION] or out[O_UNCLEAN_SHUTDOWN]:
        h = lay[L_HIST]
        t[h + H_UNCLEAN_ELECTIONS] += out[O_UNCLEAN_ELECTION]
        t[h + H_OPERATOR_UNCLEAN] += out[O_OPERATOR_UNCLEAN]
        t[h + H_UNCLEAN_SHUTDOWNS] += out[O_UNCLEAN_SHUTDOWN]


@njit(cache=True, _nrt=False)
def acked_mask(r, lay):
    return r[lay[L_HIST] + H_ACKED]


@njit(cache=True, _nrt=False)
def records_of(r, lay, i):
    """The records broker i's log holds, as a mask (bit rec-1)."""
    m = 0
    for k in range(log_len(r, lay, i)):
        m |= 1 << (entry_record(r, lay, i, k) - 1)
    return m


# ---------------------------------------------------------------- the promises a run was made

@njit(cache=True, inline="always", _nrt=False)
def committed_any(r, lay):
    """A record was committed (acknowledged, or shown to consumers below the HWM)."""
    h = lay[L_HIST]
    return r[h + H_ACKED] != 0 or r[h + H_VISIBLE_LEN] > 0


@njit(cache=True, inline="always", _nrt=False)
def promised_min_isr(r, lay, f):
    """The min ISR KIP-966's durability promise was made at: the least effective min ISR since
    the first commit (the row keeps 0 while that is the current one)."""
    p = r[lay[L_HIST] + H_PROMISED_MIN_ISR]
    return p if p > 0 else f[F_EFFECTIVE_MIN_ISR]


@njit(cache=True, inline="always", _nrt=False)
def least_min_isr(r, lay, f):
    """The least effective min ISR since the run began (0 in the row while it is the current)."""
    m = r[lay[L_HIST] + H_LEAST_MIN_ISR]
    return m if m > 0 else f[F_EFFECTIVE_MIN_ISR]


@njit(cache=True, inline="always", _nrt=False)
def keep_promises(r, t, lay, facts):
    """After any step r -> t: a raise of the effective min ISR (set_min_isr, a reassignment's
    replica set) does not raise the promise committed records were made, a lowering lowers it
    (docs/protocol.md, "Durability"); before the first commit the promise is the current min
    ISR. Each is kept as 0 while it equals the current effective min ISR, so the row of a state
    is one whatever way its min ISR went."""
    h = lay[L_HIST]
    was, now = facts_of(r, lay, facts), facts_of(t, lay, facts)
    current = now[F_EFFECTIVE_MIN_ISR]
    promise = min(promised_min_isr(r, lay, was), current) if committed_any(r, lay) else current
    t[h + H_PROMISED_MIN_ISR] = promise if promise < current else 0
    least = min(least_min_isr(r, lay, was), current)
    t[h + H_LEAST_MIN_ISR] = least if least < current else 0


# ---------------------------------------------------------------- what the properties ask

@njit(cache=True, _nrt=False)
def within_tolerance(r, lay, f):
    """KIP-966's durability promise applies (specs/facts.py, within_tolerance): fewer lossy
    crashes than the min ISR the committed records were promised, and no unclean election an
    operator chose."""
    h = lay[L_HIST]
    return r[h + H_LOSSY] < promised_min_isr(r, lay, f) and r[h + H_OPERATOR_UNCLEAN] == 0


@njit(cache=True, _nrt=False)
def holds_committed_log(r, lay, i):
    """Broker i's log starts with every committed record (`visible`), at its offset."""
    h = lay[L_HIST]
    n = r[h + H_VISIBLE_LEN]
    if log_len(r, lay, i) < n:
        return False
    for k in range(n):
        if entry_record(r, lay, i, k) != r[h + H_VISIBLE + k]:
            return False
    return True


__all__ = ["config_vector", "I_BROKER_EPOCH", "I_PARTITION_EPOCH", "I_RECOVERY"]
