"""Level-synchronous BFS on Spark, the same search as verifier.bfs.explore.

Per level one Spark job (spark/tasks.py): executors expand the level's part files with the
model and the invariants (the same functions the local checker calls), ship deduplicated
successors to their owners (`fingerprint mod P`) as large blocks of data, and each owner
keeps the states no earlier level holds and writes them as its part of the next level. Only
counts, per-action statistics and at most one violation per invariant reach the driver, so
its memory does not grow with the states. A violation's shortest trace is rebuilt from the
stored parent links and re-run through the model (verifier.result.concrete_trace).

Where several parents reach a state in one level, the one with the smallest (fingerprint,
n-th successor) is kept, as in the local parallel search, so a run gives the same traces
every time, whatever the number of partitions.
"""
from __future__ import annotations

import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Optional

from spark.levels import LevelStore, meta_of
from spark.session import Interrupts
from spark.tasks import Job, expand, expand_to_inbox, find_link, own, read_inbox, seed
from specs import Trace
from verifier.fingerprint import Fingerprinter, collision_probability
from verifier.result import COMPLETE, DEADLOCK, STOPPED, VIOLATION, Limits, Result, concrete_trace
from verifier.values import from_data, to_data

INBOX = "inbox"           # in the level being written: the expand tasks' blocks, per owner
DRIVER_LEVELS = 5000      # levels smaller than this are expanded on the driver (see spark_explore)


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
                  on_level: Optional[Callable[[int], None]] = None, driver_levels: int = DRIVER_LEVELS) -> Result:
    """BFS from the model's initial states on Spark. With `store` the levels go to its
    checkpoint directory (resumable); without, to a temporary one removed at the end. A
    resumed run keeps the partition count it was started with (owners are fp mod P). A level
    of fewer than `driver_levels` states is expanded on the driver, by the same task functions:
    a Spark job costs about 0.3 s however small, more than such a level's work."""
    invariants = tuple(invariants)
    note = f"; --resume --checkpoint-dir {store.root} continues from the last complete level" if store else ""
    checked = None if len(invariants) == len(model.properties) else [inv.name for inv in invariants]
    temp = None
    if store is None:
        temp = tempfile.mkdtemp(prefix="kraft-verify-spark-")
        store = LevelStore(temp, {"what": "temporary"})
    try:
        manifest = store.load() if resume else None
        if manifest:
            partitions = manifest["partitions"]
        partitions = partitions or spark.sparkContext.defaultParallelism
        job = Job(model.cfg, model.symmetric, invariants, check_deadlock, partitions)
        with Interrupts(spark, note) as interrupts:
            run = _Run(spark, model, job, store, progress, on_level, interrupts)
            run.driver_levels = driver_levels
            try:
                return run.go(manifest, limits, keep_going, checked)
            except Exception:
                if interrupts.signal is None:
                    raise
                # cancelled outside a level (checking a resumed level, rebuilding a trace): no
                # report to write, the checkpoint is as the last level left it
                raise KeyboardInterrupt from None
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


class _Interrupted(Exception):
    """A signal cancelled the level's job: the search stops, the checkpoint holds the levels before."""


