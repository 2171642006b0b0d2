"""The compiled successor kernel: the model's steps and properties over fixed-width rows.

`Kernel(cfg)` holds one config's layout (layout.py), its controller tables (tables.py, filled
by the algebra) and the config vector; `successors(state)` gives the model's
(label, State) pairs through pack, the compiled rules and unpack, which is how tests hold
the kernel to `specs.actions.successors` state by state. The search engine over rows is
verifier/engines/kernel.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from specs.kernel import cache as _cache
from specs.kernel import specialise as _specialise

CACHE = _cache.install()          # before any kernel module is compiled: see cache.py
_specialise.install()             # one compile per function, not one per constant: see specialise.py

from specs import actions as A
from specs.actions.labels import ELECTED, LEADS_ELSEWHERE
from specs.config import BUDGETS, Config
from specs.kernel.events import ERRORS, MISS
from specs.kernel.layout import KernelUnsupported, Layout, LogTooLong
from specs.kernel.mechanics import (after_controller, config_vector, holds_committed_log, keep_promises,
                                    revive_replica, within_tolerance)
from specs.kernel.successors import BOUNDED, GUARDS, LABEL, N_ACTIONS, UNBOUNDED, apply, successors
from specs.kernel.tables import ELECT_TYPES, Tables, decode_brokers, encode_brokers
from specs.rules import RECOVERY_STRATEGIES

if A.ACTION_NAMES != ("produce", "fetch", "advance_hwm", "shrink_isr", "expand_isr", "deliver_alter_partition",
                      "crash", "crash_lossy", "restart", "clean_shutdown", "fence", "unfence",
                      "controlled_shutdown", "elect", "set_min_isr", "set_unclean", "periodic_unclean_election",
                      "periodic_preferred_election", "reassign", "unclean_recovery", "hold_metadata", "deliver_metadata", "stale_produce",
                      "stale_advance_hwm"):
    raise ImportError("specs/kernel: the declared actions changed; the kernel's action ids follow them")


def _plan() -> np.ndarray:
    """Per action, from the declarations: the budget it charges (an index of BUDGETS, -1: none),
    whether it elects, and whether it charges only when the broker it names runs. Every
    declared step must have its guard and effect in the kernel."""
    from specs.kernel import control, data
    plan = np.zeros((N_ACTIONS, 3), dtype=np.int64)
    for k, action in enumerate(A.ACTIONS):
        plan[k] = (-1 if action.budget is None else BUDGETS.index(action.budget), int(action.elects),
                   int(action.charged_if_running))
        side = data if action.kind == A.DATA else control
        if not all(hasattr(side, f"{action.name}_{part}") for part in ("params", "effect")):
            raise ImportError(f"specs/kernel: step {action.name} has no {side.__name__}.{action.name}_params "
                              f"and _effect")
    return plan


PLAN = _plan()


class _Index:
    """A broker id's index among the brokers the kernel names (a stranger gets the next)."""

    def __init__(self, layout: Layout):
        self.layout = layout

    def __getitem__(self, b: int) -> int:
        return self.layout.universe_index(b)


