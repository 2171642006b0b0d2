"""The protocol's steps over rows: each action's guard (which parameters it is enabled for) and
its effect, then `successors`, the loop every kernel engine runs (budgets, the epoch bounds,
self-loops left out, and under any_candidate_elections the other candidates).

The actions, their order and their labels are those of specs/actions (the declarations); a
label here is five ints, (action, three parameters, elected broker or -1), which
`specs.kernel.labels` turns into the model's tuple. An effect that needs a controller event
the table lacks returns MISS with the event's key in `key`: the caller fills the table and
runs the state again, so nothing is half done.
"""
from __future__ import annotations

from numba import njit

from specs.kernel.layout import (CLEAN_FILE, FLUSHED, H_ACKED, H_LOSSY, H_PRODUCED, H_VISIBLE, H_VISIBLE_LEN, HWM,
                                 I_ISR, I_PRESENT, LOG_LEN, L_CTRL, L_HIST, L_INFL, L_NB, L_NBUDGET, LOG, LEO, FETCH_EPOCH,
                                 ALIVE)
from specs.kernel.mechanics import (B_FENCES, CV_BOUNDS, CV_IDS, CV_MAX_LEADER_EPOCH, CV_MAX_PARTITION_EPOCH,
                                    R_ANY_CANDIDATE_ELECTIONS, R_BROKER_EPOCH_CHECK, R_DESIGNATED_ELECTIONS,
                                    R_EXPAND_REQUIRES_CATCH_UP, R_RECOVERY_STRATEGY, R_RESTART_BEFORE_FENCE,
                                    acceptable_leader, after_controller, alive, at, broker_epoch, clear_inflight,
                                    crash, entry_epoch, entry_record, facts_of, fetch, follower_leo, has,
                                    live_leader, log_len, next_hwm, propose, same_log, set_log_len, stop_cleanly)
from specs.kernel.tables import (E_ALTER_PARTITION, E_CONTROLLED_SHUTDOWN, E_ELECT, E_FENCE, E_PERIODIC_UNCLEAN,
                                 E_REASSIGN, E_REGISTER, E_SET_MIN_ISR, E_SET_UNCLEAN, E_UNCLEAN_RECOVERY,
                                 E_UNFENCE, F_EFFECTIVE_MIN_ISR, F_FENCED, F_ISR_MASK, F_LEADER, F_LEADER_EPOCH,
                                 F_MIN_ISR, F_N_ISR, F_N_REPLICAS, F_PARTITION_EPOCH, F_REASSIGNING, F_REGISTERED,
                                 F_REPLICA_MASK, F_REPLICAS, F_SHUTTING_DOWN, F_UNCLEAN, O_REFUSED, find)
from specs.state import NO_EPOCH

# Action ids, in the declarations' order (specs.kernel.labels checks it against ACTION_NAMES).
(PRODUCE, FETCH, ADVANCE_HWM, SHRINK_ISR, EXPAND_ISR, DELIVER_ALTER_PARTITION, CRASH, CRASH_LOSSY, RESTART,
 CLEAN_SHUTDOWN, FENCE, UNFENCE, CONTROLLED_SHUTDOWN, ELECT, SET_MIN_ISR, SET_UNCLEAN, PERIODIC_UNCLEAN_ELECTION,
 REASSIGN, UNCLEAN_RECOVERY) = range(19)
N_ACTIONS = 19
MISS = -1
# per action: its fixed budget (an index of BUDGETS, -1: none, -2: fence's, charged when the
# broker runs) and whether it elects; filled from the declarations (specs.kernel.labels).
LABEL = 5


@njit(cache=True, _nrt=False)
def _event(t, lay, f, tables, kind, a, b, c, prefer, key, extra_from, extra_len):
    """The event (kind, a, b, c, prefer) on t's controller, `extra_len` more key ints copied from
    t at `extra_from` (the request): installs the outcome, or MISS."""
    ekeys, evals, eused, facts = tables
    for k in range(len(key)):
        key[k] = 0
    key[0], key[1], key[2], key[3], key[4], key[5] = t[lay[L_CTRL]], kind, a, b, c, prefer
    for k in range(extra_len):
        key[6 + k] = t[extra_from + k]
    slot = find(ekeys, eused, key)
    if slot < 0:
        return MISS
    after_controller(t, lay, facts, f, evals[slot])
    return 0


