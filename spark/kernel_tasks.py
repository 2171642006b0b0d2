"""spark-check's executors on the compiled kernel, in two stages (expand a level's chunks,
spark/expand.py; own a part of the next, here), over whole chunks of fixed-width rows
(spark/rows.py). With symmetry reduction the successors are their orbits' canonical rows
(specs/kernel/symmetry.py, as check's). The model's steps and
properties run compiled (specs/kernel, the rules every kernel search runs; spark/compiled.py
and spark/emit.py drive them).

Each Python worker keeps one kernel per run (`_side`): its controller tables fill as its tasks
meet new events, and a worker serves many tasks (Spark reuses its Python workers). A
controller value crosses processes as its JSON text (spark/rows.py says why), each text parsed
once per process; through the file exchange, as its digest, the text in the run's catalogue
(spark/catalogue.py).

The choices that make the counts and the counterexamples' lengths check's:
the least (parent fingerprint, n-th successor) of each state is its parent, whatever the
partitions, and a level's events are the least (fingerprint, n-th) of each property.
"""
from __future__ import annotations

import hashlib
import json
import time
import uuid
from typing import Optional

import numpy as np

from spark import compiled as X
from spark import emit as E
from spark import rows as R
from spark.catalogue import Catalogue, digest
from spark.exchange import blocks as exchanged
from spark.store import chunk_key, owner_of_key
from verifier.core import levels as L
from verifier.core import runs as V
from verifier.core.values import BadData, from_data, to_data

CHUNK = 100_000          # states per chunk of a level
BLOCK_SUCCESSORS = 0     # successors an expand task's open blocks hold in all (0: spark/emit.py's own)
_SIDES: dict = {}        # run token -> this process's _Side


class KernelJob:
    """What executors need for a run on the kernel (shipped with each task; the kernel itself
    is made once per Python worker, `_side`)."""

    def __init__(self, model, invariants: tuple, check_deadlock: bool, partitions: int):
        from specs.kernel.properties import STATE, STEP
        self.model_type, self.cfg, self.symmetry = type(model), model.cfg, model.symmetric
        self.invariants, self.check_deadlock, self.partitions = invariants, check_deadlock, partitions
        self.state_names = [p.name for p in invariants if p.kind == "state"]
        self.step_names = [p.name for p in invariants if p.kind == "step"]
        self.state_slots, self.step_slots = list(STATE), list(STEP)
        self.token = uuid.uuid4().hex
        self.squeeze = True      # the levels' chunks squeezed (spark/rows.py); spark/engine.py says when not
        self.links = False       # spark/chain.py's levels as links only (spark/engine.py says when)
        self.rows = False        # and beside them the chunks with their rows, for a store

    def model(self):
        return self.model_type(self.cfg, symmetry=self.symmetry)

    def owner(self, fp: int) -> int:
        """A state's owner: its fingerprint's low lane mod P."""
        return (fp & 0xFFFFFFFFFFFFFFFF) % self.partitions

    def roots(self, model) -> dict:
        """fingerprint -> (initial state, its canonical form), as levels.roots, by this path's
        fingerprints."""
        side = _side(self)
        out: dict = {}
        for s, c in L.roots(model).values():
            row = side.row_of(c)
            out.setdefault(R.as_int(*X.row_fp(row, side.ctrl, side.dig)), (s, c))
        return out

    def expand(self, found: frozenset, records, spill=None):
        from spark.expand import expand
        return expand(self, found, records, spill)

    def own(self, found: frozenset, part: int, items):
        return own(self, found, part, items)

    def seed(self, part: int, roots: list) -> list:
        return seed(self, part, roots)

    def link(self, chunks: list, fp: int) -> tuple:
        return find_link(self, chunks, fp)

    def with_lane(self, chunks: list, lane: int) -> list:
        return with_lane(self, chunks, lane)

    def merge(self, items):
        """An owner's visited runs ("F" entries) as one sorted run (spark/shuffled.py's compaction)."""
        return merge(items)

    def visited_of(self, key: str, data: bytes) -> tuple:
        """A stored chunk as its owner's visited-set entry (a resumed run rebuilds the set so)."""
        return owner_of_key(key), ("F", R.visited_blob(R.Rows(data, R.PART, links=True).fps))


