"""The controller's ELR index across partitions (specs/elr_index.py, F5) on rows of several
partitions: after a joined step (specs/kernel/lifted.py), where broker x left the ELR of a
partition p > 0 by that step and p's controller value still holds all its stale entries for x,
they go (the table's E_UNCLEAR outcome) and partition 0's value gets as many (E_ADD_CLEARED),
as Kafka's `BrokersToElrs.remove` leaves them. The new controller values come from the table the
algebra fills (tables.Tables._run, by specs/elr_index's own functions), so no rule is here."""
from __future__ import annotations

from numba import njit

from specs.kernel.events import MISS
from specs.kernel.layout import L_CTRL
from specs.kernel.tables import E_ADD_CLEARED, E_UNCLEAR, F_CLEARED, F_ELR_MASK, O_CTRL, UNIVERSE, find


@njit(cache=True, _nrt=False)
def elr_index(r, t, parts, lay, tables, key):
    """t (a step of r) with the index's entries moved across partitions: 0, or MISS (`key` holds
    the event to fill)."""
    ekeys, evals, eused, facts = tables
    w, ctrl = len(r) // parts, lay[L_CTRL]
    moved = 0
    for p in range(1, parts):
        was, now = facts[r[p * w + ctrl]], facts[t[p * w + ctrl]]
        leaving = was[F_ELR_MASK] & ~now[F_ELR_MASK]
        if leaving == 0 or now[F_CLEARED] == 0:
            continue
        for x in range(UNIVERSE):
            c = (now[F_CLEARED] >> (4 * x)) & 15
            if (leaving >> x) & 1 and c and c == (was[F_CLEARED] >> (4 * x)) & 15:
                got = _event(t[p * w + ctrl], E_UNCLEAR, x, 0, ekeys, evals, eused, key)
                if got == MISS:
                    return MISS
                t[p * w + ctrl] = got
                moved |= c << (4 * x)
    for x in range(UNIVERSE):
        c = (moved >> (4 * x)) & 15
        if c:
            got = _event(t[ctrl], E_ADD_CLEARED, x, c, ekeys, evals, eused, key)
            if got == MISS:
                return MISS
            t[ctrl] = got
    return 0


@njit(cache=True, inline="always", _nrt=False)
def _event(cid, kind, a, b, ekeys, evals, eused, key):
    """The controller value the event makes of value `cid`, or MISS (its key in `key`)."""
    for k in range(len(key)):
        key[k] = 0
    key[0], key[1], key[2], key[3], key[5] = cid, kind, a, b, -1
    slot = find(ekeys, eused, key)
    return MISS if slot < 0 else evals[slot, O_CTRL]
