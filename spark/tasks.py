"""What spark-check's executors run: expand a part of a level, and own a part of the next.

A state's owner is `fingerprint mod P` (P partitions, fixed for the run). Per level one Spark
job does two things:

1. **expand** (task i reads part i of the level): every successor of every state, the step
   invariants on every transition, deadlocks; successors are deduplicated within the task
   (the smallest (parent fingerprint, n-th successor) wins, as in the local parallel search)
   and shipped to their owners as a few large blocks (spark/records.py: data, never a pickle),
   never one row per state;
2. **own** (task p, after the shuffle): the best parent of each fingerprint it owns, minus
   the fingerprints of every earlier level (read from its own part files, fingerprints only),
   the state invariants on the states that are new, and the new part file of the next level.

The JVM moves opaque bytes only: no Row conversion, no per-state pickling across Py4J.
"""
from __future__ import annotations

import hashlib
import os
from collections import Counter
from pathlib import Path

from spark.records import BLOCK as BLOCK_MAGIC
from spark.records import PART, Record, encode, measure
from verifier.codec import codec_of, pack, pack_ids, unpack
from verifier.files import write_atomic
from verifier.result import DEADLOCK
from verifier.values import BadData

CHUNK = 100_000          # successors an expand task holds before it ships a block to each owner
BLOCK, STATS = 0, 1


# ---------------------------------------------------------------- part files

def write_part(path: Path, fps: list, parents: list, labels: list, states: list) -> tuple[int, int, str]:
    """One owner's states of one level (spark/records.py: data, no pickle), written under a
    temporary name, fsynced and renamed, so a part file is whole or absent. Returns (states,
    sum of fingerprints, sha256)."""
    data = encode(PART, fps, parents, labels, pack(states))
    write_atomic(path, data)
    return len(fps), sum(fps), hashlib.sha256(data).hexdigest()


def read_part(path: Path, types) -> Record:
    """A part file, read back through the model's value types (`Model.value_types`)."""
    return Record(Path(path).read_bytes(), PART, types)


def measure_part(path: Path) -> tuple[int, int, str] | None:
    """(states, fingerprint sum, sha256) of a part file on disk; None if it is missing or torn."""
    try:
        data = path.read_bytes()
        rec = Record(data, PART, {})
        rec.keys()
        return measure(data)
    except (OSError, BadData, ValueError):        # unreadable: torn, truncated or overwritten
        return None


def find_link(path: Path, fp: int) -> tuple[int, object]:
    """(parent fingerprint, label) of the state `fp` in a part file (a counterexample's step)."""
    fps, parents, _, labels = read_part(path, {}).keys()
    i = fps.index(fp)
    return parents[i], labels[i]


# ---------------------------------------------------------------- the expand stage

class Job:
    """What executors need, shipped once per task (a Config pickles without its memo)."""

    def __init__(self, cfg, symmetry: bool, invariants: tuple, check_deadlock: bool, partitions: int):
        self.cfg, self.symmetry, self.invariants = cfg, symmetry, invariants
        self.check_deadlock, self.partitions = check_deadlock, partitions

    def model(self):
        from specs import Model
        return Model(self.cfg, symmetry=self.symmetry)


def expand(job: Job, found: frozenset, path: Path, part: int):
    """Task `part` of the expand stage: yields (owner, (BLOCK, block bytes)) per owner and chunk,
    then (0, (STATS, counts, events)) for the driver."""
    model = job.model()
    cfg, canonical, n = job.cfg, model.canonical, job.partitions
    step_invs = [inv for inv in job.invariants if inv.kind == "step" and inv.name not in found]
    transitions, terminal, stuck = 0, 0, 0
    enabled: Counter = Counter()
    events: dict = {}
    best: dict[int, tuple] = {}          # successor fp -> (parent fp, n-th successor, label, field ids)
    part = read_part(path, model.value_types)     # every level has all P parts, empty or not
    fps = part.fps
    codec, rows = codec_of(part.packed())         # the part's states as field ids (verifier/codec.py)
    for fp, held in zip(fps, rows):
        s = codec.decode(held)
        nth = 0
        for label, t in model.successors(s):
            nth += 1
            transitions += 1
            enabled[label[0]] += 1
            for inv in step_invs:
                if not inv.check(cfg, s, label, t):
                    key = (fp, nth, label)
                    if inv.name not in events or key[:2] < events[inv.name][:2]:
                        events[inv.name] = key
            ids, fp2 = codec.child(canonical(t) if canonical else t, s, held, fp)
            old = best.get(fp2)
            if old is None or (fp, nth) < old[:2]:
                best[fp2] = (fp, nth, label, ids)
        if nth == 0:
            if job.check_deadlock and DEADLOCK not in found and model.stuck(s):
                stuck += 1
                key = (fp, 0, None)
                if DEADLOCK not in events or key[:2] < events[DEADLOCK][:2]:
                    events[DEADLOCK] = key
            else:
                terminal += 1
        if len(best) >= CHUNK:
            yield from _ship(best, n, codec)
            best = {}
    yield from _ship(best, n, codec)
    yield 0, (STATS, (transitions, dict(enabled), terminal, stuck), events)


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
            yield owner, (BLOCK, data)


