"""Metadata that lags (bound metadata_lag; docs/protocol.md, "Metadata that lags"): a leader cut
off from the controller stops receiving metadata and acts on the partition as it last received
it, while the controller goes on without it: it may fence the leader and elect another, and the
old leader, not knowing, still takes produce requests at its old leader epoch (a zombie leader,
seen on a real 4.4.0 cluster: docs/cluster.md).

The row holds one held view (layout.V_*): whose, its leader epoch and its ISR. While a leader's
metadata is held:
- it acts as leader only through the steps here (`stale_produce`, `stale_advance_hwm`), on its
  view: a produce is refused while its view's ISR is below min ISR, and its HWM waits for its
  view's ISR. Its followers fetch from it only while the controller still names it leader at
  that epoch (a follower whose metadata names a newer epoch is refused: Kafka's leader epoch
  check of Fetch); once deposed, nobody fetches from it (only its own metadata is held);
- it sends no AlterPartition (its link to the controller is cut), so the data steps that
  propose one, and the controller's leader steps, leave it out (`acting_leader`);
- a crash or a clean stop ends it (a new incarnation registers and reads current metadata);
  `deliver_metadata` ends it too (the link heals): it becomes what the controller says, and its
  next fetch truncates what it appended at its old epoch.
Produce and AlterPartition by other brokers are as without lag. The controller never reads the
view: it is the broker side's.
"""
from __future__ import annotations

from numba import njit

from specs.kernel.layout import (H_PRODUCED, LOG, LOG_LEN, L_HIST, L_NB, L_VIEW, V_BROKER, V_ISR_MASK,
                                 V_LEADER_EPOCH, V_MAXIMAL_MASK)
from specs.kernel.mechanics import alive, at, has, hwm_target, live_leader, log_len, maximal_isr, raise_hwm
from specs.kernel.tables import F_EFFECTIVE_MIN_ISR, F_ISR_MASK, F_LEADER, F_LEADER_EPOCH


@njit(cache=True, inline="always", _nrt=False)
def held_by(r, lay):
    """The broker (index) whose metadata is held, or -1."""
    v = lay[L_VIEW]
    return -1 if v < 0 else r[v + V_BROKER]


@njit(cache=True, inline="always", _nrt=False)
def acting_leader(r, lay, f):
    """The leader the controller names, if it runs and acts on current metadata, else -1."""
    leader = live_leader(r, lay, f)
    return -1 if leader >= 0 and held_by(r, lay) == leader else leader


@njit(cache=True, inline="always", _nrt=False)
def serves_fetch(r, lay, f):
    """The leader followers fetch from, or -1: the controller's running leader, unless its
    metadata is held at an older leader epoch than theirs."""
    leader = live_leader(r, lay, f)
    if leader >= 0 and held_by(r, lay) == leader and r[lay[L_VIEW] + V_LEADER_EPOCH] != f[F_LEADER_EPOCH]:
        return -1
    return leader


@njit(cache=True, _nrt=False)
def forget_view(t, lay, i):
    """Broker i stopped: what it held goes with the process."""
    v = lay[L_VIEW]
    if v >= 0 and t[v + V_BROKER] == i:
        t[v + V_BROKER], t[v + V_LEADER_EPOCH], t[v + V_ISR_MASK], t[v + V_MAXIMAL_MASK] = -1, 0, 0, 0


@njit(cache=True, inline="always", _nrt=False)
def _put(params, m, a):
    params[m, 0], params[m, 1], params[m, 2] = a, 0, 0
    return m + 1


@njit(cache=True, inline="always", _nrt=False)
def _zombie(r, lay):
    """The running broker whose metadata is held, or -1."""
    z = held_by(r, lay)
    return z if z >= 0 and alive(r, lay, z) else -1


@njit(cache=True, _nrt=False)
def _n_view_isr(r, lay):
    mask, n = r[lay[L_VIEW] + V_ISR_MASK], 0
    for i in range(lay[L_NB]):
        n += has(mask, i)
    return n


