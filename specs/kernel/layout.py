"""A state as one fixed-width row of int32, and back: the form the compiled kernel reads.

The row holds, per broker of `Config.brokers` (by index, not id), its replica and what the
leader learnt of it from Fetch, then the controller's value as an id into the controller table
(specs/kernel/tables.py), the AlterPartition in flight, and the history. Brokers are named
by their index inside the row; ids appear only in labels and in the NamedTuples `unpack`
builds. `unpack(pack(s)) == s` for every state a run reaches (tests/specs/test_kernel.py).

Offsets are one int64 vector `lay` (the `L_*` names below index it), so the same compiled
functions serve every config; `Layout` also keeps them as attributes for Python.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from specs.config import BUDGETS, Config
from specs.state import NO_EPOCH, AlterPartitionRequest, FollowerState, HeldView, History, Replica, State

NONE = -2          # a broker epoch the controller does not know (Controller.broker_epoch is None)

# Per broker, at lay[L_B0] + index * lay[L_BW]:
ALIVE, LOG_LEN, FLUSHED, HWM, CLEAN_FILE, LEO, FETCH_EPOCH, LOG = range(8)
# (LEO, FETCH_EPOCH: the current leader's FollowerState of this broker; LOG: (leader_epoch, record) pairs)

# Indices of `lay`:
(L_NB, L_CAP, L_B0, L_BW, L_CTRL, L_INFL, L_HIST, L_WIDTH, L_NBUDGET, L_KEY, L_NREC, L_UNIVERSE, L_VIEW,
 L_USED) = range(14)
MAX_RECORDS = 30   # record ids 1..30: the acked set is an int32 mask
UNIVERSE = 15      # brokers a controller value may name: the config's, then strangers a raw request named

# The in-flight AlterPartition, at lay[L_INFL]: present, sender index, its broker epoch, leader
# epoch, partition epoch, leader recovery state, |isr|, then isr (indices) and member epochs.
I_PRESENT, I_BROKER, I_BROKER_EPOCH, I_LEADER_EPOCH, I_PARTITION_EPOCH, I_RECOVERY, I_ISR_LEN, I_ISR = range(8)
# The history, at lay[L_HIST]: produced, acked (bit r-1 for record r), lossy crashes, unclean
# shutdowns, unclean elections, operator unclean elections, the min ISR the committed records
# were promised and the least min ISR of the run (each 0 while it is the current effective min
# ISR: specs/state.py, History), |visible|, visible, budget use.
(H_PRODUCED, H_ACKED, H_LOSSY, H_UNCLEAN_SHUTDOWNS, H_UNCLEAN_ELECTIONS, H_OPERATOR_UNCLEAN, H_PROMISED_MIN_ISR,
 H_LEAST_MIN_ISR, H_VISIBLE_LEN, H_VISIBLE) = range(10)


# A leader's held metadata (bound metadata_lag > 0 only), at lay[L_VIEW] (-1: the config has
# none): the broker's index (-1: nobody's held), its leader epoch, its ISR and maximal ISR
# (masks of indices).
V_BROKER, V_LEADER_EPOCH, V_ISR_MASK, V_MAXIMAL_MASK = range(4)
V_WIDTH = 4


BLOCK = 8          # fields two rows are compared by at once (block_differs)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def block_differs(a, b, s):
    """Whether rows a and b differ in fields s..s+BLOCK-1: their differences OR-ed, which LLVM
    makes one vector compare (a loop leaving at the first difference compares one field at a
    time). How a step's changes are found: verifier/core/rowhash.child_hash, and the self-loop
    check (specs/kernel/successors.same_but_budgets)."""
    differs = 0
    for k in range(s, s + BLOCK):
        differs |= a[k] ^ b[k]
    return differs != 0


class KernelUnsupported(ValueError):
    """A config or state the kernel cannot hold (the command line says so in one line)."""


class LogTooLong(KernelUnsupported):
    """A log longer than the rows hold: the kernel is made again with longer rows."""

    def __init__(self, entries: int):
        super().__init__(f"a log of {entries} entries")
        self.entries = entries


class Layout:
    """Offsets of one config's rows."""

    def __init__(self, cfg: Config, cap: int = 0):
        nb = len(cfg.brokers)
        if nb > UNIVERSE:
            raise KernelUnsupported(f"{nb} brokers: the kernel holds at most {UNIVERSE}")
        # a log holds each produced record at most once (record ids 1..30: the acked set is a
        # mask); a scenario's may start longer, and a witness search's bound is only a ceiling
        cap = max(min(cfg.bounds.records, MAX_RECORDS), cap)
        if cap > MAX_RECORDS:
            raise KernelUnsupported(f"a log of {cap} entries: the kernel holds at most {MAX_RECORDS}")
        self.nb, self.cap = nb, cap
        self.b0, self.bw = 0, LOG + 2 * cap
        self.ctrl = nb * self.bw
        self.infl = self.ctrl + 1
        self.hist = self.infl + I_ISR + 2 * nb
        # the held view sits before the budgets, so a step that changes only it is no self-loop
        self.view = self.hist + H_VISIBLE + cap if cfg.bounds.metadata_lag else -1
        self.budgets = self.hist + H_VISIBLE + cap + (V_WIDTH if cfg.bounds.metadata_lag else 0)
        self.width = self.budgets + len(BUDGETS)
        # an event key: ctrl id, event, three arguments, prefer, then the request or the answers
        self.key = 6 + max(I_ISR + 2 * nb, 3 * nb)
        self.lay = np.array([nb, cap, self.b0, self.bw, self.ctrl, self.infl, self.hist, self.width,
                             len(BUDGETS), self.key, cap, nb, self.view, self.budgets], dtype=np.int64)
        self.brokers = cfg.brokers
        self.index = {b: i for i, b in enumerate(cfg.brokers)}
        self.universe = list(cfg.brokers)         # then strangers, in the order met
        self._made: dict[tuple, tuple] = {}       # a row's part -> the values unpack made of it

    def universe_index(self, b: int) -> int:
        """b's index among the brokers a controller value may name (a stranger gets the next)."""
        if b not in self.index:
            if len(self.universe) >= UNIVERSE:
                raise KernelUnsupported(f"broker {b}: more than {UNIVERSE} brokers named")
            self.index[b] = len(self.universe)
            self.universe.append(b)
            self.lay[L_UNIVERSE] = len(self.universe)
        return self.index[b]

    def at(self, i: int, field: int) -> int:
        return self.b0 + i * self.bw + field

    # ---------------------------------------------------------------- State <-> row
    def pack(self, s: State, ctrl_id: int) -> np.ndarray:
        """The row of s (its controller's id given). LogTooLong if a log does not fit."""
        row = [0] * self.width
        bw, cap = self.bw, self.cap
        records = []
        for i, (r, fs) in enumerate(zip(s.replicas, s.followers)):
            log = r.log
            if len(log) > cap:
                raise LogTooLong(len(log))
            base = self.b0 + i * bw
            row[base + ALIVE] = 1 if r.alive else 0
            row[base + LOG_LEN] = len(log)
            row[base + FLUSHED] = r.flushed
            row[base + HWM] = r.hwm
            row[base + CLEAN_FILE] = r.clean_file
            row[base + LEO] = fs.leo
            row[base + FETCH_EPOCH] = NONE if fs.broker_epoch is None else fs.broker_epoch
            k = base + LOG
            for epoch, record in log:
                row[k] = epoch
                row[k + 1] = record
                records.append(record)
                k += 2
        row[self.ctrl] = ctrl_id
        req = s.inflight
        if req is not None:
            f = self.infl
            row[f + I_PRESENT] = 1
            row[f + I_BROKER] = self._idx(req.broker)
            row[f + I_BROKER_EPOCH] = NONE if req.broker_epoch is None else req.broker_epoch
            row[f + I_LEADER_EPOCH] = req.leader_epoch
            row[f + I_PARTITION_EPOCH] = req.partition_epoch
            row[f + I_RECOVERY] = req.leader_recovery_state
            row[f + I_ISR_LEN] = len(req.isr)
            for k, (b, e) in enumerate(zip(req.isr, req.member_epochs)):
                row[f + I_ISR + k] = self._idx(b)
                row[f + I_ISR + self.nb + k] = NONE if e is None else e
        h, f = s.hist, self.hist
        row[f + H_PRODUCED] = h.produced
        records += h.acked
        records += h.visible
        if records and (min(records) < 1 or max(records) > MAX_RECORDS):
            raise KernelUnsupported(f"a record id outside 1..{MAX_RECORDS}")
        acked = 0
        for rec in h.acked:
            acked |= 1 << (rec - 1)
        row[f + H_ACKED] = acked
        row[f + H_LOSSY] = h.lossy_crashes
        row[f + H_UNCLEAN_SHUTDOWNS] = h.unclean_shutdowns
        row[f + H_UNCLEAN_ELECTIONS] = h.unclean_elections
        row[f + H_OPERATOR_UNCLEAN] = h.operator_unclean_elections
        row[f + H_PROMISED_MIN_ISR] = h.promised_min_isr
        row[f + H_LEAST_MIN_ISR] = h.least_min_isr
        row[f + H_VISIBLE_LEN] = len(h.visible)
        row[f + H_VISIBLE:f + H_VISIBLE + len(h.visible)] = h.visible
        row[self.budgets:self.budgets + len(h.used)] = h.used
        self._pack_view(s.view, row)
        return np.array(row, dtype=np.int32)

    def _pack_view(self, view, row: list) -> None:
        if self.view < 0:
            if view is not None:
                raise KernelUnsupported("a leader's held metadata, with bound metadata_lag = 0")
            return
        row[self.view + V_BROKER] = -1 if view is None else self.index[view.broker]
        if view is not None:
            row[self.view + V_LEADER_EPOCH] = view.leader_epoch
            row[self.view + V_ISR_MASK] = sum(1 << self.index[b] for b in view.isr)
            row[self.view + V_MAXIMAL_MASK] = sum(1 << self.index[b] for b in view.maximal_isr)

    def unpack(self, row, ctrl) -> State:
        """The State of `row`, its controller value `ctrl` given (the table holds it). A run meets
        few distinct replicas, requests and histories, so each part is made once per value."""
        row = row.tolist()
        made = self._made
        replicas, followers = [], []
        bw = self.bw
        for i in range(self.nb):
            base = self.b0 + i * bw
            block = tuple(row[base:base + bw])
            part = made.get(block)
            if part is None:
                part = made[block] = self._broker(block)
            replicas.append(part[0])
            followers.append(part[1])
        block = tuple(row[self.infl:])          # the request in flight and the history
        part = made.get(block)
        if part is None:
            part = made[block] = self._rest(row)
        return State(ctrl, tuple(replicas), tuple(followers), part[0], part[1], part[2])

    def _broker(self, block: tuple) -> tuple:
        n = block[LOG_LEN]
        entries = block[LOG:LOG + 2 * n]
        epoch = block[FETCH_EPOCH]
        return (Replica(block[ALIVE] == 1, tuple(zip(entries[0::2], entries[1::2])), block[FLUSHED], block[HWM],
                        block[CLEAN_FILE]),
                FollowerState(block[LEO], None if epoch == NONE else epoch))

    def _rest(self, row: list) -> tuple:
        f = self.infl
        inflight = None
        if row[f + I_PRESENT]:
            n = row[f + I_ISR_LEN]
            epoch = row[f + I_BROKER_EPOCH]
            inflight = AlterPartitionRequest(
                self.universe[row[f + I_BROKER]], None if epoch == NONE else epoch, row[f + I_LEADER_EPOCH],
                row[f + I_PARTITION_EPOCH], tuple(self.universe[row[f + I_ISR + k]] for k in range(n)),
                tuple(None if row[f + I_ISR + self.nb + k] == NONE else row[f + I_ISR + self.nb + k]
                      for k in range(n)),
                row[f + I_RECOVERY])
        f = self.hist
        mask = row[f + H_ACKED]
        acked = tuple(rec for rec in range(1, MAX_RECORDS + 1) if mask >> (rec - 1) & 1) if mask else ()
        visible = tuple(row[f + H_VISIBLE:f + H_VISIBLE + row[f + H_VISIBLE_LEN]])
        used = tuple(row[self.budgets:self.budgets + len(BUDGETS)])
        view = None
        if self.view >= 0 and row[self.view + V_BROKER] >= 0:
            isr, maximal = row[self.view + V_ISR_MASK], row[self.view + V_MAXIMAL_MASK]
            view = HeldView(self.brokers[row[self.view + V_BROKER]], row[self.view + V_LEADER_EPOCH],
                            tuple(b for i, b in enumerate(self.brokers) if isr >> i & 1),
                            tuple(b for i, b in enumerate(self.brokers) if maximal >> i & 1))
        return inflight, History(row[f + H_PRODUCED], acked, visible, row[f + H_LOSSY], row[f + H_UNCLEAN_SHUTDOWNS],
                                 row[f + H_UNCLEAN_ELECTIONS], row[f + H_OPERATOR_UNCLEAN], row[f + H_PROMISED_MIN_ISR],
                                 row[f + H_LEAST_MIN_ISR], used), view

    def _idx(self, b: int) -> int:
        return self.universe_index(b)


__all__ = ["Layout", "KernelUnsupported", "NONE", "NO_EPOCH"]
