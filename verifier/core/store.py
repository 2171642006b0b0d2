"""The visited set and parent links of a sequential search: 128-bit fingerprints in a set,
and per state a parent index and the id of the action label that reached it, in two flat
arrays: all a counterexample needs (it is rebuilt by re-running the model along the path)."""
from __future__ import annotations

import sys
from array import array
from typing import Optional


class Labels(list):
    """Action labels held once each, by id (a state keeps the id of the label that reached it)."""

    def __init__(self, *first):
        super().__init__(first)
        self.ids: dict = {label: i for i, label in enumerate(first)}

    def id(self, label) -> int:
        i = self.ids.get(label)
        if i is None:
            i = self.ids[label] = len(self)
            self.append(label)
        return i


class Store:
    """Visited fingerprints plus parent links in flat arrays (about 100 bytes a state)."""

    def __init__(self, graph: bool):
        self.seen: set[int] | dict[int, int] = {} if graph else set()
        self.parent = array("q")
        self.via = array("I")
        self.labels = Labels(None)
        self.edges: Optional[list] = [] if graph else None

    def add(self, fp: int, parent: int, label) -> int:
        index = len(self.parent)
        if isinstance(self.seen, dict):
            self.seen[fp] = index
        else:
            self.seen.add(fp)
        self.parent.append(parent)
        self.via.append(self.labels.id(label))
        return index

    def path(self, index: int) -> tuple[int, list]:
        """(root index, labels from the root to `index`)."""
        labels = []
        while self.parent[index] >= 0:
            labels.append(self.labels[self.via[index]])
            index = self.parent[index]
        labels.reverse()
        return index, labels

    def __len__(self) -> int:
        return len(self.parent)

    def nbytes(self) -> int:
        """The set's table, one 128-bit int per key, and the two parallel arrays."""
        keys = sum(map(sys.getsizeof, self.seen))
        arrays = len(self.parent) * self.parent.itemsize + len(self.via) * self.via.itemsize
        return sys.getsizeof(self.seen) + keys + arrays
