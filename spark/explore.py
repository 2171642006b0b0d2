"""Level-synchronous BFS on Spark, the same search as verifier.bfs.explore.

Per level: executors expand the frontier with the model and the invariants (the same
functions the local checker calls), successors are deduplicated by fingerprint and
anti-joined with the visited set (every earlier level, read from Parquet, so the lineage
is one level deep), and the new states are written as the next level. Only counts,
per-action statistics and at most one violation per invariant and partition reach the
driver. A violation's shortest trace is rebuilt from the stored parent links and re-run
through the model (verifier.bfs.concrete_trace), as the local checker does.

Where two parents reach a state in one level, the one with the smallest (fingerprint,
label) is kept, so a run gives the same traces every time; they may differ from the
local checker's (which keeps the first found) but have the same length.
"""
from __future__ import annotations

import pickle
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Optional

from spark.levels import LevelStore, level_schema, meta_of
from specs import Trace
from verifier.result import COMPLETE, DEADLOCK, STOPPED, VIOLATION, Limits, Result, concrete_trace
from verifier.fingerprint import Fingerprinter, collision_probability

M64 = (1 << 64) - 1
_STATS, _EVENT, _SUCC = 0, 1, 2


def split_fp(fp: int) -> tuple[int, int]:
    """A 128-bit fingerprint as two signed 64-bit longs (Spark's LongType)."""
    def signed(x: int) -> int:
        return x - (1 << 64) if x >= 1 << 63 else x
    return signed(fp >> 64), signed(fp & M64)


def join_fp(hi: int, lo: int) -> int:
    return ((hi & M64) << 64) | (lo & M64)


@dataclass(frozen=True)
class Job:
    """What executors need: shipped with each task (Config pickles without its memo)."""
    cfg: object
    symmetry: bool
    invariants: tuple
    check_deadlock: bool


def _model(job: Job):
    from specs import Model
    return Model(job.cfg, symmetry=job.symmetry)


def expand_partition(job: Job, found: frozenset, rows):
    """Successors of a partition of the frontier, with the transition counts and at most
    one violation per step invariant (and one deadlock): the smallest (hi, lo, label)."""
    model = _model(job)
    cfg, canonical = job.cfg, model.canonical
    step_invs = [inv for inv in job.invariants if inv.kind == "step" and inv.name not in found]
    fpr = Fingerprinter()
    transitions, terminal, stuck = 0, 0, 0
    enabled: Counter = Counter()
    events: dict[str, tuple] = {}
    for row in rows:
        s = pickle.loads(row.state)
        known = fpr.fields(s)
        n = 0
        for label, t in model.successors(s):
            n += 1
            transitions += 1
            enabled[label[0]] += 1
            lb = pickle.dumps(label)
            for inv in step_invs:
                if not inv.check(cfg, s, label, t):
                    key = (row.hi, row.lo, lb)
                    if inv.name not in events or key < events[inv.name]:
                        events[inv.name] = key
            c = canonical(t) if canonical else t
            hi, lo = split_fp(fpr.mix(fpr.fields(c, s, known)))
            yield (_SUCC, (hi, lo), (row.hi, row.lo, lb, label[0], pickle.dumps(c)))
        if n == 0:
            if job.check_deadlock and DEADLOCK not in found and model.stuck(s):
                stuck += 1
                key = (row.hi, row.lo, b"")
                if DEADLOCK not in events or key < events[DEADLOCK]:
                    events[DEADLOCK] = key
            else:
                terminal += 1
    yield (_STATS, transitions, dict(enabled), terminal, stuck)
    for name, key in events.items():
        yield (_EVENT, name, key)


def check_partition(job: Job, found: frozenset, rows):
    """One pass over a written level: row count, fingerprint sums (the checksum), the
    actions that reached new states, and the smallest new state breaking each invariant."""
    state_invs = [inv for inv in job.invariants if inv.kind == "state" and inv.name not in found]
    count, sum_hi, sum_lo = 0, 0, 0
    taken: Counter = Counter()
    events: dict[str, tuple] = {}
    for row in rows:
        count += 1
        sum_hi += row.hi
        sum_lo += row.lo
        if row.action is not None:
            taken[row.action] += 1
        if state_invs:
            s = pickle.loads(row.state)
            for inv in state_invs:
                if not inv.check(job.cfg, s):
                    key = (row.hi, row.lo, b"")
                    if inv.name not in events or key < events[inv.name]:
                        events[inv.name] = key
    yield (count, sum_hi, sum_lo, dict(taken), events)


def _merge_events(parts) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    for events in parts:
        for name, key in events.items():
            if name not in out or key < out[name]:
                out[name] = key
    return out


