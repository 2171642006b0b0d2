"""The compiled search with its visited set and its store on disk (`check --visited disk`):
memory bounded by a level, not by every state the search has seen.

The in-memory search keeps a table of every fingerprint and a parent and label for every state
in memory: about 150 bytes a state, so brokers 5 (136 million states) took 20 GB of this 24 GB
machine. This search keeps in memory only the level it expands and the next level's
candidates, and does duplicate detection late (Stern and Dill's, Korf's external-memory BFS):
- a level is expanded with the same compiled loop (search.expand), into a table of the level's
  own candidates: a successor met twice in one level is kept once, at its first finding;
- at the level's end the candidates are sorted by fingerprint and every earlier level's run
  (verifier/core/runs.py: a file of sorted fingerprints) is read front to back once against
  them; what no run holds is the next level, in the order it was found, so states are numbered
  exactly as the in-memory search numbers them;
- the new states' fingerprints become the level's run, and their links a level's files: the
  parent's place in its level (uint32) and the state's place among the parent's successors
  (uint16), 22 bytes a state on disk with the run. A counterexample walks the links back and
  then runs the model forward from the root along those places, which gives the labels the
  in-memory search would have stored (levels.rebuild checks them again).

Why the verdicts are the in-memory search's: the properties are judged in the same loop, in the
same order. A state property is judged on each of a level's candidates, also on one an earlier
level holds; but such a state was judged when it was first found, and a property it violated
would already be recorded (and then no longer asked for), so the first record of a property is
always of a new state (`_admit` checks it). A stop inside a level (a violation, a budget, a
signal) filters the candidates found so far, so it reports the states the in-memory search had
at that transition. Max states needs the exact transition where the count is reached: when the
candidates could reach it, the level is filtered; once it is reached, the level is expanded again
from its start with the table seeded with the candidates the runs hold, so that every state the
loop keeps is new and it stops where the in-memory loop stops (`_replay`).

Not yet (refused in one line, `refused`): several threads, checkpoints, --dump-graph.
"""
from __future__ import annotations

import bisect
import errno
import shutil
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np
from numba import njit

from verifier.core import levels, stop
from verifier.core.exitcodes import InputError
from verifier.core.machine import tree_bytes
from verifier.core.result import COMPLETE, STOPPED, VIOLATION, SearchResult
from verifier.core.runs import by_fp, drop_seen_file, merge_files, write_run
from verifier.engines.kernel import Search
from verifier.engines.kernel.memory import Buffer, MemoryBudget
from verifier.engines.kernel.visited import visit

STATE_SLOTS = 10          # search.py's found slots 0-9: the state properties
MERGE = 4                 # the newest two runs are merged while the older is at most this times the newer


class StoreLost(MemoryBudget):
    """A level's file is gone or not the size written: the search cannot go on (exit 3)."""


@njit(cache=True, _nrt=False)
def _compact(rows, fps, keep) -> int:
    """Move the rows (and fingerprints) `keep` marks to the front, in order: how many."""
    n = 0
    for i in range(len(keep)):
        if keep[i]:
            if n != i:
                for j in range(rows.shape[1]):
                    rows[n, j] = rows[i, j]
                fps[n, 0], fps[n, 1] = fps[i, 0], fps[i, 1]
            n += 1
    return n


@njit(cache=True, _nrt=False)
def _seed(table, fps) -> None:
    for i in range(len(fps)):
        visit(table, fps[i, 0], fps[i, 1])


def refused(own, settings) -> str:
    """What --visited disk does not do yet, in words (empty: nothing of it is asked)."""
    asked = [what for what, on in (("several threads", own.threads > 1), ("--dump-graph", settings.options.graph),
                                   ("a checkpoint", own.checkpoint is not None or own.resume_from is not None)) if on]
    return f"--visited disk does not take {' or '.join(asked)} yet: drop it, or use --visited memory" if asked else ""