def expand_to_inbox(job: Job, found: frozenset, path: Path, part: int, inbox: Path) -> tuple:
    """Task `part` of the expand stage on Spark: the blocks go to the owners' inboxes in the
    level's directory (written whole: temporary name, then rename), not through Spark's
    shuffle, whose JVM-side copying, sorting and streaming took a third of the CPU of a run.
    Returns the (counts, events) for the driver. A retried task writes the same files."""
    chunk = 0
    stats = None
    for owner, value in expand(job, found, path, part):
        if value[0] == STATS:
            stats = value[1:]
            continue
        box = inbox / f"to-{owner:05d}"
        box.mkdir(parents=True, exist_ok=True)
        target = box / f"from-{part:05d}-{chunk:06d}"
        tmp = box / f".{target.name}.tmp-{os.getpid()}"
        with open(tmp, "wb") as fh:
            fh.write(value[1])
        os.replace(tmp, target)
        chunk += 1
    return stats


def read_inbox(inbox: Path, owner: int):
    """The blocks sent to `owner`, as expand yields them (in file name order)."""
    box = inbox / f"to-{owner:05d}"
    for path in sorted(box.glob("from-*")) if box.exists() else ():
        yield owner, (BLOCK, path.read_bytes())


# ---------------------------------------------------------------- the own stage

def own(job: Job, found: frozenset, level_dirs: list[Path], part: int, items):
    """Task `part` of the own stage for level len(level_dirs): the new states it owns, written
    to its part file. Yields one tuple: (part meta, taken, state events, [expand stats])."""
    blocks, stats = [], []
    types = job.model().value_types
    best: dict[int, tuple] = {}          # fp -> (parent fp, n-th, block, position)
    for _, value in items:
        if value[0] == STATS:
            stats.append(value[1:])
            continue
        b = len(blocks)
        block = Record(value[1], BLOCK_MAGIC, types)
        fps, parents, nths, labels = block.keys()
        blocks.append((labels, block))
        for i, (fp, parent, nth) in enumerate(zip(fps, parents, nths)):
            old = best.get(fp)
            if old is None or (parent, nth) < old[:2]:
                best[fp] = (parent, nth, b, i)
    for directory in level_dirs[:-1]:    # every earlier level's fingerprints that this task owns
        path = directory / f"part-{part:05d}"
        if best:
            for fp in best.keys() & set(read_part(path, types).fps):
                del best[fp]
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
    meta = write_part(level_dirs[-1] / f"part-{part:05d}", out_fps, out_parents, out_labels, out_states)
    yield meta, dict(taken), events, stats


def seed(job: Job, directory: Path, part: int, roots: list) -> tuple:
    """Level 0's part file `part` (written by the driver: the initial states are few)."""
    cfg = job.cfg
    mine = [(fp, s) for fp, s in roots if fp % job.partitions == part]
    events: dict = {}
    for fp, s in mine:
        for inv in job.invariants:
            if inv.kind == "state" and not inv.check(cfg, s):
                if inv.name not in events or fp < events[inv.name][0]:
                    events[inv.name] = (fp, 0, None)
    meta = write_part(directory / f"part-{part:05d}", [fp for fp, _ in mine], [None] * len(mine),
                      [None] * len(mine), [s for _, s in mine])
    return meta, events
