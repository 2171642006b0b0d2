"""The kernel path on a local master: each owner's visited runs and each level's chunks are
files in the run's exchange directory (spark/exchange.py), where Spark would hold them in its
JVM. Only the names of the successor files and each owner's meta go through Spark.

Why: through the JVM a level's chunks crossed from the owners' Python workers into the JVM's
cache and back to the next level's expand tasks, every owner's visited set crossed from the
JVM to its Python worker on every level, and merging the visited runs was a job of its own:
about half of a large level's time (BENCHMARKS.md, "Levels and visited runs as files"). Where
every executor runs on the driver's machine, files in the page cache do the same job without
the copies, and an owner maps its runs instead of holding them.

    levels/NNNNN/oPPPPP          owner P's chunks of level N, framed as the exchange's files
    levels/NNNNN/oPPPPP.rows     with a store, the same chunks with their rows (spark/store.py)
    levels/NNNNN/oPPPPP.meta     with a store, the owner's meta of the level, once both are made
    visited/oPPPPP-AAAAA-BBBBB   owner P's fingerprints of levels A to B, sorted, 16 bytes each

The own task that writes a level's run also merges the newest runs (the rule of
spark/shuffled.compact: while the newer holds at least half the older's states). The driver removes
the runs a merge replaced once the level is committed, so a retried task still finds the runs
its level started from; every file is written under a name of its own attempt and renamed, so
a retry replaces a first attempt's files with the same bytes. Without a --checkpoint-dir the
level files are the levels (`FileLevels`: a violation's trace is walked back through them,
and they hold only the links it reads, spark/rows.py); with one, each level also goes to the
store (one more job, reading these files) and its files go then. The jobs that make the
levels are spark/chain.py's.
"""
from __future__ import annotations

import json
import mmap
import os
import shutil

import numpy as np

from spark.exchange import blocks as framed
from spark.exchange import placed, room, write_framed
from spark.store import chunk_key

FP = np.dtype("<u8")


class Files:
    """A run's level and visited files (the plan an own task is sent: picklable, small)."""

    def __init__(self, root: str, partitions: int):
        self.root, self.n = root, partitions
        self.runs: list = [[] for _ in range(partitions)]     # per owner: [(first level, last level, states)]
        self.started = False                                  # whether the runs are files yet

    def level(self, level: int, owner: int) -> str:
        return os.path.join(self.root, "levels", f"{level:05d}", f"o{owner:05d}")

    def rows(self, level: int, owner: int) -> str:
        """Owner's chunks of a level with their rows, where its chunks are links (a store's)."""
        return self.level(level, owner) + ".rows"

    def note(self, level: int, owner: int) -> str:
        """Where an owner's task notes its part of a level as made (spark/chain.py)."""
        return self.level(level, owner) + ".meta"

    def run(self, owner: int, a: int, b: int) -> str:
        return os.path.join(self.root, "visited", f"o{owner:05d}-{a:05d}-{b:05d}")

    def chunks(self, level: int, owner: int, rows: bool = False) -> list:
        """Owner's chunks of a level as (key, bytes-like), in order (`rows`: those with rows)."""
        where = self.rows(level, owner) if rows else self.level(level, owner)
        return [(chunk_key(owner, c), data) for c, data in enumerate(framed(where))]

    def drop_level(self, level: int) -> None:
        shutil.rmtree(os.path.dirname(self.level(level, 0)), ignore_errors=True)

    def start(self, level: int, per_owner) -> None:
        """The runs as files, from each owner's fingerprints of levels 0 to `level` (sorted
        arrays; on the driver, which shares the executors' disk)."""
        for owner, fps in enumerate(per_owner):
            write_run(self.run(owner, 0, level), fps)
            self.runs[owner] = [(0, level, len(fps))]
        self.started = True

    def drop_replaced(self, owner: int, runs: list) -> None:
        """The plan's runs of `owner` that its task's merges replaced by `runs`, removed before
        the level's commit: only once the task's part of the level is noted as made (spark/chain.py),
        when no retry of the task reads them again. Why: the level whose merge rewrites the whole
        visited set (level 24 of the billion config) held the old runs beside the new until the
        commit, 13 GB more at the run's fullest (BENCHMARKS.md, "Merged runs go at once")."""
        for a, b, _ in set(map(tuple, self.runs[owner])) - set(map(tuple, runs)):
            try:
                os.unlink(self.run(owner, a, b))
            except FileNotFoundError:
                pass

    def settle(self, plans: list) -> None:
        """The runs after a committed level (each owner's, from its meta); the files the
        level's merges replaced are removed."""
        for owner, (old, new) in enumerate(zip(self.runs, plans)):
            for a, b, _ in set(map(tuple, old)) - set(map(tuple, new)):
                try:
                    os.unlink(self.run(owner, a, b))
                except FileNotFoundError:
                    pass
            self.runs[owner] = [tuple(r) for r in new]


