"""Exhaustive breadth-first search on the compiled kernel (specs/kernel), on one thread or more.

The same search as verifier/engines/bfs, over rows instead of NamedTuples: the model's steps
and the properties run compiled (numba), the visited set is a native fingerprint table, and
Python only drives the levels, fills the controller table when the kernel meets an event it
lacks, reports progress and rebuilds counterexamples by re-running the model along the stored
labels (`levels.rebuild`, which checks them again). Same config, same counts, levels and
shortest counterexamples as `bfs` (tests/verifier/engines/test_kernel_engine.py,
bench/kernel_bench.py). A checkpoint (checkpoint.py: data, never a pickle) carries the search
between processes; a resumed run ends with exactly the counts of an uninterrupted one.
Symmetry reduction is the kernel's own (specs/kernel/symmetry.py: successors come as their
orbits' canonical members); --dump-graph's edges are found again by the graph builder
(verifier/core/rowgraph.py) over the states the search numbered. Rows of several partitions
(specs/kernel/lifted_rows.py) are searched on one thread, in memory. What it does not do,
refused before a run with one line (exit 2): specs.kernel.unsupported.
"""
from __future__ import annotations

import time
from collections import Counter
from typing import Any, Callable, Optional

import numpy as np

from verifier.core import knobs, levels, stop
from verifier.core.knobs import knob
from verifier.core.exitcodes import InputError
from verifier.core.fingerprint import collision_probability
from verifier.core.properties import split
from verifier.core.result import COMPLETE, DEADLOCK, STOPPED, VIOLATION, Progress, SearchResult
from verifier.core.settings import Settings
from verifier.engines.kernel.memory import Budget, Buffer, Collector, MemoryBudget
from verifier.engines.kernel.parallel import Rounds
from verifier.core.rowhash import row_hash
from verifier.engines.kernel.visited import Visited

STRETCH = 20_000          # states per call into the compiled loop (progress, stop requests, budgets)
P_STATES = 32_768         # states per thread and round (parallel.py; 8,192 cost two threads 10%)
P_SUCCESSORS = 8          # a round's buffer: this many successors a state on average (a fuller
                          # stretch is taken again with fewer states)
PIECES = 8                # stretches per thread and round


@knobs.declare("kernel")
class Knobs(knobs.Knobs):
    """The compiled search's own: how many threads expand each level (the same counts,
    levels and counterexamples for any number)."""
    threads: int = knob(1, least=1)
    visited: str = knob("memory", choices=("memory", "disk"))   # disk: external.py, memory bounded by a level
    checkpoint: Any = None     # a checkpoint.Checkpointer, or None
    resume_from: Any = None    # the checkpoint.Saved search to go on from, or None


def refuse(model, properties, settings: Settings) -> None:
    """What the kernel cannot do yet, before anything runs (InputError: one line, exit 2)."""
    from specs.kernel import unsupported
    why = unsupported(model, properties, symmetry=True, knobs=Knobs.of(settings))
    if why:
        raise InputError(why)


def run(model, properties, settings: Settings = Settings(),
        progress: Optional[Callable[[Progress], None]] = None) -> SearchResult:
    """The engine interface: BFS of `model` on the kernel, checking `properties`."""
    from specs import config_label
    from specs.kernel import CACHE
    from verifier.core.compiling import Compiling
    own = Knobs.of(settings)
    refuse(model, properties, settings)
    if own.visited == "disk":
        from verifier.engines.kernel.external import External, refused
        if refused(own, settings):
            raise InputError(refused(own, settings))
        search = External(model, properties, settings, progress, own.threads)
    else:
        search = Search(model, properties, settings, progress, own.threads)
    search.checkpoint, search.resume_from = own.checkpoint, own.resume_from
    say = (lambda text: progress(Progress(0, 0, 0, 0, 0.0, note=text))) if progress else None
    try:
        with Compiling(say, config_label(model.cfg), CACHE) as search.compiling:
            return search.run()
    finally:
        search.close()


