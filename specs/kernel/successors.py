"""Every enabled step of a row within the bounds: the kernel's form of
`specs.actions.successors`, in the same order with the same labels.

Per action, in declaration order: a spent fixed budget skips it; each parameter tuple its
guard enables (the guards are here, beside the loop that asks them) is applied to a copy of
the row and charged its budget; a step that changed nothing but its budget use is a
self-loop and left out; a step past an epoch bound is left out unless `unbounded` (deadlock
detection asks whether anything at all could still happen); under any_candidate_elections an
election that picked a new leader is followed by the runs where it picked another candidate.
"""
from __future__ import annotations

from numba import njit

from specs.kernel.actions import (ADVANCE_HWM, CLEAN_SHUTDOWN, CONTROLLED_SHUTDOWN, CRASH, CRASH_LOSSY,
                                  DELIVER_ALTER_PARTITION, ELECT, EXPAND_ISR, FENCE, FETCH, MISS,
                                  PERIODIC_UNCLEAN_ELECTION, PRODUCE, REASSIGN, RESTART, SET_MIN_ISR, SET_UNCLEAN,
                                  SHRINK_ISR, UNCLEAN_RECOVERY, UNFENCE, effect, recovery_refused)
from specs.kernel.layout import FETCH_EPOCH, FLUSHED, H_VISIBLE, HWM, I_PRESENT, LEO, L_CAP, L_CTRL, L_HIST, L_INFL, \
    L_NB, L_NBUDGET
from specs.kernel.mechanics import (B_FENCES, CV_BOUNDS, CV_MAX_LEADER_EPOCH, CV_MAX_PARTITION_EPOCH,
                                    R_ANY_CANDIDATE_ELECTIONS, R_BROKER_EPOCH_CHECK, R_DESIGNATED_ELECTIONS,
                                    R_EXPAND_REQUIRES_CATCH_UP, R_RECOVERY_STRATEGY, R_RESTART_BEFORE_FENCE,
                                    acceptable_leader, alive, at, broker_epoch, facts_of, has, live_leader, log_len,
                                    next_hwm, same_log)
from specs.kernel.tables import (F_EFFECTIVE_MIN_ISR, F_FENCED, F_ISR_MASK, F_LEADER, F_LEADER_EPOCH, F_MIN_ISR,
                                 F_N_ISR, F_N_REPLICAS, F_PARTITION_EPOCH, F_REASSIGNING, F_REGISTERED,
                                 F_REPLICA_MASK, F_REPLICAS, F_SHUTTING_DOWN, F_UNCLEAN)

FENCE_BUDGET = -2        # plan: fence charges "fences" only when it hits a running broker


@njit(cache=True, inline="always", _nrt=False)
def used_at(lay):
    """The offset of the budget use in a row."""
    return lay[L_HIST] + H_VISIBLE + lay[L_CAP]


@njit(cache=True, _nrt=False)
def within_bounds(t, lay, cv, facts):
    f = facts_of(t, lay, facts)
    return f[F_LEADER_EPOCH] <= cv[CV_MAX_LEADER_EPOCH] and f[F_PARTITION_EPOCH] <= cv[CV_MAX_PARTITION_EPOCH]


@njit(cache=True, _nrt=False)
def same_but_budgets(a, b, lay):
    for k in range(used_at(lay)):
        if a[k] != b[k]:
            return False
    return True


@njit(cache=True, _nrt=False)
def charged(r, lay, plan, action, p0):
    """The budget `action` charges in state r (-1: none)."""
    budget = plan[action, 0]
    if budget == FENCE_BUDGET:
        return B_FENCES if alive(r, lay, p0) else -1
    return budget


@njit(cache=True, _nrt=False)
def apply(r, t, lay, cv, plan, tables, action, p0, p1, p2, prefer, key):
    """t = the state after the step (budget charged, no guard checked): 0, or MISS."""
    for k in range(len(r)):
        t[k] = r[k]
    if effect(t, lay, cv, tables, action, p0, p1, p2, prefer, key) == MISS:
        return MISS
    budget = charged(r, lay, plan, action, p0)
    if budget >= 0:
        t[used_at(lay) + budget] += 1
    return 0