def read_run(path: str) -> np.ndarray:
    """A run of fingerprints, mapped (its pages are the page cache's, not the worker's)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size % 16:
            raise RuntimeError(f"the visited run {path} is torn")
        if not size:
            return np.zeros((0, 2), dtype=FP)
        return np.frombuffer(mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ), FP).reshape(-1, 2)


def write_note(path: str, meta: tuple) -> None:
    """An owner's meta of a level, as JSON (data: read back by `read_note`, checked by use)."""
    with placed(path) as tmp, open(tmp, "w") as f:
        json.dump(meta, f)


def read_note(path: str) -> list:
    with open(path) as f:
        return json.load(f)


def write_run(path: str, fps: np.ndarray) -> None:
    room(os.path.dirname(path), fps.nbytes)         # the disk's budget (spark/exchange.py)
    with placed(path) as tmp, open(tmp, "wb") as f:
        if len(fps):
            f.write(np.ascontiguousarray(fps, FP))      # its buffer, not a copy


def _merged(files: Files, owner: int, older: tuple, newer: tuple) -> tuple:
    """One run of two adjacent ones, written straight to its file (a map, not the heap)."""
    from verifier.core.runs import merge_runs
    (a, _, m), (_, b, n) = older, newer
    path = files.run(owner, a, b)
    if m + n == 0:
        write_run(path, np.zeros((0, 2), dtype=FP))
        return a, b, 0
    room(os.path.dirname(path), 16 * (m + n))       # a map's write to a full disk is a SIGBUS, not an OSError
    with placed(path) as tmp:
        out = np.memmap(tmp, dtype=FP, mode="w+", shape=(m + n, 2))
        merge_runs(read_run(files.run(owner, *older[:2])), read_run(files.run(owner, *newer[:2])), out)
        del out                          # no flush: the page cache is what the readers map
    return a, b, m + n