@njit(cache=True, _nrt=False)
def _recovery_key(r, lay, f, key):
    """GetReplicaLogInfo's answers into the key: every running replica the controller accepts
    as a leader answers (its last written leader epoch, its log end offset)."""
    nb = lay[L_NB]
    for k in range(len(key)):
        key[k] = 0
    for k in range(f[F_N_REPLICAS]):
        i = f[F_REPLICAS + k]
        if alive(r, lay, i) and acceptable_leader(f, i):
            n = log_len(r, lay, i)
            key[6 + 3 * i] = 1
            key[6 + 3 * i + 1] = entry_epoch(r, lay, i, n - 1) if n else -1
            key[6 + 3 * i + 2] = n


@njit(cache=True, _nrt=False)
def effect(t, lay, cv, tables, action, p0, p1, p2, prefer, key):
    """Apply one step to `t` (a copy of the state): 0, or MISS. No guard is checked here."""
    facts = tables[3]
    f = facts_of(t, lay, facts)
    nb, h = lay[L_NB], lay[L_HIST]
    if action == PRODUCE:           # acks=all produce: the leader appends (leader epoch, next record)
        leader = f[F_LEADER]
        n = log_len(t, lay, leader)
        record = t[h + H_PRODUCED] + 1
        t[at(lay, leader, LOG) + 2 * n] = f[F_LEADER_EPOCH]
        t[at(lay, leader, LOG) + 2 * n + 1] = record
        t[at(lay, leader, LOG_LEN)] = n + 1
        t[h + H_PRODUCED] = record
    elif action == FETCH:
        fetch(t, lay, cv, f, f[F_LEADER], p0)
    elif action == ADVANCE_HWM:     # the HWM rule; acks=all requests below it complete
        hwm = next_hwm(t, lay, cv, f)
        leader = f[F_LEADER]
        old = t[at(lay, leader, HWM)]
        t[at(lay, leader, HWM)] = hwm
        n = log_len(t, lay, leader)
        if f[F_N_ISR] >= f[F_EFFECTIVE_MIN_ISR]:
            for k in range(old, min(hwm, n)):
                if entry_epoch(t, lay, leader, k) == f[F_LEADER_EPOCH]:
                    t[h + H_ACKED] |= 1 << (entry_record(t, lay, leader, k) - 1)
        if hwm > t[h + H_VISIBLE_LEN]:
            m = min(hwm, n)
            for k in range(m):
                t[h + H_VISIBLE + k] = entry_record(t, lay, leader, k)
            t[h + H_VISIBLE_LEN] = m
    elif action == SHRINK_ISR:      # drop p0 and the mask p1 of others lagging as long
        propose(t, lay, cv, f, f[F_ISR_MASK] & ~((1 << p0) | p1))
    elif action == EXPAND_ISR:
        propose(t, lay, cv, f, f[F_ISR_MASK] | (1 << p0))
    elif action == DELIVER_ALTER_PARTITION:
        q = lay[L_INFL]
        status = _event(t, lay, f, tables, E_ALTER_PARTITION, 0, 0, 0, prefer, key, q, I_ISR + 2 * nb)
        if status == MISS:
            return MISS
        clear_inflight(t, lay)
    elif action == CRASH:
        crash(t, lay, p0, log_len(t, lay, p0))
    elif action == CRASH_LOSSY:     # loses the unflushed suffix beyond p1 entries
        crash(t, lay, p0, max(p1, t[at(lay, p0, FLUSHED)]))
        if has(f[F_REPLICA_MASK], p0):
            t[h + H_LOSSY] += 1
    elif action == RESTART:         # a new incarnation registers with its clean-shutdown file's epoch
        clean = t[at(lay, p0, CLEAN_FILE)]
        t[at(lay, p0, ALIVE)] = 1
        t[at(lay, p0, FLUSHED)] = log_len(t, lay, p0)
        t[at(lay, p0, CLEAN_FILE)] = NO_EPOCH
        epoch = broker_epoch(f, nb, p0)
        new_epoch = (100 + cv[CV_IDS + p0] if epoch == -2 else epoch) + 1000
        if _event(t, lay, f, tables, E_REGISTER, p0, clean, new_epoch, prefer, key, 0, 0) == MISS:
            return MISS
    elif action == CLEAN_SHUTDOWN:
        stop_cleanly(t, lay, f, p0)
        if _event(t, lay, f, tables, E_FENCE, p0, 0, 0, prefer, key, 0, 0) == MISS:
            return MISS
    elif action == FENCE:
        if _event(t, lay, f, tables, E_FENCE, p0, 0, 0, prefer, key, 0, 0) == MISS:
            return MISS
    elif action == UNFENCE:
        if _event(t, lay, f, tables, E_UNFENCE, p0, 0, 0, prefer, key, 0, 0) == MISS:
            return MISS
    elif action == CONTROLLED_SHUTDOWN:  # told to shut down at once (fenced now): it stops cleanly
        if _event(t, lay, f, tables, E_CONTROLLED_SHUTDOWN, p0, 0, 0, prefer, key, 0, 0) == MISS:
            return MISS
        if has(facts_of(t, lay, facts)[F_FENCED], p0) and not has(f[F_FENCED], p0):
            stop_cleanly(t, lay, f, p0)
    elif action == ELECT:
        if _event(t, lay, f, tables, E_ELECT, p0, p1, 0, prefer, key, 0, 0) == MISS:
            return MISS
    elif action == SET_MIN_ISR:
        if _event(t, lay, f, tables, E_SET_MIN_ISR, p0, 0, 0, -1, key, 0, 0) == MISS:
            return MISS
    elif action == SET_UNCLEAN:
        if _event(t, lay, f, tables, E_SET_UNCLEAN, p0, 0, 0, -1, key, 0, 0) == MISS:
            return MISS
    elif action == PERIODIC_UNCLEAN_ELECTION:
        if _event(t, lay, f, tables, E_PERIODIC_UNCLEAN, 0, 0, 0, prefer, key, 0, 0) == MISS:
            return MISS
    elif action == REASSIGN:
        if _event(t, lay, f, tables, E_REASSIGN, p0, 0, 0, -1, key, 0, 0) == MISS:
            return MISS
    elif action == UNCLEAN_RECOVERY:
        if not _recovery_answered(t, lay, f, tables, p0, key):
            return MISS
    return 0


