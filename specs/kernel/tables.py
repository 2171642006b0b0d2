"""The controller as the kernel reads it: two tables the concrete algebra fills.

The controller's rules stay in the algebra that z3 reads (specs/controller.py,
specs/pipeline.py). A run meets few controller values (about 1,300 in the default check), so
the kernel never runs them itself:
- `facts`: one row per controller value (an id), the fields the broker side and the
  properties read (leader, epochs, ISR, ELR, the broker registry, min ISR) as indices and
  bit masks over `Config.brokers`;
- `events`: an open-addressing table from an event key (controller id, event, arguments,
  prefer; the request or the GetReplicaLogInfo answers) to its outcome (the next controller
  id, whether it was refused, the election and shutdown flags).
The kernel looks both up; an event it does not find it hands back as a key, `Tables.fill`
runs it through `specs.actions.common.event` (the memo every engine shares) and the kernel
runs that state again. This generalises that memo to compiled code.

A fill may run while other threads' compiled code reads the tables (the search's threads,
verifier/engines/kernel): a new event's key and outcome are written before the slot is marked
used, a new controller value's facts before any outcome names it, and the facts live in
reserved address space so they do not move until it is full (`fits`; where the OS refuses the
reservation, or it is full, the search fills only while no thread runs). A reader holding the
event arrays from before a growth reads a smaller table, where a new event is missing and the
state waits for it again.
"""
from __future__ import annotations

import hashlib

import numpy as np
from numba import njit

from specs import controller as C
from specs.actions.common import event as run_event
from specs.config import Config
from specs.kernel.layout import (I_BROKER, I_BROKER_EPOCH, I_ISR, I_ISR_LEN, I_LEADER_EPOCH, I_PARTITION_EPOCH,
                                 I_RECOVERY, NONE, Layout)
from specs.kernel.reserve import reserve
from specs.rules import RECOVERY_STRATEGIES
from specs.state import NO_LEADER, AlterPartitionRequest, Controller

# facts columns; then REPLICAS, ISR (indices, in order) and BROKER_EPOCHS (by index), nb each
(F_LEADER, F_LEADER_EPOCH, F_PARTITION_EPOCH, F_RECOVERY, F_MIN_ISR, F_EFFECTIVE_MIN_ISR, F_UNCLEAN,
 F_REASSIGNING, F_N_REPLICAS, F_N_ISR, F_ISR_MASK, F_ELR_MASK, F_REGISTERED, F_FENCED, F_SHUTTING_DOWN,
 F_REPLICA_MASK, F_LAST_KNOWN_ELR_MASK, F_LAST_KNOWN_LEADER, F_REPLICAS) = range(19)

# events
(E_FENCE, E_UNFENCE, E_CONTROLLED_SHUTDOWN, E_REGISTER, E_ALTER_PARTITION, E_ELECT, E_SET_MIN_ISR,
 E_SET_UNCLEAN, E_PERIODIC_UNCLEAN, E_REASSIGN, E_UNCLEAN_RECOVERY, E_RENAME, E_UNCLEAR, E_ADD_CLEARED,
 E_PERIODIC_PREFERRED) = range(15)
# E_UNCLEAR and E_ADD_CLEARED are no events of Kafka's either: the controller value with a broker's
# stale ELR index entries gone, or c more of them (the index across partitions, specs/elr_index.py)
# E_RENAME is no event of Kafka's: the controller value with the replicas renamed (symmetry
# reduction, specs/kernel/symmetry.py), kept in the same table so that it is filled the same way
# outcome columns
O_CTRL, O_REFUSED, O_UNCLEAN_ELECTION, O_OPERATOR_UNCLEAN, O_UNCLEAN_SHUTDOWN = range(5)   # O_REFUSED: error + 1
ELECT_TYPES = ("preferred", "unclean", "designated")


