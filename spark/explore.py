"""Level-synchronous BFS on Spark, the same search as check's (the engine's
entry point is spark/engine.py; this is its level loop).

Per level one Spark job (spark/kernel_tasks.py, the compiled kernel over chunks of rows; on a
local master one stage over files, spark/chain.py, elsewhere two through Spark's shuffle,
spark/shuffled.py): executors expand
the level's chunks with the model and the invariants (the same rules the local checker
runs), send deduplicated successors to their owners (`fingerprint mod P`) as large blocks of
data, and each owner, with its visited fingerprints in the same partition, keeps the states
no earlier level holds and makes its chunks of the next level, which go to the level store
(spark/store.py: a Hadoop file system or Spark itself, never a path only the driver has).
Only counts, per-action statistics and at most one violation per invariant reach the
driver, so its memory does not grow with the states.
A violation's shortest trace is rebuilt from the stored parent links and re-run through the
model (verifier.core.result.concrete_trace).

Where several parents reach a state in one level, the one with the smallest (fingerprint,
n-th successor) is kept, as in the local parallel search, so a run gives the same traces
every time, whatever the number of partitions or executors, and whichever tasks are retried.
"""
from __future__ import annotations

import errno
import time
from collections import Counter
from typing import Optional

from spark.session import Interrupts, SparkGone, collect_garbage, disk_full, failure, unpersist
from spark.shuffled import storage
from spark.store import LevelStore
from spark.kernel_tasks import KernelJob as Job
from spark.store import owner_of
from verifier.core import levels as L
from verifier.core.checkpoint import CheckpointError
from verifier.core.fingerprint import collision_probability
from verifier.core.result import COMPLETE, DEADLOCK, STOPPED, VIOLATION, Progress, SearchResult
from verifier.core.settings import Limits
from verifier.core.values import BadData, from_data, to_data


LOW_DISK = 64 << 20      # bytes free on the scratch's disk as a job failed that make it the likely cause


class _JobFailed(Exception):
    """A level's Spark job failed for good (its tasks' retries spent, the cluster gone): the
    run stops with a report and the checkpoint it has, as on an interrupt."""


class _Interrupted(Exception):
    """A signal cancelled the level's job: the search stops, the checkpoint holds the levels before."""