class Kernel:
    """One config's kernel: its layout, tables and buffers."""

    def __init__(self, cfg: Config, cap: int = 0, symmetric: bool = False):
        """`symmetric`: a search's successors come as their orbits' canonical members
        (specs/kernel/symmetry.py, canonical_all), for a Model with symmetry reduction."""
        from specs.kernel.symmetry import scratch
        self.cfg, self.symmetric = cfg, symmetric
        # what a search's compiled loop is told: None has numba prune the reduction away, so a
        # search without symmetry never compiles it (canonical_all's docstring)
        self.reduce = True if symmetric else None
        self.layout = Layout(cfg, cap)
        self.tables = Tables(cfg, self.layout)
        self.cv = config_vector(cfg)
        self.plan = PLAN
        self.max_successors = self._max_successors()
        self.out = np.zeros((self.max_successors, self.layout.width), dtype=np.int32)
        self.labels = np.zeros((self.max_successors, LABEL), dtype=np.int64)
        self.key = np.zeros(self.layout.key, dtype=np.int64)
        # scratch: the guards' 2 * nb, canonical's, and the last: a refusal
        self.work = np.zeros(2 * self.layout.nb + scratch(self.layout.nb, self.layout.width) + 1, dtype=np.int64)
        self._rows: dict[int, tuple] = {}           # id(state) -> (state, row) of states unpacked lately
        self.verdicts: list = [None, 0]             # the last state the properties judged, its mask
        self.step_verdicts: list = [None, None, None, 0]
        self.params = np.zeros((self.max_successors, 3), dtype=np.int64)
        self.step_bad = np.zeros(self.max_successors, dtype=np.int64)     # a reducing search's step verdicts

    def _max_successors(self) -> int:
        nb, cap = self.layout.nb, self.layout.cap
        one = 2 ** nb + nb * (12 + cap) + nb * nb + 12
        return one * (nb + 1)

    def table_args(self):
        t = self.tables
        return t.keys, t.vals, t.used, t.facts

    # ---------------------------------------------------------------- State <-> row
    def pack(self, s) -> np.ndarray:
        """s's row (not to be written to: a state unpacked lately keeps its row here)."""
        hit = self._rows.get(id(s))
        if hit is not None and hit[0] is s:
            return hit[1]
        return self.layout.pack(s, self.tables.ctrl_id(s.ctrl))

    def unpack(self, row):
        s = self.layout.unpack(row, self.tables.ctrls[int(row[self.layout.ctrl])])
        if len(self._rows) >= 4096:
            self._rows.clear()
        self._rows[id(s)] = (s, row.copy())       # the state is held, so its id is not reused
        return s

    def view(self, row) -> "Lazy":
        """The state of `row` as a property reads it, unpacked only when it reads past the
        controller value (Lazy); facts of it (`fact`) read the row itself."""
        v = Lazy(self, row)
        if len(self._rows) >= 4096:
            self._rows.clear()
        self._rows[id(v)] = (v, v._row)
        return v

    def label(self, code) -> tuple:
        """The model's label of a kernel label (five ints)."""
        action, p0, p1, p2, prefer = (int(v) for v in code)
        ids = self.layout.universe
        name = A.ACTION_NAMES[action]
        if name in ("produce", "advance_hwm", "deliver_alter_partition", "periodic_unclean_election",
                    "periodic_preferred_election"):
            params: tuple = ()
        elif name == "shrink_isr":
            params = (ids[p0], tuple(ids[i] for i in range(len(ids)) if p1 >> i & 1))
        elif name == "crash_lossy":
            params = (ids[p0], p1)
        elif name == "elect":
            params = (ELECT_TYPES[p0], None if p1 < 0 else ids[p1])
        elif name == "set_min_isr":
            params = (p0,)
        elif name == "set_unclean":
            params = (bool(p0),)
        elif name == "reassign":
            params = (decode_brokers(ids, p0),)
        elif name == "unclean_recovery":
            params = (RECOVERY_STRATEGIES[p0],)
        elif name == "controlled_shutdown" and p1:
            params = (ids[p0], LEADS_ELSEWHERE)
        else:
            params = (ids[p0],)
        label = (name,) + params
        return label if prefer < 0 else label + ((ELECTED, ids[prefer]),)

    def code(self, label: tuple) -> np.ndarray:
        """The kernel label of a model label."""
        params, prefer = A.split_choice(label)
        name, index = label[0], _Index(self.layout)
        action = A.ACTION_NAMES.index(name)
        p = [0, 0, 0]
        if name == "shrink_isr":
            p[:2] = [index[params[0]], sum(1 << index[b] for b in params[1])]
        elif name == "crash_lossy":
            p[:2] = [index[params[0]], params[1]]
        elif name == "elect":
            p[:2] = [ELECT_TYPES.index(params[0]), -1 if params[1] is None else index[params[1]]]
        elif name in ("set_min_isr", "set_unclean"):
            p[0] = int(params[0])
        elif name == "reassign":
            p[0] = encode_brokers(index, params[0])
        elif name == "unclean_recovery":
            p[0] = RECOVERY_STRATEGIES.index(params[0] or self.cfg.rules.unclean_recovery_strategy or "balanced")
        elif params:
            p[0] = index[params[0]]
            p[1] = int(name == "controlled_shutdown" and LEADS_ELSEWHERE in params)
        return np.array([action, *p, -1 if prefer is None else index[prefer]], dtype=np.int64)

    # ---------------------------------------------------------------- the model's view
    def successor_rows(self, row, mode: int = BOUNDED, only: int = -1) -> int:
        """out[:n], labels[:n] := row's successors, filling the tables on the way: n."""
        while True:
            n = successors(row, self.layout.lay, self.cv, self.plan, self.table_args(), mode, only,
                           self.out, self.labels, self.key, self.work, self.params)
            if n != MISS:
                return n
            self.tables.fill(self.key)

    def successors(self, s, unbounded: bool = False, only: Optional[str] = None) -> list:
        """The model's (label, State) pairs of s."""
        only_id = -1 if only is None else A.ACTION_NAMES.index(only)
        n = self.successor_rows(self.pack(s), UNBOUNDED if unbounded else BOUNDED, only_id)
        return [(self.label(self.labels[k]), self.unpack(self.out[k])) for k in range(n)]

    def enabled(self, s, name: str) -> list[tuple]:
        """The parameter tuples the action's guard enables in s (budgets, bounds and
        self-loops aside)."""
        n = self.successor_rows(self.pack(s), GUARDS, A.ACTION_NAMES.index(name))
        return [self.label(self.labels[k])[1:] for k in range(n)]

    def fact(self, s, name: str, b: Optional[int] = None) -> bool:
        """A fact the properties ask (specs/kernel/mechanics.py), of s (and broker b)."""
        row = self.pack(s)
        facts = self.tables.facts[int(row[self.layout.ctrl])]
        if name == "within_tolerance":
            return bool(within_tolerance(row, self.layout.lay, facts))
        return bool(holds_committed_log(row, self.layout.lay, self.layout.index[b]))

    def install(self, s, out, revive: Optional[int] = None) -> tuple:
        """(s with the controller outcome `out` installed, its error): a raw request replay sent.
        `revive`: the broker a registration starts again, as restart does."""
        before = self.pack(s)
        row = before.copy()
        if revive is not None:
            revive_replica(row, self.layout.lay, self.layout.index[revive])
        outcome = np.array([self.tables.ctrl_id(out.ctrl), 0, int(bool(out.unclean_election)),
                            int(bool(out.operator_unclean)), int(bool(out.unclean_shutdown))], dtype=np.int64)
        after_controller(row, self.layout.lay, self.tables.facts, self.tables.facts[int(row[self.layout.ctrl])],
                         outcome)
        keep_promises(before, row, self.layout.lay, self.tables.facts)
        return self.unpack(row), out.error

    def step(self, s, label: tuple) -> tuple:
        """(the state after `label`, the error it was refused with or None); no guard checked."""
        row, code = self.pack(s), self.code(label)
        if label[0] in ("produce", "stale_produce") and max(len(r.log) for r in s.replicas) >= self.layout.cap:
            raise LogTooLong(self.layout.cap + 1)        # a row one entry longer, then again
        t = np.zeros_like(row)
        while apply(row, t, self.layout.lay, self.cv, self.plan, self.table_args(), code[0], code[1], code[2],
                    code[3], code[4], self.key, self.work) == MISS:
            self.tables.fill(self.key)
        refusal = int(self.work[-1])
        error = None if refusal == 0 else ERRORS[refusal] if refusal > 0 else self.tables.errors[-refusal - 1]
        return self.unpack(t), error