UNIVERSE = 15          # brokers a controller value may name: the config's, then strangers a request named
F_ISR = F_REPLICAS + UNIVERSE          # the ISR's members, in order
F_EPOCHS = F_ISR + UNIVERSE            # the registered broker epoch of each (NONE: none)
F_CONTENT = F_EPOCHS + UNIVERSE        # a 63-bit digest of the whole value, not of its id (`content`)
F_CLEARED = F_CONTENT + 1              # the ELR index's stale entries (cleared_elr): 4 bits of count a broker
FACTS_WIDTH = F_CLEARED + 1
FACTS_RESERVED = 1 << 22               # controller values whose facts stay put (address space, not memory)


@njit(cache=True, _nrt=False)
def key_hash(key) -> np.uint64:
    h = np.uint64(0x9E3779B97F4A7C15)
    for v in key:
        h ^= np.uint64(v & 0xFFFFFFFFFFFF) + np.uint64(0x632BE59BD9B4E019)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(31)
    return h


@njit(cache=True, _nrt=False)
def find(keys, used, key) -> int:
    """The slot holding `key`, or -(the free slot it would go to) - 1."""
    mask = np.int64(len(used) - 1)
    slot = np.int64(key_hash(key) >> np.uint64(1)) & mask
    while True:
        if not used[slot]:
            return -slot - 1
        same = True
        for k in range(len(key)):
            if keys[slot, k] != key[k]:
                same = False
                break
        if same:
            return slot
        slot = (slot + 1) & mask


@njit(cache=True, _nrt=False)
def _rehash(keys, vals, used, new_keys, new_vals, new_used):
    for slot in range(len(used)):
        if used[slot]:
            at = -find(new_keys, new_used, keys[slot]) - 1
            for k in range(keys.shape[1]):
                new_keys[at, k] = keys[slot, k]
            for k in range(vals.shape[1]):
                new_vals[at, k] = vals[slot, k]
            new_used[at] = 1