# ---------------------------------------------------------------- hold_metadata
@njit(cache=True, inline="always", _nrt=False)
def hold_metadata_params(r, lay, cv, f, tables, key, work, params):
    """The running leader, while nobody's metadata is held."""
    if lay[L_VIEW] < 0 or held_by(r, lay) >= 0:
        return 0
    leader = live_leader(r, lay, f)
    return _put(params, 0, leader) if leader >= 0 else 0


@njit(cache=True, _nrt=False)
def hold_metadata_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """p0 keeps the partition as it is now: its leadership, leader epoch and ISR, and the
    members its AlterPartition in flight adds (answered or not, it never hears back)."""
    v = lay[L_VIEW]
    t[v + V_BROKER], t[v + V_LEADER_EPOCH], t[v + V_ISR_MASK] = p0, f[F_LEADER_EPOCH], f[F_ISR_MASK]
    t[v + V_MAXIMAL_MASK] = maximal_isr(t, lay, f)
    return 0


# ---------------------------------------------------------------- deliver_metadata
@njit(cache=True, inline="always", _nrt=False)
def deliver_metadata_params(r, lay, cv, f, tables, key, work, params):
    """A running broker's metadata is held."""
    z = _zombie(r, lay)
    return _put(params, 0, z) if z >= 0 else 0


@njit(cache=True, _nrt=False)
def deliver_metadata_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """p0 receives the controller's metadata: from now on it acts on the current partition."""
    forget_view(t, lay, p0)
    return 0


# ---------------------------------------------------------------- stale_produce
@njit(cache=True, inline="always", _nrt=False)
def stale_produce_params(r, lay, cv, f, tables, key, work, params):
    """A producer whose metadata names the held leader (its own, or the one it bootstrapped
    through) sends to it; the held leader takes it while its view's ISR is >= min ISR."""
    z = _zombie(r, lay)
    if z >= 0 and _n_view_isr(r, lay) >= f[F_EFFECTIVE_MIN_ISR]:
        return _put(params, 0, z)
    return 0


@njit(cache=True, _nrt=False)
def stale_produce_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """p0 appends (its view's leader epoch, the next record id)."""
    h = lay[L_HIST]
    n = log_len(t, lay, p0)
    record = t[h + H_PRODUCED] + 1
    t[at(lay, p0, LOG) + 2 * n] = t[lay[L_VIEW] + V_LEADER_EPOCH]
    t[at(lay, p0, LOG) + 2 * n + 1] = record
    t[at(lay, p0, LOG_LEN)] = n + 1
    t[h + H_PRODUCED] = record
    return 0


# ---------------------------------------------------------------- stale_advance_hwm
@njit(cache=True, _nrt=False)
def _stale_hwm(r, lay, cv, f, z):
    """The HWM z may advance to on its view, or -1 (the HWM rule on its view's ISR and maximal
    ISR); its followers' log end offsets count only while the controller still names it leader
    at its view's epoch."""
    v = lay[L_VIEW]
    leads = f[F_LEADER] == z and f[F_LEADER_EPOCH] == r[v + V_LEADER_EPOCH]
    return hwm_target(r, lay, cv, f, z, r[v + V_MAXIMAL_MASK], _n_view_isr(r, lay), leads)


@njit(cache=True, inline="always", _nrt=False)
def stale_advance_hwm_params(r, lay, cv, f, tables, key, work, params):
    """The HWM rule on the held leader's view lets it advance."""
    z = _zombie(r, lay)
    return _put(params, 0, z) if z >= 0 and _stale_hwm(r, lay, cv, f, z) >= 0 else 0


@njit(cache=True, _nrt=False)
def stale_advance_hwm_effect(t, lay, cv, f, tables, p0, p1, p2, prefer, key, work):
    """p0 advances its HWM: acks=all requests below it complete, acknowledged if its view's ISR
    is >= min ISR (records of its view's leader epoch), and consumers reading from it may read
    below it."""
    raise_hwm(t, lay, p0, _stale_hwm(t, lay, cv, f, p0), t[lay[L_VIEW] + V_LEADER_EPOCH],
              _n_view_isr(t, lay) >= f[F_EFFECTIVE_MIN_ISR])
    return 0


__all__ = ["acting_leader", "forget_view", "held_by", "serves_fetch"]