class Lazy:
    """A state read from its row only as far as it is read: its controller value (`ctrl`) is
    the table's, and any other field unpacks the row once. Why: most liveness premises and
    goals read only the partition, and unpacking a row is most of a state's cost in Python.
    `unpacked` says whether a read went past the controller: a pure function of the state that
    never did is a function of the controller value alone."""
    __slots__ = ("ctrl", "_k", "_row", "_s", "__weakref__")

    def __init__(self, k: Kernel, row):
        self._k, self._row, self._s = k, np.array(row), None
        self.ctrl = k.tables.ctrls[int(row[k.layout.ctrl])]

    @property
    def unpacked(self) -> bool:
        return self._s is not None

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if self._s is None:
            self._s = self._k.layout.unpack(self._row, self.ctrl)
        return getattr(self._s, name)


def unsupported(model, properties, symmetry: bool = False, knobs=None) -> Optional[str]:
    """Why the kernel cannot search `model` for `properties` (None: it can); every engine that
    runs the kernel asks this before it starts (the kernel engine, spark-check). `symmetry`:
    the engine reduces by symmetry on the kernel (a Kernel made `symmetric`). `knobs`: the
    compiled search's (verifier/engines/kernel.Knobs), the one engine that takes rows of several
    partitions (`rows_of`); the others refuse several."""
    from specs.kernel.layout import MAX_RECORDS
    from specs.kernel.properties import STATE, STEP
    if model.cfg.partitions > 1:
        why = _lifted_unsupported(model, knobs)
        if why:
            return f"partitions = {model.cfg.partitions}: {why}"
    if model.symmetric and not symmetry:
        return "this engine has no symmetry reduction on the kernel"
    for p in properties:
        if p.name not in STATE + STEP:
            return f"property {p.name} has no row form in specs/kernel/properties.py: the kernel cannot check it"
    if model.cfg.bounds.records > MAX_RECORDS:
        return f"records={model.cfg.bounds.records}: the kernel holds at most {MAX_RECORDS} records"
    try:
        Layout(model.cfg)
    except KernelUnsupported as exc:
        return f"the kernel cannot hold this config: {exc}"
    return None


