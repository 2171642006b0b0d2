"""spark-check's levels on a local master, one Spark job of one stage each: task i owns its
share of level L (from the blocks the last job's tasks wrote it, spark/exchange.py) and at
once expands those new states, from its own memory, into the blocks of level L + 1.

Why: with a job of two stages per level (expand L, then own L + 1), every level's chunks were
written by the owners, read back and widened by the next job's expand tasks, and each level
waited at two barriers for its slowest task. Chained, a level's rows go from the owner's
gather straight into the expansion; without a checkpoint its chunks hold only the links a
trace is walked back through (spark/rows.py, LINKS); with one, its squeezed chunks go to the
store as before (BENCHMARKS.md, "Levels chained").

The driver's decisions between levels stay its own (explore._Run's loop). A task expands level
L before the driver has seen L: that expansion's counts and blocks are kept for the next job
only if the driver goes on past L (no violation without --continue, no max states, budget or
signal), else they are dropped unread, so every count is the one the two-stage job gave. A
level at --max-depth is not expanded. The expansion of L checks the properties found before
the job, and the step properties and deadlock that the expansion of L - 1 found (what the
two-stage job of L would have been told).

Two levels' blocks are on the exchange at once, the job's input and its output. With a store
a task removes its input once its part of the level and that part's rows are files (with a
note of its meta beside them, from which a retried attempt starts instead); without one the
input stays until the job ends, for a retry to read again. The output's place (/dev/shm or
the disk, squeezed or not) is chosen from an estimate of L's states, since L is what the job
makes: the expansion of L - 1's successors times the share of the last level's successors
that were new.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import numpy as np

from spark.local_files import Files, owned, read_note, read_run, write_note


def task(job, found: frozenset, owner: int, names: list, files: Files, level: int, spill, rows: bool):
    """Task `owner` of level `level`: own its blocks (exchange files `names`) into the level's
    files and the owner's visited runs (with `rows`, its chunks with their rows too, for the
    store), then, with `spill` (where level + 1's blocks go, the directory to fall back to,
    whether to squeeze), expand the new rows. Yields (owner, (meta as local_files.owned makes
    it, (block files per owner, counts) or None))."""
    from spark.expand import expand_rows
    from spark.kernel_tasks import CHUNK, _level_part, _side, new_rows
    start = time.perf_counter()
    side = _side(job)
    done = files.note(level, owner)
    if rows and os.path.exists(done):     # a retry: the owner's part was made, its blocks are gone
        meta, pieces = _made(files, side, level, owner)
    else:
        runs = [read_run(files.run(owner, a, b)) for a, b, _ in files.runs[owner]]
        fps, parents, labels, made, taken, _, seen = new_rows(job, side, [(owner, ("X", names))], runs,
                                                               files.root)
        part = _level_part(job, side, owner, found, fps, parents, labels, made, taken, [], seen, start,
                           links=job.links, rows_too=rows)
        ((_, (_, meta)),) = owned(files, owner, level, part)
        del runs, seen                    # the plan's runs unmapped (a removed file's room comes back then)
        pieces = ((made[at:at + CHUNK], fps[at:at + CHUNK]) for at in range(0, len(made), CHUNK))
        if rows:                          # its part and its rows are files now: a retry starts from them
            write_note(done, meta)
            for name in names:            # room for the next level's blocks (the widest two levels' did not fit)
                os.unlink(name)
            files.drop_replaced(owner, meta[5])     # and the runs its merges replaced
    expansion = None
    if spill is not None:
        out = list(expand_rows(job, found, pieces, (spill[0], owner, spill[1], spill[2], files.root)))
        (stats,) = [v[1:] for _, v in out if v[0] == "S"]
        expansion = ({o: v[1] for o, v in out if v[0] == "X"}, stats)
    yield owner, (meta, expansion)


def _made(files: Files, side, level: int, owner: int) -> tuple:
    """The meta and rows an earlier attempt of this task left (its own part of the level)."""
    from spark import rows as R
    metas, taken, events, stats, seconds, runs, measured = read_note(files.note(level, owner))
    events = {name: tuple(key) for name, key in events.items()}     # as the driver merges them
    meta = (metas, taken, events, stats, seconds, [tuple(r) for r in runs], measured)
    recs = [side.read(data, R.PART) for _, data in files.chunks(level, owner, rows=True)]
    return meta, ((side.rows_of(rec), np.array(rec.fps)) for rec in recs)


def level(run, found: frozenset, level: int) -> list:
    """explore._Run._expand's job on a local master: own level + 1 from the blocks of
    expanding `level` (made by the last job, or now by an expand-only job: the first level on
    Spark, a resumed run's) and expand it for the next job. Returns each owner's (chunk
    metas, taken, events, the counts of expanding `level`, seconds, runs)."""
    from spark.exchange import free
    from spark.local_files import expand_only
    job, n, sc, files, exchange = run.job, run.job.partitions, run.spark.sparkContext, run.files, run.exchange
    pending, run.pending = run.pending, None
    if pending is None or pending[0] != level:
        pending = expand_only(run, found, level)
    _, names, stats = pending
    found = found | {name for stat in stats for name in stat[1]}
    nxt, spill = level + 2, None
    if run.limits.max_depth is None or level + 1 < run.limits.max_depth:
        where = exchange.level(nxt, _estimate(run, level, stats))
        spill = (where, exchange.fallback(nxt), exchange.squeeze(nxt))
    # the level's rows go to the store only every --checkpoint-every seconds (spark/store.py;
    # which levels: `due`); the tasks make them then, and only with them remove their input as they go (a
    # retry's source): also when the disk is short of room for the next level's blocks beside this one's
    started = time.monotonic()
    rows_due = job.rows and due(started, run.rows_at, run.last_job, run.rows_every)
    rows_made = rows_due or (job.rows and spill is not None and spill[2])
    try:
        outs = [v for _, v in sc.parallelize(range(n), n).mapPartitionsWithIndex(
            lambda i, _: task(job, found, i, names.get(i, []), files, level + 1, spill, rows_made)).collect()]
    except BaseException:
        run.failed_free = free(exchange.root)      # before its blocks go: a full disk, if a worker only crashed
        exchange.drop(nxt)
        raise
    finally:
        exchange.drop(level + 1)
    run.last_job = time.monotonic() - started
    metas = [list(meta) for meta, _ in outs]
    metas[0][3] = stats                  # the counts of expanding `level`, once (m[5]: runs, m[6]: rows chunks)
    if not rows_due:                     # rows made for room only: the store does not keep them
        for m in metas:
            m[6] = []
    if spill is not None:
        merged: dict = {}
        for _, (per_owner, _) in outs:
            for o, more in per_owner.items():
                merged.setdefault(o, []).extend(more)
        run.pending = (level + 1, merged, [stat for _, (_, stat) in outs])
        exchange.expanded(nxt, sum(c[1] for m in metas for c in m[0]))
    if run.store is not None:      # the store holds every level; the files were only its way there
        run.settle()               # the last level's copy ran beside this job: its manifest now

        if rows_due:
            run.rows_at = time.monotonic()

        def copy(made=level + 1) -> None:
            for rows in (False, True) if rows_due else (False,):
                run.levels.copy(made, lambda p: files.chunks(made, p, rows), files.root, rows=rows)
            files.drop_level(made)
        run.copying.start(level + 1, copy)
    files.settle([m[5] for m in metas])
    return [tuple(m) for m in metas]


def due(now: float, rows_at: Optional[float], last_job: float, every: float) -> bool:
    """Whether the level a job starting `now` makes keeps its rows in the store: the first level
    on Spark, then each whose job would end `every` seconds or more after the last rows were
    kept (the job guessed as long as the one before). Decided as a job starts, so a level that
    would end past the mark keeps them: a kill goes back at most about the interval and one
    level. On the time at the start alone a deep level (ten minutes) begun just short of the
    mark kept none, and a kill went back the interval and two levels (BENCHMARKS.md, "The
    billion config on HDFS, part 2": 45 minutes)."""
    return rows_at is None or now - rows_at + last_job >= every


def _estimate(run, level: int, stats: list) -> int:
    """Level + 1's states, before the job that makes them: the successors of `level` times the
    share of level's own predecessors' successors that were new."""
    successors = sum(stat[0][0] for stat in stats)
    if level >= 1:
        before = run.metas[level]["totals"]["transitions"] - run.metas[level - 1]["totals"]["transitions"]
        if before > 0:
            return successors * run.metas[level]["states"] // before
    return successors // 2


class Copying:
    """A level's copy to the store (spark/store.HadoopLevels.copy), made on a thread of the
    driver while the next level's job runs: where the DataNodes are other machines the copy
    mostly waits on them, and the job need not wait for it. (On this machine, whose DataNode
    shares the two cores with the tasks, it measured no faster: 122.1 s before and 122.4 s
    after, the billion config to depth 13, within the drift between runs.) The level
    counts (the manifest names it) only once its copy is whole: explore._Run.settle saves the
    manifest the level's commit held back, before the next copy starts and before any result,
    so a run killed meanwhile resumes from the level before, as it would have."""

    def __init__(self):
        self._pool: Optional[ThreadPoolExecutor] = None
        self._pending: Optional[tuple] = None      # (level, its copy's future)

    def level(self) -> Optional[int]:
        """The level being copied, if any."""
        return self._pending[0] if self._pending else None

    def start(self, level: int, work) -> None:
        if self._pending is not None:
            raise RuntimeError(f"level {self._pending[0]}'s copy was never settled")
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="kraft-verify-store-copy")
        self._pending = (level, self._pool.submit(work))

    def wait(self) -> None:
        """The pending copy done (its error raised here)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending[1].result()

    def abandon(self) -> None:
        """The run failed: wait for the copy (it must not outlive the JVM it uses), whatever it gave."""
        try:
            self.wait()
        except Exception:                  # the run's own error is the one to report
            pass
        if self._pool is not None:
            self._pool.shutdown()
