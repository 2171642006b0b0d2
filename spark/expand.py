"""spark-check's expand stage on the compiled kernel: a task's rows of a level expanded, each
successor written into its owner's block (spark/emit.py), the blocks yielded or written to the
exchange (spark/exchange.py), then the task's counts for the driver. The rows come from a
level's chunks (`expand`: the first level on Spark, a resumed run's, the shuffle's path) or
from an owner's memory (`expand_rows`: spark/chain.py's levels)."""
from __future__ import annotations

import time

import numpy as np

from spark import compiled as X
from spark import emit as E
from spark import rows as R
from spark.exchange import Writer
from spark.kernel_tasks import KernelJob, _least, _mask, _side
from verifier.core.result import DEADLOCK


def expand(job: KernelJob, found: frozenset, records, spill=None):
    """An expand task over some chunks (key, bytes) of a level: yields (owner, ("B", block))
    for each block it closes (spark/emit.py says when), then (0, ("S", counts, events,
    seconds)) for the driver. With
    `spill` (an exchange directory, this task's number, a directory to fall back to, whether
    to squeeze, the run's catalogue: spark/exchange.Writer) the blocks go to files instead,
    their controller values named by digest, and the task yields (owner, ("X", its files))
    once it ends."""
    start = time.perf_counter()
    side = _side(job)
    pieces = ((side.rows_of(rec), np.array(rec.fps)) for rec in (side.read(data, R.PART) for _, data in records))
    return expand_rows(job, found, pieces, spill, start)


def expand_rows(job: KernelJob, found: frozenset, pieces, spill=None, start: float = 0.0):
    """expand, over pieces (rows with this process's controller ids, their fingerprints) of a
    level in its order."""
    start = start or time.perf_counter()
    files = Writer(*spill) if spill is not None else None
    try:
        yield from _expand(job, found, pieces, files, start)
    except BaseException:
        if files is not None:
            files.abort()
        raise


def _expand(job: KernelJob, found: frozenset, pieces, files, start: float):
    from specs.kernel.successors import N_ACTIONS
    side = _side(job)
    k = side.k
    step_check = _mask(job.step_names, job.step_slots, found)
    deadlocks = job.check_deadlock and DEADLOCK not in found
    out = side.blocks(job.partitions)
    out.reset()
    squeeze = files is not None and files.squeeze
    catalogue = side.catalogue(files.catalogue) if files is not None and files.catalogue else None

    def send(owner: int):
        block = out.close(owner, side.texts, squeeze, catalogue)
        if files is None:
            yield owner, ("B", block)
        else:
            files.add(owner, block)
    enabled = np.zeros(N_ACTIONS, dtype=np.int64)
    ctr = np.array([0, 0, 0, -1], dtype=np.int64)
    events: dict = {}
    lay = k.layout.lay
    for rows, fps in pieces:
        first = np.full((len(job.step_slots), 2), -1, dtype=np.int64)
        ctr[X.T_FIRST_STUCK] = -1
        pos = 0
        while pos < len(rows):
            side.sync()                  # the tables may have grown outside this loop (an event's successors)
            out.room(len(side.texts))
            status, pos = E.emit_rows(
                rows, fps, pos, len(rows), lay, k.cv, k.plan, k.table_args(), k.out, k.labels, k.key, k.work, k.params,
                side.ctrl, side.dig, step_check, deadlocks, first, *out.args(), enabled, ctr, out.info,
                k.step_bad, k.reduce)
            if status == X.NEED_EVENT:
                k.tables.fill(k.key)
                side.sync()
            elif status == E.FULL:
                yield from send(int(out.info[0]))
            elif status == E.WIDEN:
                for owner in out.open():
                    yield from send(owner)
                out.widen(int(out.info[0]), int(out.info[1]))
            elif status == E.GROW:
                out.room(2 * out.place.shape[1])
        for s in np.flatnonzero(first[:, 0] >= 0):
            at, nth = int(first[s, 0]), int(first[s, 1])
            k.successor_rows(rows[at])
            side.sync()
            _least(events, job.step_slots[s], (R.as_int(*fps[at]), nth, k.label(k.labels[nth])))
        if ctr[X.T_FIRST_STUCK] >= 0:
            _least(events, DEADLOCK, (R.as_int(*fps[ctr[X.T_FIRST_STUCK]]), 0, None))
    for owner in out.open():
        yield from send(owner)
    if files is not None:
        for owner, names in files.close().items():
            yield owner, ("X", names)
    names = job.model_type.action_names
    counts = (int(ctr[X.T_TRANSITIONS]), {names[a]: int(n) for a, n in enumerate(enabled) if n},
              int(ctr[X.T_TERMINAL]), int(ctr[X.T_STUCK]))
    yield 0, ("S", counts, events, round(time.perf_counter() - start, 3))