class _Run:
    def __init__(self, spark, model, job: Job, store: LevelStore, progress, on_level, interrupts: Interrupts):
        self.spark, self.model, self.job, self.store = spark, model, job, store
        self.progress, self.on_level, self.interrupts = progress, on_level, interrupts
        self.temporary = store.identity == {"what": "temporary"}
        self.start = time.monotonic()
        self.levels: list[dict] = []
        self.totals = {"transitions": 0, "enabled": {}, "taken": {}, "terminal": 0, "found": {}, "seconds": 0.0}
        fpr, canonical = Fingerprinter(), model.canonical
        self.roots: dict[int, tuple] = {}
        for s in model.init_states():
            c = canonical(s) if canonical else s
            self.roots.setdefault(fpr(c), (s, c))

    def go(self, manifest, limits: Limits, keep_going: bool, checked) -> Result:
        store, totals = self.store, self.totals
        if manifest is None:
            store.fresh()
        for meta in (manifest or {}).get("levels", []):
            if not store.trusted(self.spark, meta):
                break
            self.levels.append(meta)
        if self.levels:
            self.totals = totals = {k: (dict(v) if isinstance(v, dict) else v)   # the level's record stays as saved
                                    for k, v in self.levels[-1]["totals"].items()}
            store.drop_from(len(self.levels))
            self.start -= totals["seconds"]
        else:
            store.drop_from(0)
            self._seed()
        status, reason = COMPLETE, ""
        while True:
            level = len(self.levels) - 1
            if self.levels[-1]["states"] == 0:
                self.levels.pop()
                break
            if totals["found"] and not keep_going:
                status = VIOLATION
                break
            total = sum(m["states"] for m in self.levels)
            if limits.max_depth is not None and level >= limits.max_depth:
                status, reason = STOPPED, (f"max depth {limits.max_depth} reached with "
                                           f"{self.levels[-1]['states']} states unexplored")
                break
            if limits.max_states is not None and total >= limits.max_states:
                status, reason = STOPPED, f"max states {limits.max_states} reached"
                break
            if limits.time_budget is not None and time.monotonic() - self.start > limits.time_budget:
                status, reason = STOPPED, f"time budget {limits.time_budget:g}s spent"
                break
            if self.interrupts.signal is None:
                t0 = time.monotonic()
                try:
                    meta = self._expand(level)
                except _Interrupted:
                    pass
            if self.interrupts.signal is not None:
                self.interrupts.settle()
                kept = (f"the checkpoint keeps levels 0-{len(self.levels) - 1}" if not self.temporary
                        else "no --checkpoint-dir, so nothing to resume from")
                status, reason = STOPPED, f"interrupted by {self.interrupts.signal}; {kept}"
                break
            if self.on_level:
                self.on_level(level + 1)
            if self.progress:
                self.progress(level + 1, meta["states"], total + meta["states"],
                              meta["states"] / max(1e-9, time.monotonic() - t0), time.monotonic() - self.start)
        return self._result(checked, keep_going, status, reason)

    # ------------------------------------------------------------ levels

    def _commit(self, level: int, parts: list, state_events: dict) -> dict:
        """Record a written level in the manifest (after its part files are on disk)."""
        totals = self.totals
        for name, (fp, _, _) in sorted(state_events.items()):
            totals["found"][name] = {"level": level, "fp": f"{fp:x}", "label": "", "kind": "state"}
        totals["seconds"] = time.monotonic() - self.start
        meta = meta_of(level, parts)
        meta["totals"] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in totals.items()}
        self.levels.append(meta)
        self.store.save({"partitions": self.job.partitions, "levels": self.levels})
        return meta

    def _seed(self) -> None:
        directory = self.store.prepare(0)
        roots = [(fp, c) for fp, (_, c) in sorted(self.roots.items())]
        parts, events = [], {}
        for p in range(self.job.partitions):
            meta, ev = seed(self.job, directory, p, roots)
            parts.append(meta)
            _merge(events, ev)
        meta = self._commit(0, parts, events)
        if self.progress:
            elapsed = time.monotonic() - self.start
            self.progress(0, meta["states"], meta["states"], meta["states"] / max(1e-9, elapsed), elapsed)

    def _expand(self, level: int) -> dict:
        """Expand level `level` into level + 1 (one Spark job, or on the driver if it is small);
        return the new level's meta."""
        store, totals = self.store, self.totals
        n = self.job.partitions
        found = frozenset(totals["found"])
        frontier = [str(store.part_path(level, p)) for p in range(n)]
        dirs = [str(store.level_path(k)) for k in range(level + 1)] + [str(store.prepare(level + 1))]
        if self.levels[level]["states"] < self.driver_levels:
            owned = self._on_driver(found, frontier, dirs)
        else:
            owned = self._on_spark(found, frontier, dirs)
        enabled, step_events, state_events = Counter(totals["enabled"]), {}, {}
        taken = Counter(totals["taken"])
        transitions = terminal = stuck = 0
        for _, part_taken, events, stats in owned:
            taken.update(part_taken)
            _merge(state_events, events)
            for (t, en, te, st), ev in stats:
                transitions, terminal, stuck = transitions + t, terminal + te, stuck + st
                enabled.update(en)
                _merge(step_events, ev)
        if DEADLOCK in step_events:      # as explore: only the first stuck state is reported
            stuck -= 1
        for name, (fp, _, label) in sorted(step_events.items()):
            totals["found"][name] = {"level": level, "fp": f"{fp:x}",
                                     "label": to_data(label) if label is not None else "",
                                     "kind": "deadlock" if name == DEADLOCK else "step"}
        totals["transitions"] += transitions
        totals["terminal"] += terminal + stuck
        totals["enabled"], totals["taken"] = dict(enabled), dict(taken)
        return self._commit(level + 1, [p[0] for p in owned], state_events)

    def _on_spark(self, found: frozenset, frontier: list, dirs: list) -> list:
        """Two Spark jobs of P tasks: expand (blocks to the owners' inboxes in the next level's
        directory), then own. One result per owner, the expand tasks' counts with owner 0's."""
        job, n, sc = self.job, self.job.partitions, self.spark.sparkContext
        inbox = str(Path(dirs[-1]) / INBOX)
        try:
            stats = (sc.parallelize(range(n), n)
                     .mapPartitionsWithIndex(lambda i, _: [expand_to_inbox(job, found, Path(frontier[i]), i,
                                                                           Path(inbox))])
                     .collect())
            owned = (sc.parallelize(range(n), n)
                     .mapPartitionsWithIndex(lambda i, _: own(job, found, [Path(d) for d in dirs], i,
                                                              read_inbox(Path(inbox), i)))
                     .collect())
        except Exception:
            if self.interrupts.signal is not None:      # the job was cancelled: not an error
                raise _Interrupted() from None
            raise
        shutil.rmtree(inbox, ignore_errors=True)
        owned[0][3].extend(stats)
        return owned

    def _on_driver(self, found: frozenset, frontier: list, dirs: list) -> list:
        """The same two stages in this process, for a small level."""
        job, n = self.job, self.job.partitions
        routed: list[list] = [[] for _ in range(n)]
        for i in range(n):
            for owner, value in expand(job, found, Path(frontier[i]), i):
                routed[owner].append((owner, value))
        return [next(own(job, found, [Path(d) for d in dirs], i, iter(routed[i]))) for i in range(n)]

    # ------------------------------------------------------------ the result

    def _path_to(self, level: int, fp: int) -> tuple[int, list]:
        """(root fingerprint, labels from the root) by walking the parent links back; each
        look-up is a one-task job, run where the part files are."""
        sc, labels = self.spark.sparkContext, []
        for k in range(level, 0, -1):
            path = str(self.store.part_path(k, fp % self.job.partitions))
            fp, label = sc.parallelize([path], 1).map(lambda p, fp=fp: find_link(Path(p), fp)).collect()[0]
            labels.append(label)
        labels.reverse()
        return fp, labels

    def _result(self, checked, keep_going: bool, status: str, reason: str) -> Result:
        model, totals = self.model, self.totals
        found: dict[str, Trace] = {}
        first = None
        order = sorted(totals["found"].items(), key=lambda kv: (kv[1]["level"] + (kv[1]["kind"] == "step"), kv[0]))
        for name, v in order:
            root_fp, labels = self._path_to(v["level"], int(v["fp"], 16))
            final = from_data(v["label"], {}) if v["kind"] == "step" else None
            steps = concrete_trace(model, self.roots[root_fp][0], labels, final, model.canonical)
            # as explore: with keep_going, earlier states may break invariants reported apart
            trace = Trace(model, self.roots[root_fp][0], steps, [name], engine="spark",
                          checked=[name] if keep_going else checked)
            found[name] = trace
            first = first or trace
        per_level = [m["states"] for m in self.levels]
        res = Result(VIOLATION if found else status, sum(per_level), totals["transitions"],
                     max(0, len(per_level) - 1), time.monotonic() - self.start, states_per_level=per_level,
                     enabled=Counter(totals["enabled"]), taken=Counter(totals["taken"]), counterexample=first,
                     counterexamples=found, stop_reason=reason, terminal_states=totals["terminal"],
                     deadlock_checked=self.job.check_deadlock)
        res.explored_all = status == COMPLETE
        res.collision_probability = collision_probability(res.distinct_states, res.transitions + len(self.roots))
        return res


def _merge(into: dict, events: dict) -> None:
    """Keep, per invariant, the event with the smallest (fingerprint, n-th successor)."""
    for name, key in events.items():
        if name not in into or key[:2] < into[name][:2]:
            into[name] = key