@njit(cache=True, _nrt=False)
def _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, p0, p1, p2):
    """Append the step (action, p0, p1, p2) and its other candidates to out/labels from n on:
    the new count, or MISS."""
    facts = tables[3]
    budget = charged(r, lay, plan, action, p0)
    if budget >= 0 and not unbounded and r[used_at(lay) + budget] >= cv[CV_BOUNDS + budget]:
        return n
    first = out[n]
    if apply(r, first, lay, cv, plan, tables, action, p0, p1, p2, -1, key) == MISS:
        return MISS
    if same_but_budgets(first, r, lay):
        return n
    old = facts_of(r, lay, facts)[F_LEADER]
    chosen = facts_of(first, lay, facts)[F_LEADER]
    if unbounded or within_bounds(first, lay, cv, facts):
        labels[n, 0], labels[n, 1], labels[n, 2], labels[n, 3], labels[n, 4] = action, p0, p1, p2, -1
        n += 1
    if cv[R_ANY_CANDIDATE_ELECTIONS] and plan[action, 1] and chosen >= 0 and chosen != old:
        for b in range(lay[L_NB]):
            if b == chosen:
                continue
            alt = out[n]
            if apply(r, alt, lay, cv, plan, tables, action, p0, p1, p2, b, key) == MISS:
                return MISS
            if facts_of(alt, lay, facts)[F_LEADER] == b and (unbounded or within_bounds(alt, lay, cv, facts)):
                labels[n, 0], labels[n, 1], labels[n, 2], labels[n, 3], labels[n, 4] = action, p0, p1, p2, b
                n += 1
    return n


@njit(cache=True, _nrt=False)
def successors(r, lay, cv, plan, tables, unbounded, only, out, labels, key, work):
    """Fill out[:n] and labels[:n] with r's successors (only action `only` if >= 0): n, or MISS.
    `work`: scratch of 2 * brokers ints (compiled code here allocates nothing)."""
    facts = tables[3]
    f = facts_of(r, lay, facts)
    nb, used = lay[L_NB], used_at(lay)
    n = 0
    leader = live_leader(r, lay, f)
    idle = leader if r[lay[L_INFL] + I_PRESENT] == 0 else -1
    for action in range(len(plan)):
        if only >= 0 and action != only:
            continue
        fixed = plan[action, 0]
        if fixed >= 0 and not unbounded and r[used + fixed] >= cv[CV_BOUNDS + fixed]:
            continue                      # the whole action is spent
        if action == PRODUCE:             # refused (NOT_ENOUGH_REPLICAS) while |ISR| < min ISR
            if leader >= 0 and f[F_N_ISR] >= f[F_EFFECTIVE_MIN_ISR]:
                if log_len(r, lay, leader) == lay[L_CAP]:    # only `unbounded` gets here: a step
                    labels[n, 0], labels[n, 1], labels[n, 2], labels[n, 3], labels[n, 4] = action, 0, 0, 0, -1
                    n += 1
                else:
                    n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, 0, 0, 0)
        elif action == FETCH:             # a follower not yet at the leader's log, LEO, epoch or HWM
            if leader >= 0:
                llen, lhwm = log_len(r, lay, leader), r[at(lay, leader, HWM)]
                for k in range(f[F_N_REPLICAS]):
                    i = f[F_REPLICAS + k]
                    if i == leader or not alive(r, lay, i):
                        continue
                    if (not same_log(r, lay, i, leader) or r[at(lay, i, LEO)] != llen
                            or r[at(lay, i, FETCH_EPOCH)] != broker_epoch(f, nb, i)
                            or r[at(lay, i, HWM)] != min(lhwm, llen)):
                        n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, i, 0, 0)
                        if n == MISS:
                            return MISS
        elif action == ADVANCE_HWM:
            if next_hwm(r, lay, cv, f) >= 0:
                n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, 0, 0, 0)
        elif action == SHRINK_ISR:        # each set of lagging followers once, named by its smallest
            if idle >= 0:
                n = _shrinks(r, lay, cv, plan, tables, unbounded, out, labels, key, n, f, idle, work)
        elif action == EXPAND_ISR:        # caught up, an acceptable leader, fetched with its epoch
            if idle >= 0:
                for k in range(f[F_N_REPLICAS]):
                    i = f[F_REPLICAS + k]
                    if has(f[F_ISR_MASK], i):
                        continue
                    leo = r[at(lay, i, LEO)]
                    if cv[R_EXPAND_REQUIRES_CATCH_UP] and (leo < 0 or leo < r[at(lay, idle, HWM)]):
                        continue
                    if not acceptable_leader(f, i):
                        continue
                    if cv[R_BROKER_EPOCH_CHECK] and r[at(lay, i, FETCH_EPOCH)] != broker_epoch(f, nb, i):
                        continue
                    n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, i, 0, 0)
                    if n == MISS:
                        return MISS
        elif action == DELIVER_ALTER_PARTITION:
            if r[lay[L_INFL] + I_PRESENT]:
                n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, 0, 0, 0)
        elif action == CRASH or action == CRASH_LOSSY:
            for i in range(nb):
                if not alive(r, lay, i):
                    continue
                if action == CRASH:
                    n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, i, 0, 0)
                else:
                    for keep in range(r[at(lay, i, FLUSHED)], log_len(r, lay, i)):
                        n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, i, keep, 0)
                        if n == MISS:
                            return MISS
                if n == MISS:
                    return MISS
        elif action == RESTART:           # variant (Kafka 3.9): only once the old incarnation is fenced
            for i in range(nb):
                if not alive(r, lay, i) and (cv[R_RESTART_BEFORE_FENCE] or has(f[F_FENCED], i)):
                    n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, i, 0, 0)
                    if n == MISS:
                        return MISS
        elif action == CLEAN_SHUTDOWN or action == FENCE or action == UNFENCE or action == CONTROLLED_SHUTDOWN:
            for i in range(nb):
                if _broker_guard(r, lay, f, action, i):
                    n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, i, 0, 0)
                    if n == MISS:
                        return MISS
        elif action == ELECT:             # preferred; unclean and designated only while leaderless
            n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, 0, -1, 0)
            if n != MISS and f[F_LEADER] < 0:
                n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, 1, -1, 0)
                if cv[R_DESIGNATED_ELECTIONS]:
                    for k in range(f[F_N_REPLICAS]):
                        if n == MISS:
                            return MISS
                        n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, 2,
                                  f[F_REPLICAS + k], 0)
        elif action == SET_MIN_ISR:
            for v in range(1, f[F_N_REPLICAS] + 1):
                if v != f[F_MIN_ISR]:
                    n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, v, 0, 0)
                    if n == MISS:
                        return MISS
        elif action == SET_UNCLEAN:
            n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, 1 - f[F_UNCLEAN], 0, 0)
        elif action == PERIODIC_UNCLEAN_ELECTION:   # variant: recovery rounds replace it
            if f[F_UNCLEAN] and f[F_LEADER] < 0 and cv[R_RECOVERY_STRATEGY] < 0:
                n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, 0, 0, 0)
        elif action == REASSIGN:          # one replica swapped for a spare broker
            if not f[F_REASSIGNING]:
                for k in range(f[F_N_REPLICAS]):
                    for e in range(nb):
                        if has(f[F_REPLICA_MASK], e):
                            continue
                        code = 0
                        for j in range(f[F_N_REPLICAS] - 1, -1, -1):
                            code = code * 32 + (e if j == k else f[F_REPLICAS + j]) + 1
                        n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, code, 0, 0)
                        if n == MISS:
                            return MISS
        elif action == UNCLEAN_RECOVERY:  # enabled when a round elects (one that must wait changes nothing)
            strategy = cv[R_RECOVERY_STRATEGY]
            if strategy >= 0 and f[F_LEADER] < 0:
                refused = recovery_refused(r, lay, f, tables, strategy, key)
                if refused == MISS:
                    return MISS
                if refused == 0:
                    n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, action, strategy, 0, 0)
        if n == MISS:
            return MISS
    return n


