"""The compiled search over rows of several partitions (issue 59): what verifier/engines/kernel's
loop asks of a row besides its successors (specs/kernel/lifted.py), in the lifted model's terms
(specs/partitions.py):
- a state property holds in every part (`violations`), as `lift_property` judges it;
- a step property holds in every partition that took a step, judged with that partition's own
  action (a lossy crash's fallback is a crash there; a partition that took none is not judged):
  `step_bad`, read off the label's packing (lifted.py);
- identical partitions are interchangeable: a successor's parts are sorted (`sort_parts`) by
  their content, the controller's value read as its digest (tables.F_CONTENT) and not as its
  id, so the order does not depend on the order a run met the values in. specs/partitions.py's
  `canonical` sorts a Python state by the same key (`part_key`), so a counterexample found on
  rows replays through the model state for state.
`LiftedRows` gives the search what it reads of a Kernel (its layout's width, buffers, tables,
packing and labels) for such rows.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from specs.kernel.layout import L_CTRL
from specs.kernel.lifted import EACH, FELL_BACK, NONE
from specs.kernel.properties import state_violations, step_verdict
from specs.kernel.successors import CRASH, LABEL
from specs.kernel.tables import F_CONTENT

MOST = 6       # parts a stored label holds: lifted.py packs 5 bits of p1 a part into an int32


@njit(cache=True, _nrt=False)
def violations(t, parts, lay, facts, check):
    """The state properties in `check` some part of t violates."""
    w = len(t) // parts
    bad = 0
    for p in range(parts):
        bad |= state_violations(t[p * w:(p + 1) * w], lay, facts, check & ~bad)
    return bad


@njit(cache=True, _nrt=False)
def step_bad(row, label, t, parts, lay, facts, check):
    """The step properties in `check` that some partition's own step of row -label-> t violates."""
    w = len(row) // parts
    p2 = label[3]
    bad = 0
    for q in range(parts):
        action = label[0]
        if EACH <= p2:
            variant = (p2 >> (2 * q)) & 3
            if variant == NONE:
                continue
            if variant == FELL_BACK:
                action = CRASH
        elif 0 < p2 and p2 - 1 != q:
            continue
        bad |= step_verdict(row[q * w:(q + 1) * w], action, t[q * w:(q + 1) * w], lay, facts, check & ~bad)
    return bad


@njit(cache=True, inline="always", _nrt=False)
def _compare(t, a, b, w, ctrl, facts):
    """-1, 0 or 1: part a of t against part b, column by column, the controller's value by its digest."""
    for k in range(w):
        x, y = np.int64(t[a * w + k]), np.int64(t[b * w + k])
        if k == ctrl:
            x, y = facts[x, F_CONTENT], facts[y, F_CONTENT]
        if x != y:
            return -1 if x < y else 1
    return 0


@njit(cache=True, _nrt=False)
def sort_parts(t, parts, lay, facts, first):
    """t's parts from `first` on in increasing order (`_compare`), in place."""
    w, ctrl = len(t) // parts, lay[L_CTRL]
    for i in range(first + 1, parts):
        j = i
        while j > first and _compare(t, j - 1, j, w, ctrl, facts) > 0:
            for k in range(w):
                t[(j - 1) * w + k], t[j * w + k] = t[j * w + k], t[(j - 1) * w + k]
            j -= 1


@njit(cache=True, _nrt=False)
def judge_then_sort(row, out, labels, n, parts, lay, facts, step_check, bad, first):
    """bad[k] := the step properties in `step_check` that row -labels[k]-> out[k] violates, then
    (first >= 0) each out[k]'s parts sorted from `first` on: a step is judged before its parts
    move, as a broker renaming's is (properties.steps_then_canonical)."""
    for k in range(n):
        bad[k] = step_bad(row, labels[k], out[k], parts, lay, facts, step_check) if step_check else 0
        if first >= 0:
            sort_parts(out[k], parts, lay, facts, first)


def part_key(k, part) -> tuple:
    """The key `sort_parts` orders a partition's `State` by: its row on kernel k, the
    controller's value as its digest (specs/partitions.canonical sorts by it)."""
    row = k.pack(part).tolist()
    row[k.layout.lay[L_CTRL]] = int(k.tables.facts[row[k.layout.lay[L_CTRL]], F_CONTENT])
    return tuple(row)


class _Layout:
    """A lifted row's layout as the search reads it: its width; `lay` is a part's."""

    def __init__(self, part, parts: int):
        self.width, self.lay, self.nb, self.universe = part.width * parts, part.lay, part.nb, part.universe


class LiftedRows:
    """What the compiled search reads of a Kernel, for rows of `parts` partitions of the
    one-partition config `one`: its buffers, tables, packing and labels (the join's own,
    specs/kernel/lift.LiftedKernel's), and `lifted`, the arguments its loop passes
    lifted.lifted_successors and the judging above. `first`: the part the sort starts at (-1:
    no sort; 1: partition 0 stays, specs/partitions.canonical_but_first)."""

    def __init__(self, one, parts: int, first: int):
        from specs.kernel.lift import LiftedKernel
        if not 2 <= parts <= MOST:
            raise ValueError(f"partitions: {parts}; the compiled search holds 2 to {MOST}")
        self.join = LiftedKernel(one, parts)
        self.k, self.parts, self.first = self.join.k, parts, first
        self.layout = _Layout(self.k.layout, parts)
        self.tables, self.cv, self.plan = self.k.tables, self.k.cv, self.k.plan
        self.key, self.work, self.params = self.k.key, self.k.work, self.k.params
        self.reduce = True                # the loop judges every step before any sort (judge_then_sort)
        self.pack, self.label = self.join.pack, self.join.label
        self.size(16 * self.k.max_successors)

    def size(self, rows: int) -> None:
        """Room for `rows` successors of a state (the loop asks for more when a state has more)."""
        self.max_successors = rows
        self.out = np.zeros((rows, self.layout.width), dtype=np.int32)
        self.labels = np.zeros((rows, LABEL), dtype=np.int64)
        self.step_bad = np.zeros(rows, dtype=np.int64)

    @property
    def lifted(self) -> tuple:
        j = self.join
        return (self.parts, j.kind, j.sub, j.sub_labels, j.scratch, self.first, j.index)

    def table_args(self):
        return self.k.table_args()