def owned(files: Files, owner: int, level: int, parts):
    """An owner's part of a level in file mode: from what kernel_tasks._level_part yields
    (meta, the level's run, chunks, and the chunks with their rows where a store keeps them),
    the chunks to the level's file (and the others to its rows file) and the run to the
    owner's runs (merged as the rule says); yields only the meta, with the owner's runs and
    the rows chunks' measures after it."""
    meta = run = None
    chunks, whole, measured = [], [], []
    for _, value in parts:
        if value[0] == "M":
            meta = value[1]
        elif value[0] == "F":
            run = value[1]
        elif value[0] == "R":
            whole.append(value[2])
            measured.append(value[3])
        else:
            chunks.append(value[2])
    write_framed(files.level(level, owner), chunks)
    if whole:
        write_framed(files.rows(level, owner), whole)
    runs = list(files.runs[owner])
    write_run(files.run(owner, level, level), np.frombuffer(run, FP).reshape(-1, 2))
    runs.append((level, level, len(run) // 16))
    made = {runs[-1]}                     # this task's: the driver's plan does not name them
    while len(runs) >= 2 and 2 * runs[-1][2] >= runs[-2][2]:
        older, newer = runs[-2], runs[-1]
        runs[-2:] = [_merged(files, owner, older, newer)]
        for a, b, _ in made & {older, newer}:     # this task's, merged into a later one: gone at once
            os.unlink(files.run(owner, a, b))
        made = (made - {older, newer}) | {runs[-1]}
    yield owner, ("M", meta + (runs, measured))


class FileLevels:
    """The levels of a run without --checkpoint-dir on a local master: the level files
    (store.SparkLevels' counterpart; nothing to resume from)."""

    temporary = True

    def __init__(self, files: Files):
        self.files = files

    def write_local(self, level: int, per_owner: list) -> None:
        """A level the driver made stays on the driver (spark/explore.py holds it)."""

    def read_owner(self, level: int, owner: int) -> list:
        return [(key, bytes(data)) for key, data in self.files.chunks(level, owner)]

    def drop_from(self, level: int) -> None:
        where = os.path.join(self.files.root, "levels")
        for name in os.listdir(where) if os.path.isdir(where) else ():
            if name.isdigit() and int(name) >= level:
                self.files.drop_level(int(name))

    def close(self) -> None:
        """The exchange directory's close removes the files."""


def expand_only(run, found: frozenset, level: int) -> tuple:
    """One job expanding level `level` from the driver's chunks or (a resumed run's first
    level) the store, its blocks into the exchange: (level, block files per owner, the
    tasks' counts), as spark/chain.py's jobs leave it for the next."""
    job, n, sc = run.job, run.job.partitions, run.spark.sparkContext
    if not run.files.started:
        _start(run, level)
    if level in run.held:
        frontier = sc.parallelize([kv for chunks in run.held[level] for kv in chunks], n)
    else:                                                   # a resumed run's: its chunks with their rows
        frontier = run.levels.read(level, rows=bool(run.metas[level].get("links")))
    where = run.exchange.level(level + 1, run.metas[level]["states"])
    fallback, squeeze = run.exchange.fallback(level + 1), run.exchange.squeeze(level + 1)
    root = run.files.root              # the blocks' catalogue (spark/catalogue.py)
    try:
        out = frontier.mapPartitionsWithIndex(lambda i, it: job.expand(found, it, (where, i, fallback, squeeze, root))) \
            .collect()
    except BaseException:
        run.exchange.drop(level + 1)
        raise
    run.exchange.expanded(level + 1, run.metas[level]["states"])
    names: dict = {}
    for owner, value in out:
        if value[0] == "X":
            names.setdefault(owner, []).extend(value[1])
    return level, names, [value[1:] for _, value in out if value[0] == "S"]


def _start(run, level: int) -> None:
    """The runs as files, from the fingerprints of levels 0 to `level` held on the driver, or
    (a resumed run) in the visited RDD built from the store."""
    if run.held_visited is not None:
        run.files.start(level, [_one_run(blobs) for blobs in run.held_visited])
        run.held_visited = None
        return
    files = run.files
    sizes = dict(run.visited[0].mapPartitionsWithIndex(lambda i, it: _resumed_run(files, i, level, it)).collect())
    files.runs = [[(0, level, sizes.get(p, 0))] for p in range(files.n)]
    files.started = True
    run.release()


def _resumed_run(files: Files, owner: int, level: int, items):
    fps = _one_run([v[1] for _, v in items if v[0] == "F"])
    write_run(files.run(owner, 0, level), fps)
    yield owner, len(fps)


def _one_run(blobs: list) -> np.ndarray:
    """Visited entries (blobs of fingerprints) as one sorted run."""
    from spark.rows import visited_of_blob
    fps = np.concatenate([visited_of_blob(b) for b in blobs] or [np.zeros((0, 2), FP)])
    return fps[np.lexsort((fps[:, 1], fps[:, 0]))]