class _Side:
    """One process's kernel for a run, and the controller values it has met as text."""

    def __init__(self, job: KernelJob):
        from specs.kernel import Kernel
        self.k = Kernel(job.cfg, symmetric=job.symmetry)
        self.types = job.model().value_types
        self.ctrl, self.width = self.k.layout.ctrl, self.k.layout.width
        self.ids: dict[str, int] = {}           # JSON text -> this process's controller id
        self.texts: list[str] = []              # controller id -> JSON text
        self.dig = np.zeros((0, 2), dtype=np.uint64)     # controller id -> its digest (two lanes)
        self._blocks = None
        self._catalogues: dict = {}         # a run's exchange root -> its spark/catalogue.Catalogue
        self.sync()

    def sync(self) -> None:
        """Texts and digests for the controller values the tables gained (fills, look-ups)."""
        ctrls = self.k.tables.ctrls
        if len(ctrls) == len(self.texts):
            return
        new = [json.dumps(to_data(c), separators=(",", ":")) for c in ctrls[len(self.texts):]]
        for text in new:
            self.ids.setdefault(text, len(self.texts))
            self.texts.append(text)
        raw = b"".join(digest(t.encode()) for t in new)
        self.dig = np.concatenate([self.dig, np.frombuffer(raw, "<u8").reshape(-1, 2).astype(np.uint64)])

    def local(self, texts: list) -> np.ndarray:
        """A record's controller table as this process's ids (BadData if a text is not one
        controller value in its own canonical form)."""
        out = np.empty(len(texts), dtype=np.int32)
        for i, text in enumerate(texts):
            cid = self.ids.get(text)
            if cid is None:
                try:
                    ctrl = from_data(json.loads(text), self.types)
                except (ValueError, RecursionError) as exc:
                    raise BadData(f"a record's controller value is not one: {exc}") from None
                if type(ctrl).__name__ != "Controller":
                    raise BadData("a record's controller value is not one")
                try:
                    cid = self.k.tables.ctrl_id(ctrl)
                except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
                    raise BadData(f"a record's controller value is not one the model can hold: {exc}") from None
                self.sync()
                if self.texts[cid] != text:
                    raise BadData("a record's controller value is not in its canonical form")
            out[i] = cid
        return out

    def catalogue(self, root: str):
        """This process's view of the catalogue of the exchange at `root`."""
        if root not in self._catalogues:
            self._catalogues[root] = Catalogue(root, self)
        return self._catalogues[root]

    def block_ids(self, block: R.Rows, root: Optional[str]) -> np.ndarray:
        """A block's controller table as this process's ids: its texts, or its digests looked
        up in the catalogue at `root` (BadData if there is none)."""
        if block.digests is None:
            return self.local(block.ctrls)
        if root is None:
            raise BadData("a block names its controller values by digest, and there is no catalogue")
        return self.catalogue(root).ids(block.digests)

    def read(self, data: bytes, magic: bytes) -> R.Rows:
        return R.Rows(data, magic, self.width, self.ctrl)

    def rows_of(self, rec: R.Rows) -> np.ndarray:
        """A record's rows with this process's controller ids."""
        rows = rec.rows
        if len(rows):
            rows[:, self.ctrl] = self.local(rec.ctrls)[rows[:, self.ctrl]]
        return rows

    def portable(self, rows: np.ndarray, fresh: bool = False) -> tuple:
        """(rows with record-local controller indices, the record's controller table); `fresh`
        rows are the caller's own copy, changed in place."""
        out = rows if fresh else np.array(rows)
        if not len(out):
            return out, []
        used = np.zeros(len(self.texts), dtype=np.bool_)
        X.mark_column(out, self.ctrl, used)
        ids = np.flatnonzero(used)
        texts = [self.texts[c] for c in ids]
        order = sorted(range(len(texts)), key=texts.__getitem__)     # by text: the same bytes in any process
        place = np.zeros(len(self.texts), dtype=np.int32)
        place[ids[order]] = np.arange(len(order), dtype=np.int32)
        X.remap_column(out, self.ctrl, place)
        return out, [texts[i] for i in order]

    def blocks(self, parts: int) -> E.Blocks:
        """The open blocks of this process's expand tasks (spark/emit.py), made once per worker."""
        if self._blocks is None or self._blocks.parts != parts:
            self._blocks = E.Blocks(parts, self.width, self.ctrl, self.k.max_successors, BLOCK_SUCCESSORS)
        return self._blocks

    def row_of(self, state) -> np.ndarray:
        row = np.array(self.k.pack(state))
        self.sync()
        return row


def _side(job: KernelJob) -> _Side:
    side = _SIDES.get(job.token)
    if side is None:
        _SIDES.clear()                   # one run at a time per worker: an old run's tables go
        side = _SIDES[job.token] = _Side(job)
    return side