@njit(cache=True, _nrt=False)
def _recovery_answered(t, lay, f, tables, strategy, key):
    """Install a recovery round's outcome; False (key filled) if the table lacks it."""
    ekeys, evals, eused, facts = tables
    _recovery_key(t, lay, f, key)
    key[0], key[1], key[2] = t[lay[L_CTRL]], E_UNCLEAN_RECOVERY, strategy
    key[5] = -1
    slot = find(ekeys, eused, key)
    if slot < 0:
        return False
    after_controller(t, lay, facts, f, evals[slot])
    return True


@njit(cache=True, _nrt=False)
def recovery_refused(r, lay, f, tables, strategy, key):
    """Whether a recovery round would be refused (must wait): 1, 0, or MISS."""
    ekeys, evals, eused, facts = tables
    _recovery_key(r, lay, f, key)
    key[0], key[1], key[2] = r[lay[L_CTRL]], E_UNCLEAN_RECOVERY, strategy
    key[5] = -1
    slot = find(ekeys, eused, key)
    if slot < 0:
        return MISS
    return evals[slot, O_REFUSED]


__all__ = ["effect", "recovery_refused", "N_ACTIONS", "MISS", "LABEL", "CV_BOUNDS", "CV_MAX_LEADER_EPOCH",
           "CV_MAX_PARTITION_EPOCH", "B_FENCES", "R_ANY_CANDIDATE_ELECTIONS", "R_BROKER_EPOCH_CHECK",
           "R_DESIGNATED_ELECTIONS", "R_EXPAND_REQUIRES_CATCH_UP", "R_RECOVERY_STRATEGY", "R_RESTART_BEFORE_FENCE",
           "F_MIN_ISR", "F_UNCLEAN", "F_REASSIGNING", "F_PARTITION_EPOCH", "F_SHUTTING_DOWN", "F_REGISTERED",
           "LEO", "FETCH_EPOCH", "L_NBUDGET", "I_PRESENT", "follower_leo", "live_leader", "same_log",
           "set_log_len"]
