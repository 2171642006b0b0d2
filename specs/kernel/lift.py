"""The compiled join of several partitions (specs/kernel/lifted.py) as the model's values: the
successors of a `Partitions` state (specs/partitions.py), with the same labels and in the same
order as specs/partitions.successors gives them, from one compiled call a state instead of one
kernel call per action and partition."""
from __future__ import annotations

import numpy as np

from specs import actions as A
from specs.kernel import kernel_of
from specs.kernel.events import MISS
from specs.kernel.lifted import EACH, FELL_BACK, FULL, NONE, kinds, lifted_successors, scratch_size
from specs.kernel.successors import BOUNDED, CRASH, LABEL, UNBOUNDED


class LiftedKernel:
    """`parts` partitions of a one-partition config `one` on the compiled kernel."""

    def __init__(self, one, parts: int):
        from specs import partitions as P
        self.k, self.parts = kernel_of(one), parts
        self.index = bool(one.bounds.config_changes)      # the ELR index across partitions: elr_index_rows.py
        self.kind = kinds(P.PER_PARTITION, P.WHERE_ENABLED, A.ACTION_NAMES)
        self._buffers(64 * self.k.max_successors)

    def _buffers(self, rows: int) -> None:
        k, parts = self.k, self.parts
        w, m1 = k.layout.width, k.max_successors
        self.out = np.zeros((rows, parts * w), dtype=np.int32)
        self.labels = np.zeros((rows, LABEL), dtype=np.int64)
        self.sub = np.zeros(((2 * parts + 1) * m1 + parts, w), dtype=np.int32)
        self.sub_labels = np.zeros(((2 * parts + 1) * m1, LABEL), dtype=np.int64)
        self.scratch = np.zeros(scratch_size(parts, m1), dtype=np.int64)

    def pack(self, s) -> np.ndarray:
        return np.concatenate([self.k.pack(part) for part in s])

    def unpack(self, row):
        from specs.partitions import Partitions
        w = self.k.layout.width
        return Partitions(*(self.k.unpack(row[p * w:(p + 1) * w]) for p in range(self.parts)))

    def successors(self, s, unbounded: bool = False) -> list:
        """The (label, Partitions) pairs of s, as specs/partitions.successors gives them."""
        n = self._run(s, unbounded)
        return [(self.label(self.labels[i]), self.unpack(self.out[i])) for i in range(n)]

    def labels_of_steps(self, s, unbounded: bool = False) -> list:
        """Only the labels (an unbounded step's state is not asked for: a produce beyond the
        rows' log is a step whose row is not written)."""
        return [self.label(self.labels[i]) for i in range(self._run(s, unbounded))]

    def _run(self, s, unbounded: bool) -> int:
        row, k = self.pack(s), self.k
        while True:
            n = lifted_successors(row, self.parts, k.layout.lay, k.cv, k.plan, k.table_args(),
                                  UNBOUNDED if unbounded else BOUNDED, -1, self.out, self.labels, k.key, k.work,
                                  k.params, self.kind, self.sub, self.sub_labels, self.scratch, self.index)
            if n == MISS:
                k.tables.fill(k.key)
            elif n == FULL:
                self._buffers(2 * len(self.out))
            else:
                return n

    def label(self, code) -> tuple:
        return lifted_label(self.k, self.parts, code)


def lifted_label(k, parts: int, code) -> tuple:
    """The lifted model's label of a compiled one (lifted.py's packing), on the one-partition kernel k."""
    action, p0, p1, p2, prefer = (int(v) for v in code)
    if p2 == 0:
        return k.label(code)
    if p2 < EACH:
        return k.label((action, p0, p1, 0, prefer)) + (("partition", p2 - 1),)
    each = []
    for q in range(parts):
        variant = (p2 >> (2 * q)) & 3
        mine_p1, mine_prefer = (p1 >> (5 * q)) & 31, ((prefer >> (4 * q)) & 15) - 1
        if variant == NONE:
            each.append(None)
        elif variant == FELL_BACK:
            each.append(k.label((CRASH, p0, 0, 0, mine_prefer)))
        else:
            each.append(k.label((action, p0, mine_p1, 0, mine_prefer)))
    return (A.ACTION_NAMES[action], ("each", tuple(each)))