def merge(items):
    part, run = None, np.zeros((0, 2), dtype=np.uint64)
    for key, value in items:
        if value[0] != "F":
            continue
        part, more = key, R.visited_of_blob(value[1])
        out = np.empty((len(run) + len(more), 2), dtype=np.uint64)
        V.merge_runs(run, more, out)
        run = out
    if part is not None:
        yield part, ("F", run.tobytes())


def _mask(names, slots, found) -> int:
    return sum(1 << slots.index(n) for n in names if n not in found)


def _least(events: dict, name: str, key: tuple) -> None:
    if name not in events or key[:2] < events[name][:2]:
        events[name] = key


def _slots(n: int) -> np.ndarray:
    """best_parents' table: int32 (a candidate's position + 1; a task holds fewer than 2**31),
    half the memory its random look-ups touch."""
    return np.zeros(1 << max(4, (2 * n - 1).bit_length()), dtype=np.int32)


# ---------------------------------------------------------------- the own stage

def own(job: KernelJob, found: frozenset, part: int, items, runs=()):
    """Own task `part`: from the blocks sent to it (("B", bytes), or ("X", exchange files of
    them)) and its visited runs (("F", bytes) entries, and `runs`, arrays mapped from files),
    the states it owns in the next level, as spark/tasks.own yields them."""
    start = time.perf_counter()
    side = _side(job)
    return _level_part(job, side, part, found, *new_rows(job, side, items, runs), start)


def new_rows(job: KernelJob, side: _Side, items, runs=(), catalogue: Optional[str] = None) -> tuple:
    """(fingerprints, parents, labels, rows with this process's controller ids, actions taken,
    the expand tasks' counts, the fingerprints sorted) of the states an owner's blocks hold
    that its visited runs do not, each with its least (parent, n-th). `catalogue`: the
    exchange's root, where blocks from files name their controller values."""
    blocks, stats, runs = [], [], list(runs)
    for _, value in items:
        tag = value[0]
        if tag == "S":
            stats.append(value[1:])
        elif tag == "F":
            runs.append(R.visited_of_blob(value[1]))
        elif tag == "B":
            blocks.append(side.read(value[1], R.BLOCK))
        elif tag == "X":
            blocks.extend(side.read(b, R.BLOCK) for name in value[1] for b in exchanged(name))
    if not blocks:
        none = np.zeros((0, 2), np.uint64)
        return none, none, np.zeros((0, R.LABEL), np.int32), np.zeros((0, side.width), np.int32), {}, stats, none
    # in the order of each block's first transition (its parent's fingerprint, n-th), unique in
    # a level: the shuffle and the exchange files bring blocks in any order, the chunks' bytes
    # must not depend on it (a retried task writes the same chunks)
    blocks.sort(key=lambda b: (int(b.parents[0, 0]), int(b.parents[0, 1]), int(b.nths[0])))
    fp = np.concatenate([b.fps for b in blocks])
    parents = np.concatenate([b.parents for b in blocks])
    nths = np.concatenate([b.nths for b in blocks])
    keep = np.zeros(len(fp), dtype=np.bool_)
    X.best_parents(fp, parents, nths, _slots(len(fp)), keep)
    by_fp = V.by_fp(fp, np.flatnonzero(keep))      # the visited runs are probed in fingerprint order
    for run in runs:
        V.drop_seen_sorted(fp, by_fp, keep, run)
    seen = fp[by_fp[keep[by_fp]]]                 # this level's visited run: sorted
    kept = np.flatnonzero(keep)                   # the level's rows in block order: read front to back
    starts = np.cumsum([0] + [b.n for b in blocks])
    bounds = np.searchsorted(kept, starts)
    rows = np.empty((len(kept), side.width), dtype=np.int32)
    labels = np.empty((len(kept), R.LABEL), dtype=np.int32)
    for b, block in enumerate(blocks):
        lo, hi = int(bounds[b]), int(bounds[b + 1])
        if hi > lo:
            at = np.arange(lo, hi, dtype=np.int64)
            sel = kept[lo:hi] - starts[b]
            block.rows_to(sel, at, rows)
            block.labels_to(sel, at, labels)
            X.remap_range(rows, lo, hi, side.ctrl, side.block_ids(block, catalogue))
    taken = np.bincount(labels[:, 0], minlength=len(job.model_type.action_names)) if len(kept) else []
    names = job.model_type.action_names
    return fp[kept], parents[kept], labels, rows, {names[a]: int(n) for a, n in enumerate(taken) if n}, stats, seen


