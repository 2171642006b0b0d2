"""A counterexample of `check --visited disk` (external.py), rebuilt from the links on disk: the
search keeps no labels, only each state's parent (its place in the level before) and its place
among the parent's successors, so the labels are found again by running the model forward from
the root along those places (levels.rebuild then checks the run as it checks every trace)."""
from __future__ import annotations

import bisect


def path(search, index: int) -> tuple[int, list]:
    """The root and labels of state `index`: its links back to a root, then the model run
    forward along them."""
    places, starts = [], search.starts
    level = bisect.bisect_right(starts, index) - 1
    while level > 0:
        parent, place = search.files.link(level, index - starts[level])
        places.append(place)
        index = starts[level - 1] + parent
        level -= 1
    return index, labels_along(search, search.root_rows[index], places[::-1])


def labels_along(search, row, places: list) -> list:
    """The labels of the steps from `row` that take the successor at each place in turn, the
    successors made as the search made them (canonical, when symmetric)."""
    from specs.kernel.events import MISS
    from specs.kernel.properties import steps_then_canonical
    k, labels = search.k, []
    for place in places:
        n = MISS
        while n == MISS:
            n = k.successor_rows(row)
            if k.reduce is not None:
                n = steps_then_canonical(row, k.out, k.labels, n, k.layout.lay, k.cv, k.table_args(), k.key,
                                         k.work, search.step_check, k.step_bad, 0)
                if n == MISS:
                    k.tables.fill(k.key)
        labels.append(k.label(k.labels[place]))
        row = k.out[place].copy()
    return labels
