"""A controller event from compiled code: build its key, find its outcome in the table the
algebra fills (specs/kernel/tables.py), install it into the row. A key the table lacks is a
MISS: the key stays in `key` for Python to fill, and the step is run again from scratch.

An event refused with an error (Kafka's answer: what conform compares) leaves its error in
the last slot of the scratch `work`, as -(index + 1) into `Tables.errors`; the broker side's
own refusals are the positive codes below.
"""
from __future__ import annotations

from numba import njit

from specs.kernel.layout import L_CTRL
from specs.kernel.mechanics import acceptable_leader, after_controller, alive, entry_epoch, log_len
from specs.kernel.tables import E_UNCLEAN_RECOVERY, F_N_REPLICAS, F_REPLICAS, O_REFUSED, find

MISS = -1
# the broker side's refusals (work[-1]); 0: none
NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS = 1, 2
ERRORS = {NOT_LEADER_OR_FOLLOWER: "NOT_LEADER_OR_FOLLOWER", NOT_ENOUGH_REPLICAS: "NOT_ENOUGH_REPLICAS"}


@njit(cache=True, inline="always", _nrt=False)
def refuse(work, code):
    work[len(work) - 1] = code


@njit(cache=True, _nrt=False)
def _install(t, lay, f, tables, key, work):
    ekeys, evals, eused, facts = tables
    slot = find(ekeys, eused, key)
    if slot < 0:
        return MISS
    after_controller(t, lay, facts, f, evals[slot])
    if evals[slot, O_REFUSED]:
        refuse(work, -evals[slot, O_REFUSED])
    return 0


@njit(cache=True, _nrt=False)
def event(t, lay, f, tables, kind, a, b, c, prefer, key, work):
    """The event (kind, a, b, c; the elected broker `prefer` or -1) on t's controller (`f` its
    facts): installs the outcome and returns 0, or MISS."""
    for k in range(len(key)):
        key[k] = 0
    key[0], key[1], key[2], key[3], key[4], key[5] = t[lay[L_CTRL]], kind, a, b, c, prefer
    return _install(t, lay, f, tables, key, work)


@njit(cache=True, _nrt=False)
def request_event(t, lay, f, tables, kind, prefer, key, work, start, length):
    """The event `kind` whose arguments are t[start:start + length] (the AlterPartition in
    flight), as `event`."""
    for k in range(len(key)):
        key[k] = 0
    key[0], key[1], key[5] = t[lay[L_CTRL]], kind, prefer
    for k in range(length):
        key[6 + k] = t[start + k]
    return _install(t, lay, f, tables, key, work)


@njit(cache=True, _nrt=False)
def recovery_key(r, lay, f, strategy, key):
    """A recovery round's key: its strategy and the GetReplicaLogInfo answers. Every running
    replica the controller accepts as a leader answers (its last written leader epoch, its
    log end offset)."""
    for k in range(len(key)):
        key[k] = 0
    key[0], key[1], key[2], key[5] = r[lay[L_CTRL]], E_UNCLEAN_RECOVERY, strategy, -1
    for k in range(f[F_N_REPLICAS]):
        i = f[F_REPLICAS + k]
        if alive(r, lay, i) and acceptable_leader(f, i):
            n = log_len(r, lay, i)
            key[6 + 3 * i] = 1
            key[6 + 3 * i + 1] = entry_epoch(r, lay, i, n - 1) if n else -1
            key[6 + 3 * i + 2] = n


@njit(cache=True, _nrt=False)
def recovery_refused(r, lay, f, tables, strategy, key):
    """Whether a recovery round in r would be refused (it must wait): 1, 0, or MISS."""
    ekeys, evals, eused, facts = tables
    recovery_key(r, lay, f, strategy, key)
    slot = find(ekeys, eused, key)
    if slot < 0:
        return MISS
    return 1 if evals[slot, O_REFUSED] else 0


@njit(cache=True, _nrt=False)
def recovery_event(t, lay, f, tables, strategy, key, work):
    """Install a recovery round's outcome, or MISS."""
    recovery_key(t, lay, f, strategy, key)
    return _install(t, lay, f, tables, key, work)
