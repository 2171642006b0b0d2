"""Every enabled step of a row within the bounds: the kernel's `successors`, which every engine
explores (specs.actions.successors is it, through pack and unpack), in declaration order with
the declarations' labels.

Per action: a spent fixed budget skips it; its guard (specs/kernel/data.py, control.py) gives
its parameter tuples; each is applied to a copy of the row and charged its budget; a step that
changed nothing but its budget use is a self-loop and left out; a step past an epoch bound is
left out unless `mode` is UNBOUNDED (deadlock detection asks whether anything at all could
still happen); under any_candidate_elections an election that picked a new leader is followed
by the runs where it picked another candidate. Mode GUARDS lists what the guards enable
(budgets, bounds and self-loops aside): what replay checks a data step against.

A label is five ints: (action, three parameters, elected broker or -1).

The dispatchers `guard` and `effect`, every guard, `_emit` and its helpers are inlined where
they are called (numba's inline="always"): a call between compiled functions passes each array
as several words (data, shape, strides...), and through `guard` with its eleven arrays a call
cost about 45 ns before the guard did anything, 19 times a row. Inlined, a row's successors take
0.67-0.76x the time (bench/phase_bench.py, BENCHMARKS.md); the effects' bodies inlined as well
gained nothing, and a cold compile stays about 30 s.
"""
from __future__ import annotations

from numba import njit

from specs.kernel import control as C
from specs.kernel import data as D
from specs.kernel.events import MISS
from specs.kernel.layout import BLOCK, L_CAP, L_CTRL, L_NB, L_USED, block_differs
from specs.kernel.mechanics import (CV_BOUNDS, CV_MAX_LEADER_EPOCH, CV_MAX_PARTITION_EPOCH,
                                    R_ANY_CANDIDATE_ELECTIONS, alive, facts_of, keep_promises, log_len)
from specs.kernel.tables import F_LEADER, F_LEADER_EPOCH, F_PARTITION_EPOCH

# Action ids, in the declarations' order (specs/kernel/__init__.py checks it against ACTION_NAMES).
(PRODUCE, FETCH, ADVANCE_HWM, SHRINK_ISR, EXPAND_ISR, DELIVER_ALTER_PARTITION, CRASH, CRASH_LOSSY, RESTART,
 CLEAN_SHUTDOWN, FENCE, UNFENCE, CONTROLLED_SHUTDOWN, ELECT, SET_MIN_ISR, SET_UNCLEAN, PERIODIC_UNCLEAN_ELECTION,
 PERIODIC_PREFERRED_ELECTION, REASSIGN, UNCLEAN_RECOVERY, HOLD_METADATA, DELIVER_METADATA, STALE_PRODUCE,
 STALE_ADVANCE_HWM) = range(24)
N_ACTIONS = 24
LABEL = 5
BOUNDED, UNBOUNDED, GUARDS = 0, 1, 2
@njit(cache=True, inline="always", _nrt=False)
def used_at(lay):
    """The offset of the budget use in a row."""
    return lay[L_USED]


@njit(cache=True, inline="always", _nrt=False)
def within_bounds(t, lay, cv, facts):
    f = facts_of(t, lay, facts)
    return f[F_LEADER_EPOCH] <= cv[CV_MAX_LEADER_EPOCH] and f[F_PARTITION_EPOCH] <= cv[CV_MAX_PARTITION_EPOCH]


@njit(cache=True, inline="always", _nrt=False)
def same_but_budgets(a, b, lay):
    """a and b agree up to the budget use (a block of fields at a time: layout.block_differs)."""
    n = used_at(lay)
    full = n - n % BLOCK
    for s in range(0, full, BLOCK):
        if block_differs(a, b, s):
            return False
    for k in range(full, n):
        if a[k] != b[k]:
            return False
    return True


@njit(cache=True, inline="always", _nrt=False)
def charged(r, lay, plan, action, p0):
    """The budget `action` charges in state r (-1: none): plan[action] is (budget, elects,
    charged only when the broker p0 runs)."""
    if plan[action, 2] and not alive(r, lay, p0):
        return -1
    return plan[action, 0]