def _lifted_unsupported(model, own) -> Optional[str]:
    """Why the compiled search cannot take this model of several partitions (None: it can)."""
    from specs.kernel.lifted_rows import MOST
    if own is None:
        return "several partitions are searched by `check`'s exhaustive search alone"
    if model.cfg.partitions > MOST:
        return f"the compiled search holds at most {MOST} partitions (a step's label packs each one's choice)"
    if own.threads > 1 or own.visited != "memory" or own.checkpoint is not None or own.resume_from is not None:
        return "the compiled search takes several partitions on one thread, in memory, without a checkpoint"
    return None


def rows_of(model):
    """The rows a compiled search of `model` runs on: a Kernel of its config, or for several
    partitions specs/kernel/lifted_rows.LiftedRows over a partition's kernel (its parts sorted
    with the model's symmetry: from partition 1 on where config changes make partition 0 unlike
    the others, as specs/partitions.canonical_but_first)."""
    if model.cfg.partitions == 1:
        return Kernel(model.cfg, symmetric=model.symmetric)
    from specs.kernel.lifted_rows import LiftedRows
    first = -1 if not model.symmetric else 1 if model.cfg.bounds.config_changes else 0
    return LiftedRows(model.one, model.partitions, first)


def kernel_of(cfg: Config, entries: int = 0) -> Kernel:
    """The config's kernel, made once (its tables grow as runs meet controller values), and
    made again when a log of `entries` would not fit its rows."""
    if cfg.partitions != 1:          # one partition's row: a step of several is specs/partitions.py's
        raise KernelUnsupported(f"partitions = {cfg.partitions}: the kernel holds one partition's row")
    k = cfg.memo.get("kernel")
    if k is None or entries > k.layout.cap:
        k = cfg.memo["kernel"] = Kernel(cfg, cap=max(entries, 0 if k is None else k.layout.cap))
    return k


def on_kernel(cfg: Config, fn: Callable):
    """fn(the config's kernel), with rows long enough for the logs fn meets (a scenario may start
    with logs longer than the records bound, and replay produce past it)."""
    k = kernel_of(cfg)
    while True:
        try:
            return fn(k)
        except LogTooLong as exc:
            k = kernel_of(cfg, exc.entries)


__all__ = ["Kernel", "KernelUnsupported", "PLAN", "kernel_of", "on_kernel", "rows_of", "unsupported"]