class External(Search):
    """One thread's levels with the visited set and the store as files in one directory."""

    def __init__(self, model, properties, settings, progress):
        super().__init__(model, properties, settings, progress, threads=1)
        if self.k.max_successors > 0xFFFF:
            raise InputError(f"--visited disk: {self.k.max_successors} successors a state, and a link holds 65,535")
        most = self.budget.limit or 1 << 36
        # the store is a level's candidates: parents, labels, and each one's place among its parent's successors
        self._store = self._store + (Buffer(1 << 16, (), np.int32, most),)
        self.ks = self._store[2].array
        self.taken_by = np.zeros_like(self.taken)        # counted per candidate; self.taken per new state
        self.m = 0
        self.dir = Path(tempfile.mkdtemp(prefix="kraft-verify-visited-", dir=self.budget.spill or None))
        self.starts: list[int] = []                      # each level's first state number
        self.runs: list[tuple] = []                      # the visited runs: (path, fingerprints), oldest first
        self.merges = 0
        self.root_rows: dict[int, np.ndarray] = {}

    def close(self) -> None:
        super().close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def numbered(self) -> int:
        return self.m

    @numbered.setter
    def numbered(self, n: int) -> None:
        self.m = n

    # ---------------------------------------------------------------- the levels
    def run(self) -> SearchResult:
        from verifier.engines.kernel import search as K
        opts = np.array([int(self.options.keep_going), int(self.options.check_deadlock), -1], dtype=np.int64)
        frontier = self._roots()
        if frontier is None:
            return self._finish(VIOLATION)
        self.root_rows = {i: frontier[i].copy() for i in range(len(frontier))}
        self._write_level(0, self._frontier_fp[by_fp(self._frontier_fp)], None, None)
        self.starts, self._found_before = [0], self.found_index.copy()
        most = self.limits.max_states
        next_report = 0.0
        while len(frontier):
            reason = levels.depth_reached(self.limits, self.depth, len(frontier))
            if reason:
                return self._finish(STOPPED, reason)
            base = self._level_base
            opened = self._open()
            pos = n_next = 0
            look_at = None if most is None else most - self.n_store    # candidates that could reach it
            while pos < len(frontier):
                try:
                    status, pos, n_next = self._stretch(frontier, pos, base, n_next, opts)
                    if status == K.STOP:
                        return self._stopped(VIOLATION, "", n_next, base)
                    if status == K.STOP_NO_CUT:
                        self._filtered(n_next, base)
                        return self._finish(VIOLATION)
                    if look_at is not None and n_next >= look_at:
                        keep, _ = self._filter(n_next)
                        new = int(keep.sum())
                        if self.n_store + new >= most:
                            return self._replay(frontier, base, keep, opened, opts)
                        look_at = n_next + most - self.n_store - new
                    why = stop.reason() if stop.requested() else self._over_time()
                    if why:
                        return self._stopped(STOPPED, why, n_next, base)
                except MemoryBudget as exc:
                    return self._stopped(STOPPED, str(exc), self._cut, base)
                next_report = self._report(next_report, len(frontier), pos, n_next)
            try:
                s = self._filtered(n_next, base)
            except MemoryBudget as exc:
                return self._finish(STOPPED, str(exc))
            self._level_base = self.starts[-1]
            self._levels.reverse()
            frontier, self._frontier_fp = self._levels[0][0].array[:s], self._levels[0][1].array[:s]
            if s:
                self.depth += 1
                self.states_per_level.append(s)
        return self._finish(COMPLETE)

    def _open(self) -> tuple:
        """A level's start: an empty table of its candidates, and the counters as they are (what
        `_replay` goes back to)."""
        from verifier.engines.kernel import search as K
        self.m = 0
        self.ctr[K.C_VISITED] = 0
        self.visited.counts[0] = 0
        self.visited.tables[0].fill(0)
        return tuple(a.copy() for a in (self.ctr, self.enabled, self.found_index, self.found_group, self.found_label))

    def _over_time(self) -> str:
        budget = self.limits.time_budget
        return f"time budget {budget:g}s spent" if budget is not None and self._elapsed() > budget else ""

    def _report(self, next_report: float, width: int, pos: int, n_next: int) -> float:
        import time
        from verifier.engines.kernel import search as K
        now = time.monotonic()
        if self.progress and now >= next_report:
            self.progress(levels.progress(int(self.ctr[K.C_TRANSITIONS]), self.states_per_level, self.depth,
                                          n_next, self._elapsed(), level=width, level_done=pos, done=self.n_store))
            return now + 0.5
        return next_report

    def _stopped(self, status: str, reason: str, n_next: int, base: int) -> SearchResult:
        """A stop inside a level: the states it had found by then, the candidates filtered."""
        try:
            s = self._filtered(n_next, base)
        except MemoryBudget as exc:
            return self._finish(STOPPED, f"{reason}; {exc}" if reason and reason != str(exc) else str(exc))
        return self._finish(status, reason, cut=s)

    def _replay(self, frontier, base: int, keep, opened: tuple, opts) -> SearchResult:
        """Max states is reached inside this level: expand it again from its start, its table
        seeded with the candidates found so far that the runs hold, so that each state the
        loop keeps is new and it stops at the transition the in-memory loop stops at."""
        from verifier.engines.kernel import search as K
        old = self.nxt_fp[:len(keep)][~keep].copy()
        for now, then in zip((self.ctr, self.enabled, self.found_index, self.found_group, self.found_label), opened):
            now[:] = then
        self._open()
        self._room(len(old), 0)
        _seed(self.visited.tables[0], old)
        self.ctr[K.C_VISITED] = self.visited.counts[0] = len(old)
        exact = opts.copy()
        exact[2] = self.limits.max_states - self.n_store
        pos = n_next = 0
        while True:
            status, pos, n_next = self._stretch(frontier, pos, base, n_next, exact)
            if status in (K.MAX_STATES, K.STOP):
                self._admit(np.ones(n_next, dtype=np.bool_), None, n_next, base)
                reason = f"max states {self.limits.max_states} reached" if status == K.MAX_STATES else ""
                return self._finish(STOPPED if status == K.MAX_STATES else VIOLATION, reason, cut=n_next)
            if status == K.STOP_NO_CUT:
                self._admit(np.ones(n_next, dtype=np.bool_), None, n_next, base)
                return self._finish(VIOLATION)
            assert pos < len(frontier), "a replay found fewer new states than the filter"

    # ---------------------------------------------------------------- the candidates
    def _filter(self, n: int) -> tuple:
        """(keep, order): which of the first n candidates no earlier level holds, and the
        candidates in fingerprint order."""
        fp = self.nxt_fp[:n]
        order = by_fp(fp)
        keep = np.ones(n, dtype=np.bool_)
        for path, count in self.runs:
            self._check_run(path, count)
            try:
                drop_seen_file(fp, order, keep, str(path), count)
            except (OSError, ValueError) as exc:
                raise StoreLost(f"a visited run cannot be read ({exc}): the search cannot go on without it") from None
        return keep, order

    def _check_run(self, path: Path, count: int) -> None:
        """StoreLost unless the run at `path` is there and as long as written."""
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise StoreLost(f"a visited run cannot be read ({exc}): the search cannot go on without it "
                            f"(was {self.dir} removed?)") from None
        if size != 16 * count:
            raise StoreLost(f"the visited run {path} holds {size / 16:g} fingerprints, not the {count} written: "
                            "another process changed it, and the search cannot go on")

    def _add_run(self, path: Path, count: int) -> None:
        """Keep a level's run, and merge the newest runs while the older of the last two is at
        most MERGE times the newer: the runs' sizes then fall geometrically, so there are few
        (each level reads every run) and a fingerprint is rewritten a few times only."""
        self.runs.append((path, count))
        while len(self.runs) > 1 and self.runs[-2][1] <= MERGE * self.runs[-1][1]:
            (older, n_old), (newer, n_new) = self.runs[-2:]
            for p, n in self.runs[-2:]:
                self._check_run(p, n)
            self.budget.allow_disk(16 * (n_old + n_new), "the visited runs")
            self.merges += 1
            merged = self.dir / f"merged-{self.merges:05d}.run"
            try:
                count = merge_files((str(older), n_old), (str(newer), n_new), str(merged))
            except (OSError, ValueError) as exc:
                if getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
                    raise MemoryBudget(f"disk full: merging the visited runs in {self.dir}") from None
                raise StoreLost(f"merging the visited runs in {self.dir} failed ({exc})") from None
            older.unlink()
            newer.unlink()
            self.runs[-2:] = [(merged, count)]

    def _filtered(self, n: int, base: int) -> int:
        keep, order = self._filter(n)
        return self._admit(keep, order, n, base)

    def _admit(self, keep, order, n: int, base: int) -> int:
        """Number the candidates `keep` marks as the next level's states, in the order found:
        their run and links to the disk, their rows to the front of the next level."""
        kept = np.flatnonzero(keep)
        s = len(kept)
        for slot in range(STATE_SLOTS):
            at = int(self.found_index[slot])
            if at >= 0 and self._found_before[slot] < 0:
                rank = int(np.searchsorted(kept, at))
                if rank >= s or kept[rank] != at:
                    raise AssertionError("a state property's first violation is of a state seen before")
                self.found_index[slot] = self.n_store + rank
        self.taken += np.bincount(self.labels[kept, 0], minlength=len(self.taken))[:len(self.taken)]
        fp = self.nxt_fp[:n]
        run = fp[order[keep[order]]] if order is not None else fp[kept][by_fp(fp[kept])]
        self._write_level(len(self.starts), run, (self.parents[kept] - base).astype("<u4"),
                          self.ks[kept].astype("<u2"))
        _compact(self.nxt, self.nxt_fp, keep)
        self.starts.append(self.n_store)
        self.n_store += s
        self._found_before = self.found_index.copy()
        return s

    def _file(self, level: int, what: str) -> Path:
        return self.dir / f"level-{level:05d}.{what}"

    def _write_level(self, level: int, run, parents, ks) -> None:
        """A level's run and links to the disk, within the disk's budget (MemoryBudget if not)."""
        parts = {"run": run} if parents is None else {"run": run, "parent": parents, "k": ks}
        self.budget.allow_disk(sum(a.nbytes for a in parts.values()), "the visited runs")
        try:
            for what, a in parts.items():
                if what == "run":
                    write_run(str(self._file(level, what)), a)
                else:
                    a.tofile(str(self._file(level, what)))
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise MemoryBudget(f"disk full: writing level {level}'s visited run in {self.dir}") from None
            raise StoreLost(f"writing level {level}'s visited run in {self.dir} failed ({exc})") from None
        self._add_run(self._file(level, "run"), len(run))

    def _growth(self, n_next: int, more: int) -> list:
        """(buffer, rows it needs, rows in use) of the candidates' store and the next level."""
        nxt = self._levels[1]
        store, level = len(self.parents), len(nxt[0].array)
        while self.m + more > store:
            store *= 2
        while n_next + more > level:
            level *= 2
        return [(b, store, self.m) for b in self._store] + [(b, level, n_next) for b in nxt]

    def _grow(self, n_next: int, more: int) -> None:
        super()._grow(n_next, more)
        self.ks = self._store[2].array

    def _spill(self, growth) -> bool:
        moved = super()._spill(growth)
        self.ks = self._store[2].array
        return moved

    # ---------------------------------------------------------------- the result
    def _path(self, index: int) -> tuple[int, list]:
        """The root and labels of state `index`: its links back to a root, then the model run
        forward along them."""
        places = []
        level = bisect.bisect_right(self.starts, index) - 1
        while level > 0:
            at = index - self.starts[level]
            parent = np.fromfile(self._file(level, "parent"), dtype="<u4", count=1, offset=4 * at)[0]
            places.append(int(np.fromfile(self._file(level, "k"), dtype="<u2", count=1, offset=2 * at)[0]))
            index = self.starts[level - 1] + int(parent)
            level -= 1
        return index, self._labels_along(self.root_rows[index], places[::-1])

    def _labels_along(self, row, places: list) -> list:
        from specs.kernel.events import MISS
        from specs.kernel.properties import steps_then_canonical
        from specs.kernel.successors import BOUNDED, successors
        k, labels = self.k, []
        for place in places:
            while True:
                tables = k.table_args()
                n = successors(row, k.layout.lay, k.cv, k.plan, tables, BOUNDED, -1, k.out, k.labels, k.key,
                               k.work, k.params)
                if n != MISS and k.reduce is not None:
                    n = steps_then_canonical(row, k.out, k.labels, n, k.layout.lay, k.cv, tables, k.key, k.work,
                                             self.step_check, k.step_bad, 0)
                if n != MISS:
                    break
                k.tables.fill(k.key)
            labels.append(k.label(k.labels[place]))
            row = k.out[place].copy()
        return labels

    def _finish(self, status: str, reason: str = "", cut: Optional[int] = None) -> SearchResult:
        res = super()._finish(status, reason, cut)
        res.disk_bytes, res.disk_of = tree_bytes(str(self.dir)), "visited runs and links"
        return res