class Progress:
    """One line per level on the driver."""

    def __init__(self, console, quiet: bool):
        self.console, self.quiet = console, quiet

    def __call__(self, level: int, new: int, total: int, rate: float, elapsed: float) -> None:
        if not self.quiet:
            self.console.print(f"level {level:>3}: {new:>10,} new  {total:>12,} total  "
                               f"{rate:>9,.0f} states/s  {elapsed:>8.1f}s elapsed", markup=False)


def spark_explore(spark, model, invariants, store: Optional[LevelStore] = None, resume: bool = False,
                  limits: Limits = Limits(), keep_going: bool = True, check_deadlock: bool = True,
                  partitions: Optional[int] = None, progress: Optional[Callable] = None,
                  on_level: Optional[Callable[[int], None]] = None) -> Result:
    """BFS from the model's initial states on Spark. With `store` the levels go to its
    checkpoint directory (resumable); without, to a temporary one removed at the end."""
    cfg = model.cfg
    invariants = tuple(invariants)
    checked = None if len(invariants) == len(model.properties) else [inv.name for inv in invariants]
    job = Job(cfg, model.symmetric, invariants, check_deadlock)
    partitions = partitions or spark.sparkContext.defaultParallelism
    temp = None
    if store is None:
        temp = tempfile.mkdtemp(prefix="kraft-verify-spark-")
        store = LevelStore(temp, {"what": "temporary"})
    try:
        return _run(spark, model, job, invariants, checked, store, resume, limits, keep_going, partitions,
                    progress, on_level)
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


def _run(spark, model, job, invariants, checked, store, resume, limits, keep_going, partitions,
         progress, on_level) -> Result:
    canonical = model.canonical
    schema = level_schema()
    start = time.monotonic()
    roots = {}
    fpr = Fingerprinter()
    for s in model.init_states():
        c = canonical(s) if canonical else s
        roots.setdefault(split_fp(fpr(c)), (s, c))

    manifest = store.load() if resume else None
    if not resume:
        store.fresh()
    levels: list[dict] = []
    if manifest:
        for meta in manifest["levels"]:
            if not store.trusted(spark, meta):
                break
            levels.append(meta)
    totals = {"transitions": 0, "enabled": {}, "taken": {}, "terminal": 0, "found": {}, "seconds": 0.0}
    if levels:
        totals = dict(levels[-1]["totals"])
        store.drop_from(len(levels))
        start -= totals["seconds"]
    else:
        store.drop_from(0)
        rows = [(hi, lo, pickle.dumps(c), None, None, None, None, []) for (hi, lo), (_, c) in sorted(roots.items())]
        df = spark.createDataFrame(rows, schema).repartition(partitions, "hi", "lo")
        levels.append(_finish_level(spark, store, job, df, 0, totals, start))
        _save(store, levels, totals)
        if progress:
            elapsed = time.monotonic() - start
            first = levels[0]["states"]
            progress(0, first, first, first / max(1e-9, elapsed), elapsed)

    status, reason = COMPLETE, ""
    while True:
        level = len(levels) - 1
        if levels[-1]["states"] == 0:
            levels.pop()
            break
        if totals["found"] and not keep_going:
            status = VIOLATION
            break
        total = sum(m["states"] for m in levels)
        if limits.max_depth is not None and level >= limits.max_depth:
            unexplored = levels[-1]["states"]
            status, reason = STOPPED, f"max depth {limits.max_depth} reached with {unexplored} states unexplored"
            break
        if limits.max_states is not None and total >= limits.max_states:
            status, reason = STOPPED, f"max states {limits.max_states} reached"
            break
        if limits.time_budget is not None and time.monotonic() - start > limits.time_budget:
            status, reason = STOPPED, f"time budget {limits.time_budget:g}s spent"
            break
        t0 = time.monotonic()
        meta = _expand_level(spark, store, job, level, totals, partitions, start)
        levels.append(meta)
        _save(store, levels, totals)
        if on_level:
            on_level(level + 1)
        if progress:
            elapsed = time.monotonic() - start
            progress(level + 1, meta["states"], total + meta["states"],
                     meta["states"] / max(1e-9, time.monotonic() - t0), elapsed)
    return _result(spark, store, model, job, checked, keep_going, levels, totals, roots, status, reason, start)


def _save(store, levels, totals) -> None:
    levels[-1]["totals"] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in totals.items()}
    store.save({"levels": levels})