@njit(cache=True, inline="always", _nrt=False)
def guard(r, lay, cv, f, tables, key, work, params, action):
    """The action's parameter tuples in r (params[:count]): count, or MISS."""
    if action == PRODUCE:
        return D.produce_params(r, lay, cv, f, tables, key, work, params)
    if action == FETCH:
        return D.fetch_params(r, lay, cv, f, tables, key, work, params)
    if action == ADVANCE_HWM:
        return D.advance_hwm_params(r, lay, cv, f, tables, key, work, params)
    if action == SHRINK_ISR:
        return D.shrink_isr_params(r, lay, cv, f, tables, key, work, params)
    if action == EXPAND_ISR:
        return D.expand_isr_params(r, lay, cv, f, tables, key, work, params)
    if action == DELIVER_ALTER_PARTITION:
        return D.deliver_alter_partition_params(r, lay, cv, f, tables, key, work, params)
    if action == CRASH:
        return D.crash_params(r, lay, cv, f, tables, key, work, params)
    if action == CRASH_LOSSY:
        return D.crash_lossy_params(r, lay, cv, f, tables, key, work, params)
    if action == RESTART:
        return D.restart_params(r, lay, cv, f, tables, key, work, params)
    if action == CLEAN_SHUTDOWN:
        return D.clean_shutdown_params(r, lay, cv, f, tables, key, work, params)
    if action == FENCE:
        return C.fence_params(r, lay, cv, f, tables, key, work, params)
    if action == UNFENCE:
        return C.unfence_params(r, lay, cv, f, tables, key, work, params)
    if action == CONTROLLED_SHUTDOWN:
        return C.controlled_shutdown_params(r, lay, cv, f, tables, key, work, params)
    if action == ELECT:
        return C.elect_params(r, lay, cv, f, tables, key, work, params)
    if action == SET_MIN_ISR:
        return C.set_min_isr_params(r, lay, cv, f, tables, key, work, params)
    if action == SET_UNCLEAN:
        return C.set_unclean_params(r, lay, cv, f, tables, key, work, params)
    if action == PERIODIC_UNCLEAN_ELECTION:
        return C.periodic_unclean_election_params(r, lay, cv, f, tables, key, work, params)
    if action == PERIODIC_PREFERRED_ELECTION:
        return C.periodic_preferred_election_params(r, lay, cv, f, tables, key, work, params)
    if action == REASSIGN:
        return C.reassign_params(r, lay, cv, f, tables, key, work, params)
    if action == UNCLEAN_RECOVERY:
        return C.unclean_recovery_params(r, lay, cv, f, tables, key, work, params)
    if action == HOLD_METADATA:
        return D.hold_metadata_params(r, lay, cv, f, tables, key, work, params)
    if action == DELIVER_METADATA:
        return D.deliver_metadata_params(r, lay, cv, f, tables, key, work, params)
    if action == STALE_PRODUCE:
        return D.stale_produce_params(r, lay, cv, f, tables, key, work, params)
    return D.stale_advance_hwm_params(r, lay, cv, f, tables, key, work, params)


@njit(cache=True, inline="always", _nrt=False)
def effect(t, lay, cv, f, tables, action, p0, p1, p2, prefer, key, work):
    """Apply the action to t (its facts f): 0, or MISS."""
    if action == PRODUCE:
        return D.produce_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == FETCH:
        return D.fetch_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == ADVANCE_HWM:
        return D.advance_hwm_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == SHRINK_ISR:
        return D.shrink_isr_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == EXPAND_ISR:
        return D.expand_isr_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == DELIVER_ALTER_PARTITION:
        return D.deliver_alter_partition_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == CRASH:
        return D.crash_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == CRASH_LOSSY:
        return D.crash_lossy_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == RESTART:
        return D.restart_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == CLEAN_SHUTDOWN:
        return D.clean_shutdown_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == FENCE:
        return C.fence_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == UNFENCE:
        return C.unfence_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == CONTROLLED_SHUTDOWN:
        return C.controlled_shutdown_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == ELECT:
        return C.elect_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == SET_MIN_ISR:
        return C.set_min_isr_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == SET_UNCLEAN:
        return C.set_unclean_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == PERIODIC_UNCLEAN_ELECTION:
        return C.periodic_unclean_election_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == PERIODIC_PREFERRED_ELECTION:
        return C.periodic_preferred_election_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == REASSIGN:
        return C.reassign_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == UNCLEAN_RECOVERY:
        return C.unclean_recovery_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == HOLD_METADATA:
        return D.hold_metadata_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == DELIVER_METADATA:
        return D.deliver_metadata_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    if action == STALE_PRODUCE:
        return D.stale_produce_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)
    return D.stale_advance_hwm_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work)