class _Run:
    def __init__(self, spark, model, job: Job, store: Optional[LevelStore], levels, progress, on_level,
                 interrupts: Interrupts):
        self.spark, self.model, self.job, self.store, self.levels = spark, model, job, store, levels
        self.progress, self.on_level, self.interrupts = progress, on_level, interrupts
        self.start = time.monotonic()
        self.metas: list[dict] = []
        self.totals = {"transitions": 0, "enabled": {}, "taken": {}, "terminal": 0, "found": {}, "seconds": 0.0}
        self.held: dict[int, list] = {}       # level -> per owner its chunks, for levels made on the driver
        self.held_visited: Optional[list] = None   # per owner its fingerprints, while every level is held
        self.visited: list = []                # owner-aligned RDDs of ("F", fingerprints), once on Spark
        self.sizes: list = []                  # the states each of them holds
        self.cached: Optional[tuple] = None    # (level, its owners' output still in Spark's cache)
        self.roots: dict[int, tuple] = job.roots(model)
        self.exchange = None                   # on a local master: spark/exchange.py's directory, where
        self.files = None                      # blocks, runs and levels go as files (spark/local_files.py)
        self.pending = None                    # spark/chain.py's expansion of the last level, for the next job
        self.limits = Limits()
        from spark.chain import Copying
        self.copying = Copying()               # spark/chain.py's copy of the last level to the store
        self.unsaved: Optional[tuple] = None   # (manifest, the levels whose rows it drops) held back for that copy
        self.saved = 0                         # levels the saved manifest names
        self.unsure: Optional[dict] = None     # a manifest whose save failed as the JVM died (_landed)
        self.rows_every, self.rows_at = 0.0, None   # seconds between two levels whose rows are kept; the last's time
        self.last_job = 0.0                         # the last chained level job's seconds (spark/chain.due)

    def go(self, manifest, limits: Limits, keep_going: bool, invariants) -> SearchResult:
        totals, self.limits = self.totals, limits
        if manifest is None and self.store is not None:
            self.store.fresh()
        for meta in self._trusted((manifest or {}).get("levels", [])):
            self.metas.append(meta)
        while self.metas and self.metas[-1].get("links") and "rows" not in self.metas[-1]:
            self.metas.pop()             # links only: no level to go on from (the last two keep rows)
        if self.metas:
            self.totals = totals = {k: (dict(v) if isinstance(v, dict) else v)   # the level's record stays as saved
                                    for k, v in self.metas[-1]["totals"].items()}
            self.levels.drop_from(len(self.metas))
            for meta in self.metas:      # rows a run killed before it removed them (the manifest says not)
                if meta.get("links") and "rows" not in meta:
                    self.levels.drop_rows(meta["level"])
            self.start -= totals["seconds"]
            self.saved = len(self.metas)
            self._visited_from_store()
        else:
            self.levels.drop_from(0)
            self._seed()
        status, reason = COMPLETE, ""
        if limits.time_budget is not None:
            self.interrupts.cancel_at(self.start + limits.time_budget)
        while True:
            level = len(self.metas) - 1
            if self.metas[-1]["states"] == 0:
                self.metas.pop()
                break
            if totals["found"] and not keep_going:
                status = VIOLATION
                break
            total = sum(m["states"] for m in self.metas)
            stopped = L.between_levels(limits, level, self.metas[-1]["states"], total, self.start,
                                       self.interrupts.budget_spent)
            if stopped and not stopped[1].startswith("interrupted"):    # a signal is the Interrupts' to settle
                status, reason = stopped
                if reason.startswith("time budget"):    # spent while no job ran: the level was done
                    reason = f"{reason} (after level {level}; {self._kept()})"
                break
            if self.interrupts.signal is None:
                t0 = time.monotonic()
                try:
                    meta = self._expand(level)
                except _Interrupted:
                    if self.interrupts.budget_spent:        # the budget cancelled the level's job
                        self.interrupts.settle()
                        status, reason = STOPPED, (f"time budget {limits.time_budget:g}s spent (level {level + 1} "
                                                   f"cancelled; {self._kept()})")
                        break
                except _JobFailed as failed:
                    status, reason = STOPPED, f"the Spark job of level {level + 1} failed ({failed}); {self._kept()}"
                    break
            if self.interrupts.signal is not None:
                self.interrupts.settle()
                status, reason = STOPPED, f"interrupted by {self.interrupts.signal}; {self._kept()}"
                break
            if self.on_level and self.unsaved is None:      # else once its copy is whole (settle)
                self.on_level(level + 1)
            self._report(level + 1, meta["states"], total + meta["states"], time.monotonic() - t0)
        return self._result(invariants, keep_going, status, reason)

    def stopped(self, reason: str, invariants, keep_going: bool) -> SearchResult:
        """The result of a run stopped outside a level's job (the levels committed so far)."""
        return self._result(invariants, keep_going, STOPPED, f"{reason}; {self._kept()}")

    def release(self) -> None:
        """Free what the run keeps in Spark's cache (a session may serve several runs)."""
        rdds, self.visited, self.cached = self.visited + ([self.cached[1]] if self.cached else []), [], None
        held = bool(rdds)
        while rdds:                      # popped: no reference left here when the JVM collects
            unpersist(rdds.pop())
        if held:                         # their shuffle files go once the JVM has collected them
            collect_garbage(self.spark.sparkContext)

    def _kept(self) -> str:
        if self.store is None:
            return "no --checkpoint-dir, so nothing to resume from"
        lost = ""
        try:
            self.settle()
        except Exception as exc:      # the JVM or the store went with the copy: that level does not count
            self.unsaved = None
            lost = f"level {len(self.metas) - 1}'s copy to the store failed ({failure(exc)}); "
        maybe = self._landed()
        if self.saved < len(self.metas):      # a manifest not saved: the run holds what the checkpoint does
            del self.metas[self.saved:]
            self.totals = {k: (dict(v) if isinstance(v, dict) else v) for k, v in self.metas[-1]["totals"].items()}
        start = max((m["level"] for m in self.metas[:self.saved] if "rows" in m or not m.get("links")), default=0)
        later = f" (it goes on from level {start}, the last whose rows are kept)" if start < self.saved - 1 else ""
        unsure = f" (or 0-{maybe - 1}: the JVM died as it wrote the manifest naming level {maybe - 1})" if maybe else ""
        return f"{lost}the checkpoint keeps levels 0-{self.saved - 1}{unsure}: rerun with --resume{later}"

    def _landed(self) -> int:
        """After a manifest's save failed (the JVM died in the call), what the checkpoint holds:
        where the manifest can be read without the JVM (file://) and the new one landed, the run
        keeps its levels (0 returned); where it cannot, the level count it would name, for the
        stop message to give both."""
        unsure, self.unsure = self.unsure, None
        if unsure is None or len(unsure["levels"]) <= self.saved:
            return 0
        landed = self.store.levels_on_disk()
        if landed is None:
            return len(unsure["levels"])
        if landed == len(unsure["levels"]):
            self.metas[:landed] = unsure["levels"]
            self.saved = landed
        return 0

    # ------------------------------------------------------------ resuming

    def _trusted(self, saved: list):
        """The saved levels, up to the first whose chunks do not read back exactly as the
        manifest records them (measured by executors, where the data is). Level 0 must hold
        exactly this model's initial states, and a last level of no states is never taken on
        trust (it would end the search): it is recomputed."""
        roots = sorted(self.roots)
        for meta in saved:
            if meta["level"] == 0 and (meta["states"] != len(roots) or int(meta["checksum"], 16) != sum(roots)):
                return
            if meta["states"] == 0:
                return
            want = {c[0]: c[1:] for c in meta["chunks"]}
            if self.levels.measure(meta["level"]) != want:
                return
            if "rows" in meta and self.levels.measure(meta["level"], rows=True) != {c[0]: c[1:] for c in meta["rows"]}:
                return
            yield meta

    def _visited_from_store(self) -> None:
        """Every trusted level's fingerprints, aligned with their owners (one shuffle)."""
        sc, n = self.spark.sparkContext, self.job.partitions
        stored = sc.union([self.levels.read(k) for k in range(len(self.metas))])
        job = self.job
        visited = stored.map(lambda kv: job.visited_of(kv[0], kv[1])).partitionBy(n, owner_of)
        self.visited = [visited.persist(storage(sc))]
        self.sizes = [sum(m["states"] for m in self.metas)]
        visited.count()

    # ------------------------------------------------------------ levels

    def _commit(self, level: int, owned: list, state_events: dict, tasks: Optional[dict] = None,
                rows: Optional[list] = None, links: bool = False) -> dict:
        """Record a written level in the manifest (after its chunks are in the store), with its
        tasks' seconds (expand's sorted, own's by owner: where a level waited on one task).
        `links`: the level's chunks are links; `rows`: its chunks with their rows, if it keeps
        them (for the last two such levels: the oldest's go once the manifest is saved,
        spark/store.py)."""
        totals = self.totals
        for name, (fp, _, _) in sorted(state_events.items()):
            totals["found"][name] = {"level": level, "fp": f"{fp:x}", "label": "", "kind": "state"}
        totals["seconds"] = time.monotonic() - self.start
        chunks = sorted(c for metas in owned for c in metas)
        meta = {"level": level, "states": sum(c[1] for c in chunks),
                "checksum": f"{sum(int(c[2], 16) for c in chunks):x}", "chunks": chunks,
                "totals": {k: (dict(v) if isinstance(v, dict) else v) for k, v in totals.items()}}
        if tasks is not None:
            meta["tasks"] = {"expand": sorted(tasks["expand"]), "own": tasks["own"]}
        gone = []
        if links:
            meta["links"] = True
        if rows:                         # the rows of the last two levels that have them (spark/store.py)
            meta["rows"] = sorted(rows)
            kept = [m for m in self.metas if "rows" in m]
            for m in kept[:-1]:
                m.pop("rows")
                gone.append(m["level"])
        if self.store is not None:      # the level counts once the manifest has it
            manifest = {"partitions": self.job.partitions, "levels": self.metas + [meta]}
            if self.copying.level() == level:     # not before its copy is whole (spark/chain.Copying)
                self.unsaved = (manifest, gone)
            else:
                self.settle()
                self._save(manifest, gone)
        self.metas.append(meta)
        return meta

    def _save(self, manifest: dict, drop: list) -> None:
        try:
            self.store.save(manifest)
        except BaseException:            # the JVM may have renamed it into place as it died (_kept)
            self.unsure = manifest
            raise
        self.unsure = None
        self.saved = len(manifest["levels"])
        for level in drop:
            self.levels.drop_rows(level)

    def settle(self) -> None:
        """The level being copied to the store is whole there: the manifest that names it saved."""
        self.copying.wait()
        unsaved, self.unsaved = self.unsaved, None
        if unsaved is not None:
            self._save(*unsaved)
            if self.on_level:
                self.on_level(self.saved - 1)

    def _seed(self) -> None:
        roots = [(fp, c) for fp, (_, c) in sorted(self.roots.items())]
        outs = [self.job.seed(p, roots) for p in range(self.job.partitions)]
        self._hold(0, outs)
        events: dict = {}
        for out in outs:
            _merge(events, out[0][1][1][2])
        meta = self._commit(0, [out[0][1][1][0] for out in outs], events)
        self._report(0, meta["states"], meta["states"], time.monotonic() - self.start)

    def _report(self, level: int, new: int, total: int, level_seconds: float) -> None:
        """A level committed, in the core `Progress` every engine reports in."""
        if self.progress:
            self.progress(Progress(self.totals["transitions"], total, level, new, time.monotonic() - self.start,
                                   level=new, level_done=new, level_seconds=level_seconds))

    def _hold(self, level: int, outs: list) -> None:
        """A level made on the driver: to the store, and kept here while the levels are small."""
        per_owner = [[(v[1], v[2]) for _, v in out if v[0] == "C"] for out in outs]
        self.levels.write_local(level, per_owner)
        self.held[level] = per_owner
        fps = [[v[1] for _, v in out if v[0] == "F"] for out in outs]
        self.held_visited = fps if self.held_visited is None else [a + b for a, b in zip(self.held_visited, fps)]

    def _disk_said(self, why: str) -> str:
        """`why`, and a scratch disk all but full as the job failed (a worker that crashed on it
        says nothing of the disk)."""
        left, self.failed_free = getattr(self, "failed_free", None), None
        if "disk full" in why or "disk budget" in why or left is None or left >= LOW_DISK:
            return why
        return disk_full(f"{why}; the scratch's disk had {left // 2**20} MB free as the job failed", "in a task", sure=True)

    def _expand(self, level: int) -> dict:
        """Expand level `level` into level + 1 (one Spark job, or on the driver if it is small
        and every level so far is held here); return the new level's meta."""
        totals = self.totals
        found = frozenset(totals["found"])
        try:
            if self.metas[level]["states"] < self.driver_levels and level in self.held and not self.visited:
                owned = self._on_driver(found, level)
            elif self.files is not None:
                from spark.chain import level as chained
                owned = chained(self, found, level)
            else:
                from spark.shuffled import level as shuffled
                owned = shuffled(self, found, level)
        except Exception as exc:
            from py4j.protocol import Py4JError
            from pyspark.errors.exceptions.captured import CapturedException
            if self.interrupts.signal is not None or self.interrupts.budget_spent:   # cancelled: not an error
                raise _Interrupted() from None
            # ConnectionError: py4j finds the JVM gone; CapturedException: a task's own (a Python
            # worker's OSError, a disk that filled); OSError: the driver's files of the level
            if isinstance(exc, (Py4JError, ConnectionError, CapturedException)) or \
                    getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
                raise _JobFailed(self._disk_said(failure(exc))) from None
            raise
        enabled, step_events, state_events = Counter(totals["enabled"]), {}, {}
        taken = Counter(totals["taken"])
        transitions = terminal = stuck = 0
        tasks: dict = {"expand": [], "own": []}       # each task's seconds: a level's skew, on record
        for o in owned:
            part_taken, events, stats = o[1], o[2], o[3]
            tasks["own"].append(o[4])
            taken.update(part_taken)
            _merge(state_events, events)
            for stat in stats:
                (t, en, te, st), ev = stat[0], stat[1]
                tasks["expand"].append(stat[2])
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
        chained = self.job.rows and any(len(o) > 6 for o in owned)     # links, made by spark/chain.py
        return self._commit(level + 1, [o[0] for o in owned], state_events, tasks,
                            [c for o in owned if len(o) > 6 for c in o[6]], links=chained)

    def _on_driver(self, found: frozenset, level: int) -> list:
        """The same stages in this process, for a small level."""
        job, n = self.job, self.job.partitions
        routed: list[list] = [[] for _ in range(n)]
        frontier = [kv for chunks in self.held[level] for kv in chunks]
        for owner, value in job.expand(found, frontier):
            routed[owner].append((owner, value))
        outs = [list(job.own(found, i, routed[i] + [(i, ("F", b)) for b in self.held_visited[i]]))
                for i in range(n)]
        self._hold(level + 1, outs)
        return [out[0][1][1] for out in outs]

    # ------------------------------------------------------------ the result

    def _path_to(self, level: int, fp: int) -> tuple[int, list]:
        """(root fingerprint, labels from the root) by walking the links back (spark/paths.py)."""
        from spark.paths import path_to
        return path_to(self, level, fp)

    def _result(self, invariants, keep_going: bool, status: str, reason: str) -> SearchResult:
        self.settle()
        model, totals = self.model, self.totals
        found: dict = {}
        first = None
        for name, v in L.report_order(totals["found"], lambda v: v["level"], lambda v: v["kind"]):
            try:      # the levels and the manifest are data: a path that cannot be followed is no verdict
                root_fp, labels = self._path_to(v["level"], int(v["fp"], 16))
                final = from_data(v["label"], {}) if v["kind"] == "step" else None
                root = self.roots[root_fp][0]
            except (LookupError, ValueError, TypeError, BadData) as exc:
                raise L.UnconfirmedViolation(f"the stored path of the violation of {name} cannot be followed "
                                             f"through the levels ({exc}): not reported") from None
            trace = L.rebuild(model, invariants, root, labels, final, [name], "spark", keep_going)
            found[name] = trace
            first = first or trace
        per_level = [m["states"] for m in self.metas]
        res = SearchResult(VIOLATION if found else status, time.monotonic() - self.start, reason, "spark",
                           counterexamples=found, counterexample=first, distinct_states=sum(per_level),
                           transitions=totals["transitions"], depth=max(0, len(per_level) - 1),
                           states_per_level=per_level, enabled=Counter(totals["enabled"]),
                           taken=Counter(totals["taken"]), terminal_states=totals["terminal"],
                           deadlock_checked=self.job.check_deadlock)
        res.explored_all = status == COMPLETE
        if self.store is not None:       # the checkpoint's bytes, as check reports its own
            try:
                res.disk_bytes = self.levels.fs.du()
            except (SparkGone, CheckpointError):     # the JVM or the store is gone: no figure
                pass
        res.collision_probability = collision_probability(res.distinct_states, res.transitions + len(self.roots))
        return res.judge(invariants)


def _merge(into: dict, events: dict) -> None:
    """Keep, per invariant, the event with the smallest (fingerprint, n-th successor)."""
    for name, key in events.items():
        if name not in into or key[:2] < into[name][:2]:
            into[name] = key
