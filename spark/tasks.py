"""What spark-check's executors run: expand a level's chunks, and own a part of the next.

A state's owner is `fingerprint mod P` (P partitions, fixed for the run). Per level:

1. **expand** (any task, any chunks of the level): every successor of every state, the step
   invariants on every transition, deadlocks; successors are deduplicated within the task
   (the smallest (parent fingerprint, n-th successor) wins, as in the local parallel search)
   and sent to their owners as a few large blocks (spark/records.py: data, never a pickle)
   through Spark's shuffle, never one row per state;
2. **own** (task p, after the shuffle, with owner p's visited fingerprints beside the blocks
   in the same partition): the best parent of each fingerprint it owns, minus every earlier
   level's, the state invariants on the states that are new, and owner p's chunks of the
   next level, sorted by fingerprint, so a task retried on another executor writes the same
   bytes.

Values in the RDDs are tagged tuples: ("B", block) and ("S", counts) go through the
shuffle; own yields ("M", its meta), ("F", fingerprints), then ("C", key, chunk)s.
"""
from __future__ import annotations

import hashlib
import time
from collections import Counter
from typing import Optional

from spark.records import BLOCK as BLOCK_MAGIC
from spark.records import PART, Record, drop_visited, encode, fps_of, visited_blob
from spark.store import chunk_key, owner_of_key
from verifier.core.codec import codec_of, pack, pack_ids, unpack
from verifier.core.levels import expand_states
from verifier.core.levels import roots as roots_of
from verifier.core.result import DEADLOCK

CHUNK = 100_000          # states per chunk of a level, and successors per block an expand task ships
SLICE = 4_096            # states an expand task expands between two looks at what it holds


def owner_of(key: int) -> int:
    """The shuffle's partition function: keys are owners already (one object, so every RDD
    partitioned by it has the same partitioner and a union of them stays aligned)."""
    return key


class Job:
    """What executors need, shipped once per task: the model's class and config (a Config
    pickles without its memo; the model is rebuilt there), the properties and the options."""

    def __init__(self, model, invariants: tuple, check_deadlock: bool, partitions: int):
        self.model_type, self.cfg, self.symmetry = type(model), model.cfg, model.symmetric
        self.invariants, self.check_deadlock, self.partitions = invariants, check_deadlock, partitions

    def model(self):
        return self.model_type(self.cfg, symmetry=self.symmetry)

    # the stages as spark/explore.py calls them, alike on both paths (spark/kernel_tasks.py)
    def owner(self, fp: int) -> int:
        return fp % self.partitions

    def roots(self, model) -> dict:
        return roots_of(model)

    def expand(self, found: frozenset, records):
        return expand(self, found, records)

    def own(self, found: frozenset, part: int, items):
        return own(self, found, part, items)

    def seed(self, part: int, roots: list) -> list:
        return seed(self, part, roots)

    def link(self, chunks: list, fp: int) -> tuple:
        return find_link(chunks, fp)

    def visited_of(self, key: str, data: bytes) -> tuple:
        return visited_of(key, data)

    merge = None        # its visited runs are not compacted (spark/explore.py)


# ---------------------------------------------------------------- chunks

def chunks_of(owner: int, fps: list, parents: list, labels: list, states: list) -> tuple[list, list]:
    """Owner's states of a level as chunks sorted by fingerprint: ([(key, bytes)], [[key, n,
    fingerprint sum (hex), sha256]])."""
    order = sorted(range(len(fps)), key=fps.__getitem__)
    out, metas = [], []
    for c, at in enumerate(range(0, max(1, len(order)), CHUNK)):
        rows = order[at:at + CHUNK]
        if not rows and out:
            break
        cf = [fps[i] for i in rows]
        data = encode(PART, cf, [parents[i] for i in rows], [labels[i] for i in rows], pack([states[i] for i in rows]))
        key = chunk_key(owner, c)
        out.append((key, data))
        metas.append([key, len(cf), f"{sum(cf):x}", hashlib.sha256(data).hexdigest()])
    return out, metas


def find_link(chunks: list, fp: int) -> tuple[int, object]:
    """(parent fingerprint, label) of the state `fp` among one owner's chunks of a level."""
    for _, data in chunks:
        fps, parents, _, labels = Record(bytes(data), PART, {}).keys()
        if fp in fps:
            i = fps.index(fp)
            return parents[i], labels[i]
    raise LookupError(f"state {fp:x} is not in the level's chunks")


def visited_of(key: str, data: bytes) -> tuple[int, tuple]:
    """A stored chunk as its owner's visited-set entry (a resumed run rebuilds the set so)."""
    return owner_of_key(key), ("F", visited_blob(fps_of(bytes(data))))


# ---------------------------------------------------------------- the expand stage

