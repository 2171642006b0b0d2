"""The controller's ELR index across several partitions (specs/partitions.py): where Kafka's
BrokersToElrs puts a partition's stale entries once they are removed (F5 in docs/FINDINGS.md)."""
from __future__ import annotations

from specs.state import State


def elr_index(before: tuple, after: tuple) -> tuple:
    """The controller's ELR index across partitions (BrokersToElrs, F5 in docs/FINDINGS.md).
    Each partition keeps the index entries a ClearElrRecord left (`cleared_elr`); Kafka keeps
    one array of partition ids per broker and topic, and `remove` of a partition listed c times
    (a stale entry and the real one) drops all c and leaves c - 1 slots of Java's default 0:
    entries for partition 0. So where broker x leaves partition p's ELR by a partition change
    (not a ClearElrRecord, which adds entries) and p > 0 still lists x, those entries become
    partition 0's."""
    if len(after) == 1:
        return after
    parts, moved = list(after), []
    for p in range(1, len(after)):
        was, now = before[p].ctrl.partition, after[p].ctrl.partition
        for x in sorted(set(was.elr) - set(now.elr)):
            c = now.cleared_elr.count(x)
            if c and c == was.cleared_elr.count(x):
                now = without_entries(now, x)
                moved += [x] * c
        if now is not after[p].ctrl.partition:
            parts[p] = _with_partition(parts[p], now)
    if moved:
        parts[0] = _with_partition(parts[0], with_entries(parts[0].ctrl.partition, moved))
    return type(after)(*parts)


def without_entries(partition, x: int):
    """The partition with none of broker x's stale index entries (`remove` dropped them all)."""
    return partition._replace(cleared_elr=tuple(e for e in partition.cleared_elr if e != x))


def with_entries(partition, brokers):
    """The partition with these stale index entries more (the slots `remove` left as partition 0's)."""
    return partition._replace(cleared_elr=tuple(sorted(partition.cleared_elr + tuple(brokers))))


def _with_partition(s: State, partition) -> State:
    return s._replace(ctrl=s.ctrl._replace(partition=partition))