def _expand_level(spark, store, job, level, totals, partitions, start) -> dict:
    """Expand level `level` into level + 1; update `totals`; return the new level's meta."""
    found = frozenset(totals["found"])
    frontier = store.read(spark, level)
    expanded = frontier.rdd.mapPartitions(lambda rows: expand_partition(job, found, rows))
    expanded.persist()
    try:
        side = expanded.filter(lambda r: r[0] != _SUCC).collect()
        transitions, terminal, stuck = 0, 0, 0
        enabled = Counter(totals["enabled"])
        for r in side:
            if r[0] == _STATS:
                transitions += r[1]
                enabled.update(r[2])
                terminal += r[3]
                stuck += r[4]
        events = _merge_events({r[1]: r[2]} for r in side if r[0] == _EVENT)
        new_deadlock = DEADLOCK in events and DEADLOCK not in totals["found"]
        terminal += stuck - (1 if new_deadlock else 0)    # as explore: only the first stuck state is reported
        for name, (hi, lo, lb) in sorted(events.items()):
            if name not in totals["found"]:
                totals["found"][name] = {"level": level, "hi": hi, "lo": lo, "label": lb.hex(),
                                         "kind": "deadlock" if name == DEADLOCK else "step"}
        best = (expanded.filter(lambda r: r[0] == _SUCC)
                .map(lambda r: (r[1], r[2]))
                .reduceByKey(min, numPartitions=partitions)
                .map(lambda kv: (kv[0][0], kv[0][1], kv[1][4], kv[1][0], kv[1][1], kv[1][2], kv[1][3], [])))
        candidates = spark.createDataFrame(best, level_schema())
        new = candidates.join(store.visited(spark, level), ["hi", "lo"], "left_anti")
        store.write(new, level + 1)      # partitioned by fingerprint: reduceByKey's hash of (hi, lo)
    finally:
        expanded.unpersist()
    totals["transitions"] += transitions
    totals["enabled"] = dict(enabled)
    totals["terminal"] += terminal
    return _finish_level(spark, store, job, None, level + 1, totals, start)


def _finish_level(spark, store, job, df, level, totals, start) -> dict:
    """Measure a written level (count, checksum), count the actions that reached it and
    check the state invariants on its states."""
    if df is not None:
        store.write(df, level)
    found = frozenset(totals["found"])
    parts = store.read(spark, level).rdd.mapPartitions(lambda rows: check_partition(job, found, rows)).collect()
    count = sum(p[0] for p in parts)
    taken = Counter(totals["taken"])
    for p in parts:
        taken.update(p[3])
    totals["taken"] = dict(taken)
    for name, (hi, lo, _) in sorted(_merge_events(p[4] for p in parts).items()):
        totals["found"][name] = {"level": level, "hi": hi, "lo": lo, "label": "", "kind": "state"}
    totals["seconds"] = time.monotonic() - start
    return meta_of(level, count, sum(p[1] for p in parts), sum(p[2] for p in parts))


def _path_to(spark, store, level: int, hi: int, lo: int) -> tuple[tuple[int, int], list]:
    """(root fingerprint, labels from the root) by walking the parent links back."""
    from pyspark.sql import functions as F
    labels = []
    for k in range(level, 0, -1):
        row = (store.read(spark, k).where((F.col("hi") == hi) & (F.col("lo") == lo))
               .select("parent_hi", "parent_lo", "label").collect())[0]
        labels.append(pickle.loads(row["label"]))
        hi, lo = row["parent_hi"], row["parent_lo"]
    labels.reverse()
    return (hi, lo), labels


def _result(spark, store, model, job, checked, keep_going, levels, totals, roots, status, reason,
            start) -> Result:
    found: dict[str, Trace] = {}
    first = None
    for name, v in sorted(totals["found"].items(), key=lambda kv: (kv[1]["level"] + (kv[1]["kind"] == "step"),
                                                                   kv[0])):
        root_fp, labels = _path_to(spark, store, v["level"], v["hi"], v["lo"])
        final = pickle.loads(bytes.fromhex(v["label"])) if v["kind"] == "step" else None
        root = roots[root_fp][0]
        steps = concrete_trace(model, root, labels, final, model.canonical)
        # as explore: with keep_going, earlier states may break invariants reported apart
        trace = Trace(model, root, steps, [name], engine="spark", checked=[name] if keep_going else checked)
        found[name] = trace
        first = first or trace
    per_level = [m["states"] for m in levels]
    res = Result(VIOLATION if found else status, sum(per_level), totals["transitions"],
                 max(0, len(per_level) - 1), time.monotonic() - start, states_per_level=per_level,
                 enabled=Counter(totals["enabled"]), taken=Counter(totals["taken"]), counterexample=first,
                 counterexamples=found, stop_reason=reason, terminal_states=totals["terminal"],
                 deadlock_checked=job.check_deadlock)
    res.explored_all = status == COMPLETE
    res.collision_probability = collision_probability(res.distinct_states, res.transitions + len(roots))
    return res