@njit(cache=True, _nrt=False)
def _broker_guard(r, lay, f, action, i):
    """The guards of the steps that name one registered broker."""
    if action == CLEAN_SHUTDOWN:          # in controlled shutdown and running: it stops
        return has(f[F_SHUTTING_DOWN], i) and alive(r, lay, i)
    if action == FENCE:                   # registered and not yet fenced
        return has(f[F_REGISTERED], i) and not has(f[F_FENCED], i)
    if action == UNFENCE:                 # a heartbeat from a running broker
        return has(f[F_FENCED], i) and alive(r, lay, i) and not has(f[F_SHUTTING_DOWN], i)
    return (has(f[F_REGISTERED], i) and alive(r, lay, i) and not has(f[F_FENCED], i)
            and not has(f[F_SHUTTING_DOWN], i))      # CONTROLLED_SHUTDOWN


@njit(cache=True, _nrt=False)
def _shrinks(r, lay, cv, plan, tables, unbounded, out, labels, key, n, f, leader, work):
    """shrink_isr's parameters: the followers of the ISR whose LEO is behind the leader's, each
    set of them once (its smallest member, then the others in combinations order)."""
    nb = lay[L_NB]
    leo = log_len(r, lay, leader)
    lagging = work[:nb]
    m = 0
    for i in range(nb):
        if has(f[F_ISR_MASK], i) and i != leader and r[at(lay, i, LEO)] < leo:
            lagging[m] = i
            m += 1
    pick = work[nb:2 * nb]
    for a in range(m):
        rest = m - a - 1
        for size in range(rest + 1):
            for k in range(size):
                pick[k] = k
            while True:
                also = 0
                for k in range(size):
                    also |= 1 << lagging[a + 1 + pick[k]]
                n = _emit(r, lay, cv, plan, tables, unbounded, out, labels, key, n, SHRINK_ISR, lagging[a], also, 0)
                if n == MISS:
                    return MISS
                k = size - 1          # the next combination in lexicographic order
                while k >= 0 and pick[k] == rest - size + k:
                    k -= 1
                if k < 0:
                    break
                pick[k] += 1
                for j in range(k + 1, size):
                    pick[j] = pick[j - 1] + 1
    return n


__all__ = ["successors", "apply", "within_bounds", "same_but_budgets", "used_at", "FENCE_BUDGET",
           "F_LEADER_EPOCH", "F_PARTITION_EPOCH", "L_CTRL", "L_NBUDGET"]