class Tables:
    """The controller values and event outcomes of one config, as arrays the kernel reads."""

    def __init__(self, cfg: Config, layout: Layout):
        self.cfg, self.layout = cfg, layout
        self.ids: dict[Controller, int] = {}
        self.ctrls: list[Controller] = []
        reserved = reserve(FACTS_RESERVED, (FACTS_WIDTH,), np.int64)
        self.facts = reserved if reserved is not None else np.zeros((64, FACTS_WIDTH), dtype=np.int64)
        self.fixed = reserved is not None   # the facts are reserved: they move only when it is full
        self.keys = np.zeros((1024, layout.key), dtype=np.int64)
        self.vals = np.zeros((1024, 5), dtype=np.int64)
        self.used = np.zeros(1024, dtype=np.int8)
        self.count = 0
        self.errors: list[str] = []         # the controller's error names (an outcome's O_REFUSED - 1)
        self.contents: dict[int, Controller] = {}     # F_CONTENT -> the value (two values, one digest: refused)

    # ---------------------------------------------------------------- controller values
    def ctrl_id(self, ctrl: Controller) -> int:
        cid = self.ids.get(ctrl)
        if cid is None:
            cid = self.ids[ctrl] = len(self.ctrls)
            self.ctrls.append(ctrl)
            if cid >= len(self.facts):
                self.facts = np.concatenate([self.facts, np.zeros_like(self.facts)])
                self.fixed = False
            self.facts[cid] = self._facts(ctrl)
            other = self.contents.setdefault(int(self.facts[cid, F_CONTENT]), ctrl)
            if other != ctrl:
                raise AssertionError(f"two controller values share the content digest {self.facts[cid, F_CONTENT]}: "
                                     f"{other} and {ctrl}")
        return cid

    def fits(self, n: int) -> bool:
        """Whether `n` fills (each makes at most one controller value) leave the facts where
        they are: then they may run while compiled code reads the tables."""
        return self.fixed and len(self.ctrls) + n <= len(self.facts)

    def _facts(self, ctrl: Controller) -> np.ndarray:
        lay = self.layout
        p = ctrl.partition
        row = np.zeros(FACTS_WIDTH, dtype=np.int64)
        idx = lay.universe_index

        def mask(bs) -> int:
            return sum(1 << idx(b) for b in bs)

        row[F_LEADER] = NO_LEADER if p.leader == NO_LEADER else idx(p.leader)
        row[F_LEADER_EPOCH], row[F_PARTITION_EPOCH] = p.leader_epoch, p.partition_epoch
        row[F_RECOVERY], row[F_MIN_ISR] = p.leader_recovery_state, ctrl.min_isr
        row[F_EFFECTIVE_MIN_ISR] = ctrl.effective_min_isr
        row[F_UNCLEAN] = int(ctrl.unclean_leader_election)
        row[F_REASSIGNING] = int(bool(p.adding_replicas or p.removing_replicas))
        row[F_N_REPLICAS], row[F_N_ISR] = len(p.replicas), len(p.isr)
        row[F_ISR_MASK], row[F_ELR_MASK] = mask(p.isr), mask(p.elr)
        row[F_REGISTERED], row[F_FENCED] = mask(ctrl.registered), mask(ctrl.fenced)
        row[F_SHUTTING_DOWN], row[F_REPLICA_MASK] = mask(ctrl.shutting_down), mask(p.replicas)
        row[F_LAST_KNOWN_ELR_MASK] = mask(b for b in p.last_known_elr if b != NO_LEADER)
        row[F_LAST_KNOWN_LEADER] = NO_LEADER if p.last_known_leader == NO_LEADER else idx(p.last_known_leader)
        for k, b in enumerate(p.replicas):
            row[F_REPLICAS + k] = idx(b)
        for k, b in enumerate(p.isr):
            row[F_ISR + k] = idx(b)
        for b in ctrl.registered:
            idx(b)
        for i, b in enumerate(lay.universe):
            epoch = ctrl.broker_epoch(b)
            row[F_EPOCHS + i] = NONE if epoch is None else epoch
        row[F_CONTENT] = content(ctrl)
        for b in set(p.cleared_elr):
            c = p.cleared_elr.count(b)
            if c > 15:
                raise AssertionError(f"broker {b} has {c} stale ELR index entries: the facts hold 15")
            row[F_CLEARED] |= c << (4 * idx(b))
        return row

    # ---------------------------------------------------------------- events
    def fill(self, key: np.ndarray) -> None:
        """Run the event `key` names through the algebra and store its outcome (nothing when the
        table has it already: several states may wait for one event)."""
        if 2 * (self.count + 1) > len(self.used):
            self._grow()
        at = find(self.keys, self.used, key)
        if at >= 0:
            return
        out = self._run(key.tolist())
        at = -at - 1
        self.keys[at] = key
        self.vals[at] = (self.ctrl_id(out.ctrl), self._error(out.error), int(bool(out.unclean_election)),
                         int(bool(out.operator_unclean)), int(bool(out.unclean_shutdown)))
        self.used[at] = 1
        self.count += 1

    def _error(self, name) -> int:
        if name is None:
            return 0
        if name not in self.errors:
            self.errors.append(name)
        return self.errors.index(name) + 1

    def _grow(self) -> None:
        n = 2 * len(self.used)
        keys = np.zeros((n, self.layout.key), dtype=np.int64)
        vals = np.zeros((n, 5), dtype=np.int64)
        used = np.zeros(n, dtype=np.int8)
        _rehash(self.keys, self.vals, self.used, keys, vals, used)
        self.keys, self.vals, self.used = keys, vals, used

    def _run(self, key: list) -> C.Outcome:
        """The outcome of the event `key` (a list of ints) names, by the algebra (memoised per
        config)."""
        cfg, lay = self.cfg, self.layout
        ids = lay.universe
        ctrl, kind, a, b, c, prefer = self.ctrls[key[0]], key[1], key[2], key[3], key[4], key[5]
        kw = {} if prefer < 0 else {"prefer": ids[prefer]}
        extra = key[6:]
        if kind == E_FENCE:
            return run_event(cfg, C.fence, ctrl, ids[a], **kw)
        if kind == E_UNFENCE:
            return run_event(cfg, C.unfence, ctrl, ids[a], **kw)
        if kind == E_CONTROLLED_SHUTDOWN:
            return run_event(cfg, C.controlled_shutdown, ctrl, ids[a], **kw, **({"elsewhere": True} if b else {}))
        if kind == E_REGISTER:
            return run_event(cfg, C.register, ctrl, ids[a], b, c, **kw)
        if kind == E_ALTER_PARTITION:
            n, nb = extra[I_ISR_LEN], lay.nb
            epoch = extra[I_BROKER_EPOCH]
            req = AlterPartitionRequest(
                ids[extra[I_BROKER]], None if epoch == NONE else epoch, extra[I_LEADER_EPOCH],
                extra[I_PARTITION_EPOCH], tuple(ids[extra[I_ISR + k]] for k in range(n)),
                tuple(None if extra[I_ISR + nb + k] == NONE else extra[I_ISR + nb + k] for k in range(n)),
                extra[I_RECOVERY])
            return run_event(cfg, C.alter_partition, ctrl, req, **kw)
        if kind == E_ELECT:
            return run_event(cfg, C.elect, ctrl, ELECT_TYPES[a], None if b < 0 else ids[b], **kw)
        if kind == E_SET_MIN_ISR:
            return run_event(cfg, C.set_min_isr, ctrl, a)
        if kind == E_SET_UNCLEAN:
            return run_event(cfg, C.set_unclean, ctrl, bool(a))
        if kind == E_PERIODIC_UNCLEAN:
            return run_event(cfg, C.periodic_unclean_election, ctrl, **kw)
        if kind == E_PERIODIC_PREFERRED:
            return run_event(cfg, C.periodic_preferred_election, ctrl, **kw)
        if kind == E_REASSIGN:
            return run_event(cfg, C.reassign, ctrl, decode_brokers(ids, a))
        if kind == E_RENAME:
            from specs.symmetry import permute_controller
            to = {ids[i]: ids[new] for i, new in enumerate(decode_brokers(list(range(lay.nb)), a)) if i != new}
            return C.Outcome(permute_controller(cfg, ctrl, to))
        if kind in (E_UNCLEAR, E_ADD_CLEARED):
            from specs.elr_index import with_entries, without_entries
            p = ctrl.partition
            p = without_entries(p, ids[a]) if kind == E_UNCLEAR else with_entries(p, [ids[a]] * b)
            return C.Outcome(ctrl._replace(partition=p))
        if kind == E_UNCLEAN_RECOVERY:
            info = tuple((ids[i], (extra[3 * i + 1], extra[3 * i + 2])) for i in range(lay.nb) if extra[3 * i])
            return run_event(cfg, C.unclean_recovery, ctrl, RECOVERY_STRATEGIES[a], info)
        raise ValueError(f"unknown event {kind}")


def content(ctrl: Controller) -> int:
    """A controller value's 63-bit digest of its text: the same in every process and whatever
    order a run met the values in, unlike its id. Several partitions' rows are sorted by it
    (specs/kernel/lifted_rows.py: the symmetry over partitions must not depend on which thread
    met a value first)."""
    return int.from_bytes(hashlib.blake2b(repr(ctrl).encode(), digest_size=8).digest(), "little") >> 1


def decode_brokers(ids, code: int) -> tuple:
    """An ordered list of broker indices packed as base-16 digits (index + 1; 7 replicas fit an
    int32 label), as ids."""
    out = []
    while code:
        out.append(ids[code % 16 - 1])
        code //= 16
    return tuple(out)


def encode_brokers(index: dict, brokers) -> int:
    code = 0
    for k, b in enumerate(brokers):
        code += (index[b] + 1) * 16 ** k
    return code