def expand(job: Job, found: frozenset, records):
    """An expand task over some chunks (key, bytes) of a level: yields (owner, ("B", block))
    per owner and batch of successors, then (0, ("S", counts, events)) for the driver."""
    start = time.perf_counter()
    model = job.model()
    n = job.partitions
    step_invs = [inv for inv in job.invariants if inv.kind == "step" and inv.name not in found]
    transitions, terminal, stuck = 0, 0, 0
    enabled: Counter = Counter()
    events: dict = {}
    best: dict[int, tuple] = {}          # successor fp -> (parent fp, n-th successor, label, field ids)
    skip_deadlock = not job.check_deadlock or DEADLOCK in found

    def keep(fp, nth, label, ids, fp2):
        old = best.get(fp2)
        if old is None or (fp, nth) < old[:2]:
            best[fp2] = (fp, nth, label, ids)
    for _, data in records:
        part = Record(bytes(data), PART, model.value_types)
        codec, rows = codec_of(part.packed())     # the chunk's states as field ids (verifier/core/codec.py)
        items = list(zip(part.fps, rows))
        for at in range(0, len(items), SLICE):    # ship about every CHUNK successors (a task's memory)
            t, te, st = expand_states(model, codec, items[at:at + SLICE], step_invs, skip_deadlock, enabled, events,
                                      (_event_key, _deadlock_key), keep)
            transitions, terminal, stuck = transitions + t, terminal + te - st, stuck + st
            if len(best) >= CHUNK:
                yield from _ship(best, n, codec)
                best.clear()
        if best:                          # a block never mixes two chunks' codecs
            yield from _ship(best, n, codec)
            best.clear()
    yield 0, ("S", (transitions, dict(enabled), terminal, stuck), events, round(time.perf_counter() - start, 3))


def _event_key(fp: int, nth: int, label) -> tuple:
    return fp, nth, label


def _deadlock_key(fp: int) -> tuple:
    return fp, 0, None


def _ship(best: dict, n: int, codec):
    """One block per owner (spark/records.py): the successors' fingerprints, parents, n-ths and
    labels, then their states as field tables (so an owner decodes only the states it keeps,
    and each distinct value once)."""
    per_owner: list[list] = [[] for _ in range(n)]
    for fp, entry in best.items():
        per_owner[fp % n].append((fp, entry))
    for owner, entries in enumerate(per_owner):
        if entries:
            data = encode(BLOCK_MAGIC, [fp for fp, _ in entries], [e[0] for _, e in entries],
                          [e[2] for _, e in entries], pack_ids(codec, [e[3] for _, e in entries]),
                          nths=[e[1] for _, e in entries])
            yield owner, ("B", data)


# ---------------------------------------------------------------- the own stage

def own(job: Job, found: frozenset, part: int, items):
    """Own task `part`: from the blocks sent to it and its visited fingerprints (one ("F",
    bytes) entry per earlier level or chunk), the states it owns in the next level. Yields
    (part, ("M", (chunk metas, taken, state events, [expand counts], seconds))), (part, ("F",
    fingerprints)), then (part, ("C", key, chunk)) per chunk.
    Entries tagged "M" among the items (a visited RDD keeps its level's meta) are ignored."""
    start = time.perf_counter()
    blocks, stats, visited = [], [], []
    types = job.model().value_types
    best: dict[int, tuple] = {}          # fp -> (parent fp, n-th, block, position)
    for _, value in items:
        tag = value[0]
        if tag == "S":
            stats.append(value[1:])
            continue
        if tag == "F":
            visited.append(value[1])
            continue
        if tag == "M":
            continue
        b = len(blocks)
        block = Record(bytes(value[1]), BLOCK_MAGIC, types)
        fps, parents, nths, labels = block.keys()
        blocks.append((labels, block))
        for i, (fp, parent, nth) in enumerate(zip(fps, parents, nths)):
            old = best.get(fp)
            if old is None or (parent, nth) < old[:2]:
                best[fp] = (parent, nth, b, i)
    drop_visited(best, visited)          # every earlier level's fingerprints that this task owns
    wanted: dict[int, list] = {}
    for fp, (_, _, b, i) in best.items():
        wanted.setdefault(b, []).append((i, fp))
    cfg = job.cfg
    state_invs = [inv for inv in job.invariants if inv.kind == "state" and inv.name not in found]
    out_fps, out_parents, out_labels, out_states = [], [], [], []
    taken: Counter = Counter()
    events: dict = {}
    for b in sorted(wanted):
        labels, block = blocks[b]
        rows = wanted[b]
        for (i, fp), s in zip(rows, unpack(block.packed(), [i for i, _ in rows])):
            label = labels[i]
            out_fps.append(fp)
            out_parents.append(best[fp][0])
            out_labels.append(label)
            out_states.append(s)
            taken[label[0]] += 1
            for inv in state_invs:
                if not inv.check(cfg, s):
                    if inv.name not in events or fp < events[inv.name][0]:
                        events[inv.name] = (fp, 0, None)
    yield from _level_part(part, out_fps, out_parents, out_labels, out_states, (dict(taken), events, stats), start)


def _level_part(part: int, fps: list, parents: list, labels: list, states: list, extra: tuple,
                start: Optional[float] = None):
    """Meta and fingerprints first: the driver's jobs that want them read two records of a
    partition, not its chunks. The meta ends with the task's seconds (`start`: when it began)."""
    chunks, metas = chunks_of(part, fps, parents, labels, states)
    yield part, ("M", (metas,) + extra + (round(time.perf_counter() - start, 3) if start else 0.0,))
    yield part, ("F", visited_blob(fps))
    for key, data in chunks:
        yield part, ("C", key, data)


def seed(job: Job, part: int, roots: list) -> list:
    """Level 0's part `part` (made by the driver: the initial states are few), as own yields it."""
    cfg = job.cfg
    mine = [(fp, s) for fp, s in roots if fp % job.partitions == part]
    events: dict = {}
    for fp, s in mine:
        for inv in job.invariants:
            if inv.kind == "state" and not inv.check(cfg, s):
                if inv.name not in events or fp < events[inv.name][0]:
                    events[inv.name] = (fp, 0, None)
    return list(_level_part(part, [fp for fp, _ in mine], [None] * len(mine), [None] * len(mine),
                            [s for _, s in mine], ({}, events, [])))