def _level_part(job, side: _Side, part: int, found, fps, parents, labels, rows, taken: dict, stats: list,
                seen=None, start: float = 0.0, links: bool = False, rows_too: Optional[bool] = None):
    """Meta and the level's visited run (`seen`: its fingerprints sorted, else `fps` sorted)
    first, then the chunks, as tasks._level_part. A chunk's rows are in the order the owner
    read them (blocks in a fixed order, spark/kernel_tasks.own), the same in every attempt; the
    state properties are checked here, on the rows that are new, each one's least fingerprint.
    With `links` the chunks are links only (spark/rows.py), and with `rows_too` (default
    `job.rows`) each is followed by ("R", key, the same chunk with its rows, its measure) for a store to keep a
    while (spark/store.py)."""
    check = _mask(job.state_names, job.state_slots, found)
    rows_too = job.rows if rows_too is None else rows_too
    events: dict = {}
    if check and len(rows):
        first = np.full(len(job.state_slots), -1, dtype=np.int64)
        X.first_violations(rows, fps, side.k.layout.lay, side.k.tables.facts, check, first)
        for s in np.flatnonzero(first >= 0):
            _least(events, job.state_slots[s], (R.as_int(*fps[first[s]]), 0, None))
    out, metas = [], []
    for c, at in enumerate(range(0, max(1, len(rows)), CHUNK)):
        if at >= len(rows) and out:
            break
        key, piece = chunk_key(part, c), slice(at, at + CHUNK)
        whole = None
        if not links or rows_too:
            portable, ctrls = side.portable(rows[piece])
            whole = R.encode(R.PART, fps[piece], parents[piece], labels[piece], portable, side.ctrl, ctrls,
                             squeeze=job.squeeze)
        data = R.links(fps[piece], parents[piece], labels[piece], job.squeeze) if links else whole
        metas.append(_measure(key, fps[piece], data))
        out.append((key, data, (whole, _measure(key, fps[piece], whole)) if links and rows_too else None))
    yield part, ("M", (metas, taken, events, stats, round(time.perf_counter() - start, 3) if start else 0.0))
    yield part, ("F", R.visited_blob(fps) if seen is None else np.ascontiguousarray(seen, R.FP).tobytes())
    for key, data, kept in out:
        yield part, ("C", key, data)
        if kept is not None:
            yield part, ("R", key) + kept


def _measure(key: str, fps, data: bytes) -> list:
    """A chunk's manifest entry: [key, states, fingerprint sum, sha256 of its bytes]."""
    return [key, len(fps), f"{R.fp_sum(fps):x}", hashlib.sha256(data).hexdigest()]


def seed(job: KernelJob, part: int, roots: list) -> list:
    """Level 0's part `part` (made by the driver: the initial states are few), as own yields it."""
    side = _side(job)
    mine = [(fp, c) for fp, c in roots if job.owner(fp) == part]
    fps = np.array([(fp >> 64, fp & 0xFFFFFFFFFFFFFFFF) for fp, _ in mine], dtype=np.uint64).reshape(-1, 2)
    rows = np.array([side.row_of(c) for _, c in mine], dtype=np.int32).reshape(-1, side.width)
    parents = np.full((len(mine), 2), R.ROOT, dtype=np.uint64)
    labels = np.full((len(mine), R.LABEL), -1, dtype=np.int32)
    return list(_level_part(job, side, part, frozenset(), fps, parents, labels, rows, {}, []))


def find_link(job: KernelJob, chunks: list, fp: int) -> tuple:
    """(its parent's low lane, label) of the state `fp` among one owner's chunks of a level
    (spark/rows.links: a link keeps no more of its parent)."""
    side = _side(job)
    a, b = np.uint64(fp >> 64), np.uint64(fp & 0xFFFFFFFFFFFFFFFF)
    for _, data in chunks:
        rec = R.Rows(data, R.PART, side.width, links=True)
        at = np.flatnonzero((rec.fps[:, 0] == a) & (rec.fps[:, 1] == b))
        if len(at):
            i = int(at[0])
            return int(rec.parent_lanes[i]), side.k.label(rec.labels[i])
    raise LookupError(f"state {fp:x} is not in the level's chunks")


def with_lane(job: KernelJob, chunks: list, lane: int) -> list:
    """(fingerprint, its parent's low lane, label) of each state, in one owner's chunks of a
    level, whose low lane is `lane`: a link's parent (one, but for a chance of 2^-64 a state),
    with its own link, so a walk back reads each level once."""
    side, out = _side(job), []
    for _, data in chunks:
        rec = R.Rows(data, R.PART, side.width, links=True)
        for i in np.flatnonzero(rec.fps[:, 1] == np.uint64(lane)):
            out.append((R.as_int(*rec.fps[i]), int(rec.parent_lanes[i]), side.k.label(rec.labels[i])))
    return out
