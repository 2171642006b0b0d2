"""The compiled successor kernel: the model's steps and properties over fixed-width rows.

`Kernel(cfg)` holds one config's layout (layout.py), its controller tables (tables.py, filled
by the algebra) and the config vector; `successors(state)` gives the model's
(label, State) pairs through pack, the compiled rules and unpack, which is how tests hold
the kernel to `specs.actions.successors` state by state. The search engine over rows is
verifier/engines/kernel.
"""
from __future__ import annotations

import numpy as np

from specs import actions as A
from specs.actions.labels import ELECTED
from specs.config import BUDGETS, Config
from specs.kernel.actions import LABEL, MISS, N_ACTIONS
from specs.kernel.layout import KernelUnsupported, Layout
from specs.kernel.mechanics import config_vector
from specs.kernel.successors import FENCE_BUDGET, apply, successors
from specs.kernel.tables import ELECT_TYPES, Tables, decode_brokers, encode_brokers
from specs.rules import RECOVERY_STRATEGIES

if A.ACTION_NAMES != ("produce", "fetch", "advance_hwm", "shrink_isr", "expand_isr", "deliver_alter_partition",
                      "crash", "crash_lossy", "restart", "clean_shutdown", "fence", "unfence",
                      "controlled_shutdown", "elect", "set_min_isr", "set_unclean", "periodic_unclean_election",
                      "reassign", "unclean_recovery"):
    raise ImportError("specs/kernel: the declared actions changed; the kernel's action ids follow them")


def _plan() -> np.ndarray:
    """Per action: the budget it charges (an index of BUDGETS, -1 none, FENCE_BUDGET) and
    whether it elects, read from the declarations."""
    plan = np.zeros((N_ACTIONS, 2), dtype=np.int64)
    for k, action in enumerate(A.ACTIONS):
        if callable(action.budget):
            if action.name != "fence":
                raise ImportError(f"specs/kernel: action {action.name} has a budget the kernel does not know")
            plan[k, 0] = FENCE_BUDGET
        else:
            plan[k, 0] = -1 if action.budget is None else BUDGETS.index(action.budget)
        plan[k, 1] = int(action.elects)
    return plan


PLAN = _plan()


class Kernel:
    """One config's kernel: its layout, tables and buffers."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.layout = Layout(cfg)
        self.tables = Tables(cfg, self.layout)
        self.cv = config_vector(cfg)
        self.plan = PLAN
        self.max_successors = self._max_successors()
        self.out = np.zeros((self.max_successors, self.layout.width), dtype=np.int32)
        self.labels = np.zeros((self.max_successors, LABEL), dtype=np.int64)
        self.key = np.zeros(self.layout.key, dtype=np.int64)
        self.work = np.zeros(2 * self.layout.nb, dtype=np.int64)

    def _max_successors(self) -> int:
        nb, cap = self.layout.nb, self.layout.cap
        one = 2 ** nb + nb * (12 + cap) + nb * nb + 12
        return one * (nb + 1)

    def table_args(self):
        t = self.tables
        return t.keys, t.vals, t.used, t.facts

    # ---------------------------------------------------------------- State <-> row
    def pack(self, s) -> np.ndarray:
        return self.layout.pack(s, self.tables.ctrl_id(s.ctrl))

    def unpack(self, row):
        return self.layout.unpack(row, self.tables.ctrls[int(row[self.layout.ctrl])])

    def label(self, code) -> tuple:
        """The model's label of a kernel label (five ints)."""
        action, p0, p1, p2, prefer = (int(v) for v in code)
        ids = self.layout.brokers
        name = A.ACTION_NAMES[action]
        if name in ("produce", "advance_hwm", "deliver_alter_partition", "periodic_unclean_election"):
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
        else:
            params = (ids[p0],)
        label = (name,) + params
        return label if prefer < 0 else label + ((ELECTED, ids[prefer]),)

    def code(self, label: tuple) -> np.ndarray:
        """The kernel label of a model label."""
        params, prefer = A.split_choice(label)
        name, index = label[0], self.layout.index
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
        return np.array([action, *p, -1 if prefer is None else index[prefer]], dtype=np.int64)

    # ---------------------------------------------------------------- the model's view
    def successor_rows(self, row, unbounded: bool = False, only: int = -1) -> int:
        """out[:n], labels[:n] := row's successors, filling the tables on the way: n."""
        while True:
            n = successors(row, self.layout.lay, self.cv, self.plan, self.table_args(), unbounded, only,
                           self.out, self.labels, self.key, self.work)
            if n != MISS:
                return n
            self.tables.fill(self.key)

    def successors(self, s, unbounded: bool = False, only: str = None) -> list:
        """The model's (label, State) pairs of s, computed by the kernel."""
        only_id = -1 if only is None else A.ACTION_NAMES.index(only)
        n = self.successor_rows(self.pack(s), unbounded, only_id)
        return [(self.label(self.labels[k]), self.unpack(self.out[k])) for k in range(n)]

    def step(self, s, label: tuple):
        """The state after `label` (no guard checked), by the kernel."""
        row, code = self.pack(s), self.code(label)
        t = np.zeros_like(row)
        while apply(row, t, self.layout.lay, self.cv, self.plan, self.table_args(), code[0], code[1], code[2],
                    code[3], code[4], self.key) == MISS:
            self.tables.fill(self.key)
        return self.unpack(t)


__all__ = ["Kernel", "KernelUnsupported", "PLAN"]