class Search(Rounds):
    """The levels of one search; its threads' rounds are parallel.Rounds."""

    def __init__(self, model, properties, settings: Settings, progress, threads: int = 1):
        from specs.kernel.properties import STATE, STEP
        from specs.kernel import rows_of
        self.model, self.properties = model, tuple(properties)
        self.limits, self.options, self.progress = settings.limits, settings.options, progress
        self.k = rows_of(model)         # a Kernel, or specs/kernel/lifted_rows.LiftedRows for several partitions
        self.lifted = getattr(self.k, "lifted", None)
        state_invs, step_invs = split(self.properties)
        self.state_check = sum(1 << STATE.index(p.name) for p in state_invs)
        self.step_check = sum(1 << STEP.index(p.name) for p in step_invs)
        self.slot_names = list(STATE) + list(STEP) + [DEADLOCK]
        width = self.k.layout.width
        self.budget = Budget()
        most = self.budget.limit or 1 << 36               # the bytes any one array could reach
        self.visited = self._visited(threads, most)
        # the store: a state's parent and label (28 bytes), by state number
        self._store = Buffer(1 << 16, (), np.int64, most), Buffer(1 << 16, (5,), np.int32, most)
        self.parents, self.labels = self._store[0].array, self._store[1].array
        # two levels' rows and fingerprints: the frontier's, and the next level's they are written to
        self._levels = [(Buffer(1 << 14, (width,), np.int32, most), Buffer(1 << 14, (2,), np.uint64, most))
                        for _ in range(2)]
        self.collector = Collector()
        self.spilled = False              # the store and a level went to files (memory.Buffer.spill)
        self.ctr, self.enabled, self.taken = (np.zeros(n, dtype=np.int64) for n in (4, len(self.k.plan), len(self.k.plan)))
        self.found_index = np.full(16, -1, dtype=np.int64)
        self.found_group = np.full(16, -1, dtype=np.int64)
        self.found_label = np.full((16, 5), -1, dtype=np.int64)
        self.roots: dict[int, object] = {}
        self.n_store = 0
        self.states_per_level: list[int] = []
        self.depth = 0
        self.start = time.monotonic()
        self.compiling = None             # compiling.Compiling: the seconds numba compiled, not searched
        self.before = 0.0                 # the search's seconds in the processes before (a resumed run)
        self.checkpoint = self.resume_from = None
        self.none = np.full(5, -1, dtype=np.int64)
        self.ks, self.taken_by = np.zeros(0, dtype=np.int32), self.taken   # external.py's differ
        self.fps = np.zeros((self.k.max_successors, 2), dtype=np.uint64)
        self.threads = threads
        if threads > 1:
            from concurrent.futures import ThreadPoolExecutor

            from verifier.engines.kernel.stretch import stretches
            # each thread's share of a round in PIECES stretches: while a stretch waits for its
            # controller events (the fills, in Python), its thread expands another
            stretches(self, threads, P_STATES, P_SUCCESSORS, PIECES)
            self._claims = self.k.max_successors       # the slots a round has room for (parallel.ROOM)
            self.pool = ThreadPoolExecutor(threads)

    def _visited(self, threads: int, most: int) -> Visited:     # a table per thread: they grow at once
        return Visited(threads, most=most, shared=threads > 1)

    def close(self) -> None:
        self.collector.close()
        if self.threads > 1:
            self.pool.shutdown()

    # ---------------------------------------------------------------- the levels
    def run(self) -> SearchResult:
        from verifier.engines.kernel import search as K
        opts = np.array([int(self.options.keep_going), int(self.options.check_deadlock),
                         -1 if self.limits.max_states is None else self.limits.max_states], dtype=np.int64)
        start = (0, 0)              # where the first level's expansion starts: (pos, n_next)
        if self.resume_from is not None:
            from verifier.engines.kernel.restore import restore
            restore(self, self.resume_from)
            frontier, start = self._levels[0][0].array[:len(self._frontier_fp)], self._resumed_at()
        else:
            frontier = self._roots()
        if frontier is None:
            return self._finish(VIOLATION)
        next_report = time.monotonic() + 0.5
        while len(frontier):
            reason = levels.depth_reached(self.limits, self.depth, len(frontier))
            if reason:
                self._save(0, 0)
                return self._finish(STOPPED, reason)
            base = self._level_base
            (pos, n_next), start = start, (0, 0)
            while pos < len(frontier):
                try:
                    status, pos, n_next = self._stretch(frontier, pos, base, n_next, opts)
                except MemoryBudget as exc:        # states kept up to the growth it refused
                    return self._finish(STOPPED, str(exc), cut=self._cut)
                if status == K.STOP:
                    return self._finish(VIOLATION, cut=n_next)
                elif status == K.STOP_NO_CUT:
                    return self._finish(VIOLATION)
                elif status == K.MAX_STATES:
                    return self._finish(STOPPED, f"max states {self.limits.max_states} reached", cut=n_next)
                if stop.requested():
                    self._save(pos, n_next)
                    return self._finish(STOPPED, stop.reason(), cut=n_next)
                now = time.monotonic()
                if now >= next_report:
                    next_report = now + 0.5
                    if self.limits.time_budget is not None and self._elapsed() > self.limits.time_budget:
                        self._save(pos, n_next)
                        return self._finish(STOPPED, f"time budget {self.limits.time_budget:g}s spent", cut=n_next)
                    if self.progress:
                        self.progress(levels.progress(int(self.ctr[K.C_TRANSITIONS]), self.states_per_level,
                                                      self.depth, n_next, self._elapsed(), level=len(frontier),
                                                      level_done=pos, done=self.n_store))
            if not n_next:                  # the last level: a resume answers at once
                self._save(len(frontier), 0)
            self._level_base = base + len(frontier)
            # the next level is read where it was written; the old frontier's buffers take the one after
            self._levels.reverse()
            frontier, self._frontier_fp = self._levels[0][0].array[:n_next], self._levels[0][1].array[:n_next]
            if n_next:
                self.depth += 1
                self.states_per_level.append(n_next)
                if self.checkpoint is not None and self.checkpoint.due():
                    self._save(0, 0)
        return self._finish(COMPLETE)

    def _save(self, pos: int, n_next: int) -> None:
        """A checkpoint at a consistent point: frontier[pos:] not expanded, n_next rows of the
        next level written."""
        if self.checkpoint is not None:
            self.checkpoint.save(self, pos, n_next, self._elapsed())

    def _resumed_at(self) -> tuple:
        h = self.resume_from.head
        self.resume_from = None            # its columns are in the search's own arrays now
        return h["pos"], h["n_next"]

    def _stretch(self, frontier, pos: int, base: int, n_next: int, opts) -> tuple:
        """Expand on from frontier[pos] (a stretch, or a round of the threads): (status, pos,
        n_next), the tables filled and the buffers grown on the way."""
        from verifier.engines.kernel import search as K
        self._cut = n_next                 # the next level's states so far, if a growth is refused
        if self.threads > 1:
            return self._round(frontier, pos, base, n_next, opts)
        end = min(pos + STRETCH, len(frontier))
        status, pos, n_next, self.numbered = K.expand(
            frontier, self._frontier_fp, pos, end, base, self.nxt, self.nxt_fp, n_next, self.parents, self.labels,
            self.numbered, self.visited.tables[0],
            self.k.layout.lay, self.k.cv, self.k.plan, self.k.table_args(), self.k.out,
            self.k.labels, self.k.key, self.ctr, self.enabled, self.taken_by, self.state_check,
            self.step_check, self.found_index, self.found_group, self.found_label, opts, self.k.work,
            self.k.params, self.none, self.fps, self.k.step_bad, self.k.reduce, self.ks, *K.twins(self), self.lifted)
        self._cut = n_next
        if status == K.NEED_EVENT:
            self.k.tables.fill(self.k.key)
            self.collector.filled()
        elif status == K.NEED_ROOM:           # a state of several partitions with more successors than that
            self.k.size(2 * self.k.max_successors)
            self.fps = np.zeros((self.k.max_successors, 2), dtype=np.uint64)
        elif status == K.GROW:
            self.visited.counts[0] = int(self.ctr[K.C_VISITED])
            self._room(self.k.max_successors, n_next)
            self._grow(n_next, self.k.max_successors)
        return status, pos, n_next

    def _roots(self):
        """The initial rows (checked), or None if a root violates a property and that stops."""
        from verifier.engines.kernel import search as K
        rows, fps = [], []
        for s, c in levels.roots(self.model).values():
            row = self.k.pack(c)
            index = self.n_store
            self.parents[index] = -1
            self.n_store += 1
            self.roots[index] = s
            fps.append(tuple(map(np.uint64, row_hash(row))))   # (Python ints below 2**63 would be typed int64)
            self.visited.add(*fps[-1])
            self.ctr[K.C_VISITED] += 1
            rows.append(row)
            bad = K.root_violations(row, self.k.layout.lay, self.k.tables.facts, self.state_check,
                                    self.lifted[0] if self.lifted else 1)
            if bad:
                K._record(self.found_index, self.found_group, self.found_label, self.ctr, bad, 0, index,
                          np.full(5, -1, dtype=np.int64))
                if not self.options.keep_going:
                    self.states_per_level = [len(rows)]
                    return None
        self.states_per_level = [len(rows)]
        self._level_base = 0
        for buffer, values in zip(self._levels[0], (rows, fps)):
            buffer.grow(len(values), 0)
            buffer.array[:len(values)] = values
        self._frontier_fp = self._levels[0][1].array[:len(fps)]
        return self._levels[0][0].array[:len(rows)]

    def _held(self) -> int:
        """The bytes of memory the search's large arrays hold (not those spilled to files)."""
        stretches = sum(st.nbytes for st in getattr(self, "stretches", ()))
        return (sum(b.ram_bytes for b in self._store) + self.visited.nbytes
                + sum(b.ram_bytes for level in self._levels for b in level) + stretches)

    def _room(self, more: int, n_next: int) -> None:
        """Room for `more` new fingerprints in the visited set, within the memory budget (the
        store and the next level, `n_next` rows of it written, spilled to files if that lets it)."""
        self._within(lambda: self.visited.growth(more), "the visited set", self._growth(n_next, 0))
        self.visited.room(more, self.pool.map if self.threads > 1 else map)

    def _growth(self, n_next: int, more: int) -> list:
        """(buffer, rows it needs, rows of it in use) of the store and the next level, for
        `more` new states."""
        nxt = self._levels[1]
        store, level = len(self.parents), len(nxt[0].array)
        while self.n_store + more > store:
            store *= 2
        while n_next + more > level:
            level *= 2
        return [(b, store, self.n_store) for b in self._store] + [(b, level, n_next) for b in nxt]

    def _grow(self, n_next: int, more: int) -> None:
        """Room for `more` new states in the store and the next level, within the memory budget
        (spilled to files when memory would not do, within the disk's)."""
        growth = self._growth(n_next, more)

        def new_bytes(spilled: bool) -> int:
            return sum((rows - len(b.array)) * b.row_bytes for b, rows, _ in growth if b.spilled == spilled)
        self._within(lambda: new_bytes(False), "the store and the next level", growth)
        if any(b.spilled for b, _, _ in growth):
            self.budget.allow_disk(new_bytes(True), "the store and the next level")
        for b, rows, keep in growth:
            b.grow(rows, keep)
        self.parents, self.labels = self._store[0].array, self._store[1].array

    def _within(self, more: Callable[[], int], what: str, growth: list) -> None:
        """Ask the memory budget for more() new bytes of `what`; if it refuses, move the store and
        the next level (`growth`) to files and ask again (MemoryBudget if still refused)."""
        try:
            self.budget.allow(self._held(), more(), what)
        except MemoryBudget as exc:
            if self._spill(growth):
                self.budget.allow(self._held(), more(), what)
            elif all(b.spilled for b, _, _ in growth):
                raise
            elif not self.budget.spill:
                raise MemoryBudget(f"{exc}; the store and the next level may not move to files "
                                   "(KRAFT_VERIFY_SPILL is empty)") from None
            else:
                raise MemoryBudget(f"{exc}; the store and the next level could not move to files in "
                                   f"{self.budget.spill}") from None

    def _spill(self, growth) -> bool:
        """Move the store and the next level to files, as the memory budget refused a growth:
        whether any moved (the frontier stays: the level being expanded reads it)."""
        most = self.budget.limit or 1 << 36
        before = sum(b.spilled for b, _, _ in growth)
        for b, _, keep in growth:
            if not b.spilled and self.budget.spill:
                b.spill(self.budget.spill, keep, 4 * most)
        self.parents, self.labels = self._store[0].array, self._store[1].array
        moved = sum(b.spilled for b, _, _ in growth) > before
        self.spilled |= moved
        return moved

    @property
    def numbered(self) -> int:
        """The states the store holds (external.py's: a level's candidates)."""
        return self.n_store

    @numbered.setter
    def numbered(self, n: int) -> None:
        self.n_store = n

    @property
    def nxt(self):
        """The next level's rows (written by the expansion)."""
        return self._levels[1][0].array

    @property
    def nxt_fp(self):
        return self._levels[1][1].array

    def _elapsed(self) -> float:
        """The search's own seconds: numba's compiles on the way are not the search's."""
        return (self.before + time.monotonic() - self.start
                - (self.compiling.seconds if self.compiling is not None else 0.0))

    # ---------------------------------------------------------------- the result
    def _path(self, index: int) -> tuple[int, list]:
        labels = []
        while self.parents[index] >= 0:
            labels.append(self.k.label(self.labels[index]))
            index = int(self.parents[index])
        return index, labels[::-1]

    def _finish(self, status: str, reason: str = "", cut: Optional[int] = None) -> SearchResult:
        names = self.model.action_names
        if cut is not None:
            self.states_per_level.append(cut)
        enabled = Counter({names[a]: int(n) for a, n in enumerate(self.enabled) if n})
        taken = Counter({names[a]: int(n) for a, n in enumerate(self.taken) if n})
        transitions = int(self.ctr[0])
        found = self._found()
        res = SearchResult(VIOLATION if found else status, self._elapsed(), reason, "kernel",
                           distinct_states=self.n_store, transitions=transitions, depth=self.depth,
                           states_per_level=list(self.states_per_level), enabled=enabled, taken=taken,
                           terminal_states=int(self.ctr[1]), deadlock_checked=self.options.check_deadlock)
        res.explored_all = status == COMPLETE
        res.counts["compile_seconds"] = round(self.compiling.seconds if self.compiling is not None else 0.0, 1)
        if self.spilled:
            res.warnings.append(f"memory ran short: the store and the levels went to files in {self.budget.spill} "
                                "(set KRAFT_VERIFY_SPILL for another disk); the answers are the same, the speed is "
                                "the disk's where the OS had to read them back")
        levels.attach_traces(res, found, self._path, self.roots, self.model, self.properties, "kernel",
                             self.options.keep_going)
        res.store_bytes = int(self.parents.nbytes + self.labels.nbytes + self.visited.nbytes)
        if self.options.graph:             # the search keeps no edges: the graph builder finds them again
            if self.n_store <= levels.GRAPH_LIMIT:
                from verifier.core.rowgraph import state_graph
                res.graph = state_graph(self.k, self.model, self.n_store, transitions, self.roots,
                                        {v[0] for v in found.values()})
            else:
                res.graph_note = f"graph not written: {self.n_store} states > {levels.GRAPH_LIMIT}"
        res.collision_probability = collision_probability(self.n_store, transitions + len(self.roots))
        return res.judge(self.properties)

    def _found(self) -> dict:
        """invariant -> (state number, names found with it, final label), in the order found and,
        within one find, in the order the properties were given (as bfs records them)."""
        order = {p.name: k for k, p in enumerate(self.properties)}
        order[DEADLOCK] = len(order)
        groups: dict[int, list] = {}
        for slot, name in enumerate(self.slot_names):
            if self.found_index[slot] >= 0:
                groups.setdefault(int(self.found_group[slot]), []).append(slot)
        found = {}
        for group in sorted(groups):
            slots = sorted(groups[group], key=lambda s: order[self.slot_names[s]])
            names = tuple(self.slot_names[s] for s in slots)
            code = self.found_label[slots[0]]
            final = None if code[0] < 0 else self.k.label(code)
            for name in names:
                found[name] = (int(self.found_index[slots[0]]), names, final)
        return found