@njit(cache=True, inline="always", _nrt=False)
def apply(r, t, lay, cv, plan, tables, action, p0, p1, p2, prefer, key, work):
    """t = the state after the step (budget charged, no guard checked, the min ISR promises
    kept: mechanics.keep_promises): 0, or MISS. A refusal is left in work[-1]
    (specs/kernel/events.py)."""
    for k in range(len(r)):
        t[k] = r[k]
    work[len(work) - 1] = 0
    if effect(t, lay, cv, facts_of(r, lay, tables[3]), tables, action, p0, p1, p2, prefer, key, work) == MISS:
        return MISS
    keep_promises(r, t, lay, tables[3])
    budget = charged(r, lay, plan, action, p0)
    if budget >= 0:
        t[used_at(lay) + budget] += 1
    return 0


@njit(cache=True, inline="always", _nrt=False)
def _emit(r, lay, cv, plan, tables, unbounded, r_within, out, labels, key, work, n, action, p0, p1, p2):
    """Append the step (action, p0, p1, p2) and its other candidates to out/labels from n on:
    the new count, or MISS. `r_within`: r itself within the epoch bounds (a step that leaves the
    controller's value id as it was is then, with no look-up of its facts)."""
    facts = tables[3]
    budget = charged(r, lay, plan, action, p0)
    if budget >= 0 and not unbounded and r[used_at(lay) + budget] >= cv[CV_BOUNDS + budget]:
        return n
    first = out[n]
    if apply(r, first, lay, cv, plan, tables, action, p0, p1, p2, -1, key, work) == MISS:
        return MISS
    if same_but_budgets(first, r, lay):
        return n
    same_value = first[lay[L_CTRL]] == r[lay[L_CTRL]]      # the controller's value as r's: r's epochs
    if unbounded or (same_value and r_within) or within_bounds(first, lay, cv, facts):
        labels[n, 0], labels[n, 1], labels[n, 2], labels[n, 3], labels[n, 4] = action, p0, p1, p2, -1
        n += 1
    if not (cv[R_ANY_CANDIDATE_ELECTIONS] and plan[action, 1]) or same_value:
        return n
    old = facts_of(r, lay, facts)[F_LEADER]
    chosen = facts_of(first, lay, facts)[F_LEADER]
    if chosen >= 0 and chosen != old:
        for b in range(lay[L_NB]):
            if b == chosen:
                continue
            alt = out[n]
            if apply(r, alt, lay, cv, plan, tables, action, p0, p1, p2, b, key, work) == MISS:
                return MISS
            if facts_of(alt, lay, facts)[F_LEADER] == b and (unbounded or within_bounds(alt, lay, cv, facts)):
                labels[n, 0], labels[n, 1], labels[n, 2], labels[n, 3], labels[n, 4] = action, p0, p1, p2, b
                n += 1
    return n


@njit(cache=True, _nrt=False)
def successors(r, lay, cv, plan, tables, mode, only, out, labels, key, work, params):
    """Fill out[:n] and labels[:n] with r's successors (only action `only` if >= 0): n, or MISS.
    `work`, `params`: scratch (compiled code here allocates nothing)."""
    f = facts_of(r, lay, tables[3])
    used = used_at(lay)
    r_within = f[F_LEADER_EPOCH] <= cv[CV_MAX_LEADER_EPOCH] and f[F_PARTITION_EPOCH] <= cv[CV_MAX_PARTITION_EPOCH]
    n = 0
    for action in range(len(plan)):
        if only >= 0 and action != only:
            continue
        fixed = plan[action, 0] if plan[action, 2] == 0 else -1
        if fixed >= 0 and mode == BOUNDED and r[used + fixed] >= cv[CV_BOUNDS + fixed]:
            continue                      # the whole action is spent
        m = guard(r, lay, cv, f, tables, key, work, params, action)
        if m == MISS:
            return MISS
        for j in range(m):
            if mode == GUARDS:
                labels[n, 0], labels[n, 1], labels[n, 2], labels[n, 3], labels[n, 4] = \
                    action, params[j, 0], params[j, 1], params[j, 2], -1
                n += 1
            elif mode == UNBOUNDED and (action == PRODUCE or action == STALE_PRODUCE) and \
                    log_len(r, lay, f[F_LEADER] if action == PRODUCE else params[j, 0]) == lay[L_CAP]:
                labels[n, 0], labels[n, 1], labels[n, 2], labels[n, 3], labels[n, 4] = \
                    action, params[j, 0], 0, 0, -1
                n += 1                    # a step all the same, though a row cannot hold its log
            else:
                n = _emit(r, lay, cv, plan, tables, mode == UNBOUNDED, r_within, out, labels, key, work, n, action,
                          params[j, 0], params[j, 1], params[j, 2])
                if n == MISS:
                    return MISS
    return n
