"""The compiled search with its visited set and its store on disk (`check --visited disk`):
memory bounded by a level, not by every state the search has seen.

The in-memory search keeps a table of every fingerprint and a parent and label for every state
in memory: about 150 bytes a state, so brokers 5 (136 million states) took 20 GB of this 24 GB
machine. This search keeps in memory only the level it expands and the next level's
candidates, and does duplicate detection late (Stern and Dill's, Korf's external-memory BFS):
- a level is expanded with the same compiled loop (search.expand), or on several threads with
  the same rounds (parallel.Rounds: their candidates numbered in frontier order, as one thread
  finds them), into a table of the level's own candidates: a successor met twice in one level
  is kept once, at its first finding, and one of the level expanded or the one before (seeded
  into the table) not at all. The table, the candidates' store and fingerprints take at most a
  share of the memory budget (LEVEL_SHARE; the threads look after each round, so they pass it
  by one round at most, a chunk of the level): when the table holds that many, the candidates
  so far are filtered and become the next level's first states (`_part`), so memory is bounded
  by the budget, not by a level's width (but with max states). The table is sized when empty
  for the seeds and the candidates the last level had a state (`Visited.empty_to`), not grown
  to it. The level, its fingerprints (levelfiles.FpFile) and its candidates are files (the rows
  as narrowed chunks, narrow.py: each column in its span's bits, 29 bytes a row of 324 on
  brokers 4), written and read in order, one chunk in memory at a time;
- at the level's end the candidates are sorted by fingerprint and every earlier level's run
  (verifier/core/runs.py: a file of sorted fingerprints) is read front to back once against
  them; what no run holds is the next level, in the order it was found, so states are numbered
  exactly as the in-memory search numbers them;
- the new states' fingerprints become the level's run, and their links a level's files
  (levelfiles.py): the parent's place in its level (uint32) and the state's place among the
  parent's successors (uint16), 22 bytes a state on disk with the run. A counterexample walks
  the links back, then runs the model forward from the root along those places: the labels the
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

A checkpoint is the search's own files (diskpoint.py). Not yet (`refused`): --dump-graph.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from verifier.core import levels, stop
from verifier.core.exitcodes import InputError
from verifier.core.result import COMPLETE, STOPPED, VIOLATION, SearchResult
from verifier.core.runs import by_fp
from verifier.engines.kernel import STRETCH, Search
from verifier.engines.kernel import search as K
from verifier.engines.kernel.diskpoint import resume
from verifier.engines.kernel.candidates import Candidates
from verifier.engines.kernel.levelfiles import FpFile, LevelFiles
from verifier.engines.kernel.links import path
from verifier.engines.kernel.memory import Buffer, MemoryBudget, release
from verifier.engines.kernel.narrow import Chunk, ChunkFile
from verifier.engines.kernel.visited import Visited
from verifier.engines.kernel.gather import seed as _seed
from verifier.engines.kernel.gather import seed_shared as _seed_shared

LEVEL_SHARE = 4           # a level's table, candidates' store and fingerprints: a quarter of the memory budget
CANDIDATE_BYTES = 48      # a candidate's place in the store (parent, label, place: 32) and fingerprint (16)
CHUNK_ROWS = 1 << 16      # candidates narrowed together (and so a chunk of the next level at most)


def refused(own, settings) -> str:
    """What --visited disk does not do yet, in words (empty: nothing of it is asked)."""
    return ("--visited disk does not take --dump-graph yet: drop it, or use --visited memory"
            if settings.options.graph else "")


class External(Candidates, Search):
    """The levels as narrowed chunks in memory, the visited set and links as files; with
    several threads a level's table is the one table they all claim in (parallel.Rounds), and
    a round's new candidates are numbered in frontier order, as one thread finds them."""

    def __init__(self, model, properties, settings, progress, threads: int = 1):
        super().__init__(model, properties, settings, progress, threads=threads)
        if self.k.max_successors > 0xFFFF:
            raise InputError(f"--visited disk: {self.k.max_successors} successors a state, and a link holds 65,535")
        most = self.budget.limit or 1 << 36
        # the store is a level's candidates: parents, labels, and each one's place among its parent's successors
        self._store = self._store + (Buffer(1 << 16, (), np.int32, most),)
        self.ks = self._store[2].array
        self.taken_by = np.zeros_like(self.taken)        # counted per candidate; self.taken per new state
        self.m = 0                                       # the level's candidates so far
        width, rows = self.k.layout.width, max(CHUNK_ROWS, 2 * self.k.max_successors)
        # a round of the threads: at most this many candidates (its stretches' successors)
        self.round_rows = sum(len(st.rows) for st in self.stretches) if threads > 1 else 0
        self.in_rows = np.zeros((rows, width), dtype=np.int32)     # a frontier chunk widened
        self.out_rows = np.zeros((rows + self.round_rows, width), dtype=np.int32)    # candidates not yet narrowed
        self.out_fp = np.zeros((len(self.out_rows), 2), dtype=np.uint64)
        self.n_out = 0
        self.cand_fp = Buffer(1 << 16, (2,), np.uint64, most)     # every candidate's fingerprint
        self.cands: Optional[ChunkFile] = None           # the candidates narrowed (n_out not yet)
        self.front: Optional[ChunkFile] = None           # the level being expanded, narrowed
        self.front_fp: Optional[FpFile] = None          # the level expanded's fingerprints (a file)
        self.prev_fp = np.zeros((0, 2), dtype=np.uint64)     # the level before's, as many as a seed needs
        self.entries = max(1024, self._entries((self.budget.limit or 1 << 34) // LEVEL_SHARE))
        self.part = self.level_first = 0                 # the next level's parts admitted, its first state
        self.per_state = 0.0       # the last level's candidates a state expanded: the table is sized for them
        self.table_high = 0        # the most slots the level's table has had
        self.each = self.pool.map if threads > 1 else None     # the threads narrow and widen chunks too
        self.next_front: Optional[ChunkFile] = None
        self.next_fp: Optional[FpFile] = None
        self.files: Optional[LevelFiles] = None          # made by run(): in a checkpoint, or a spill directory
        self.starts: list[int] = []                      # each level's first state number
        self.root_rows: dict[int, np.ndarray] = {}

    def _entries(self, share: int) -> int:
        """The candidates and seeds a level's table takes before a part is filtered: the table
        the largest power of two of slots in half the share, at most half full (a round of the
        threads past it, as they look after a round, must not double it: at 33.7 million
        entries the threads' table was 128 million slots, 4.3 GB, for 2.1 of them), and the
        candidates' store in the rest."""
        slots = 1 << max(0, (share // 2 // self.visited.slot_bytes).bit_length() - 1)
        return min(slots // 2 - self.round_rows - self.k.max_successors,
                   (share - slots * self.visited.slot_bytes) // CANDIDATE_BYTES)

    def _visited(self, threads: int, most: int) -> Visited:
        """A level's one table (it grows once, to the level's share, and is emptied each level)."""
        return Visited(1, most=most, shared=threads > 1)

    def close(self) -> None:
        super().close()
        for rows in (self.front, self.cands, self.next_front, self.front_fp, self.next_fp):
            if rows is not None:
                rows.close()
        if self.files is not None:
            self.files.close()

    @property
    def nxt(self):
        """Where a round's candidates go (parallel.Rounds): the rows not yet narrowed."""
        return self.out_rows

    @property
    def nxt_fp(self):
        return self.out_fp

    @property
    def numbered(self) -> int:
        return self.m

    @numbered.setter
    def numbered(self, n: int) -> None:
        self.m = n

    # ---------------------------------------------------------------- the levels
    def run(self) -> SearchResult:
        opts = np.array([int(self.options.keep_going), int(self.options.check_deadlock), -1], dtype=np.int64)
        saver = self.checkpoint
        self.files = LevelFiles(self.budget, None if saver is None else saver.visited)
        self.files.each = self.each
        if self.resume_from is not None:
            resume(self, self.resume_from)
            self.resume_from = None
        else:
            roots = self._roots()
            if roots is None:
                return self._finish(VIOLATION)
            self.root_rows = {i: roots[i].copy() for i in range(len(roots))}
            fps = self._frontier_fp
            self.front, self.front_fp = ChunkFile(self.files.file(0, "rows")), FpFile(self.files)
            self.front_fp.append(fps)
            self._write(self.front, Chunk.of(roots, len(roots)))
            self.files.write_level(0, fps[by_fp(fps)])
            self.starts, self._found_before = [0], self.found_index.copy()
        self.next_report = 0.0
        while len(self.front_fp):
            if saver is not None:
                saver.level_end(self)
            reason = levels.depth_reached(self.limits, self.depth, len(self.front_fp))
            if reason:
                return self._finish(STOPPED, reason)
            base = self._level_base
            ended = self._level(base, opts, self._open())
            if ended is not None:
                return ended
            try:
                s = self._filtered(base)
            except MemoryBudget as exc:
                return self._finish(STOPPED, str(exc))
            self._level_base = self.starts[-1]
            if s:
                self.depth += 1
                self.states_per_level.append(s)
        if saver is not None:
            saver.level_end(self, last=True)
        return self._finish(COMPLETE)

    def _level(self, base: int, opts, opened: tuple) -> Optional[SearchResult]:
        """Expand the level (its states numbered from `base`): None, or the result if the search
        ends in it. With max states in `opts` (a replay) the loop itself stops there."""
        most = self.limits.max_states if opts[2] < 0 else None
        look_at = None if most is None else most - self.n_store     # candidates that could reach it
        off = 0
        for chunk in self._read(self.front):
            rows, fps, pos = chunk.rows_into(self.in_rows, self.each), self.front_fp.read(off, off + chunk.n), 0
            while pos < chunk.n:
                try:
                    status, pos = self._stretch(rows, fps, pos, base + off, opts)
                    if status == K.STOP_NO_CUT:
                        self._filtered(base)
                        return self._finish(VIOLATION)
                    if status in (K.STOP, K.MAX_STATES):
                        why = f"max states {self.limits.max_states} reached" if status == K.MAX_STATES else ""
                        return self._stopped(STOPPED if why else VIOLATION, why, base)
                    if look_at is None and self.ctr[K.C_VISITED] >= self.entries:
                        self._part(base)
                    if look_at is not None and self.m >= look_at:
                        self._flush()
                        keep, _ = self._filter()
                        new = int(keep.sum())
                        if self.n_store + new >= most:
                            return self._replay(base, keep, opened, opts)
                        look_at = self.m + most - self.n_store - new
                    why = stop.reason() if stop.requested() else self._over_time()
                    if why:
                        return self._stopped(STOPPED, why, base)
                except MemoryBudget as exc:
                    return self._stopped(STOPPED, str(exc), base)
                self._report(len(self.front_fp), off + pos)
            off += chunk.n
        return None

    def _stretch(self, rows, fps, pos: int, base: int, opts) -> tuple:
        """Expand rows[pos:] (a stretch): (what ended it, pos), the tables filled and the
        buffers grown or narrowed on the way."""
        if self.threads > 1:
            if self.n_out + self.round_rows > len(self.out_rows):
                self._flush()
            self._frontier_fp = fps                # the rows' fingerprints, as Rounds reads them
            status, pos, self.n_out = self._round(rows, pos, base, self.n_out, opts)
            self._cut = self.m
            return status, pos
        end = min(pos + STRETCH, len(rows))
        status, pos, self.n_out, self.m = K.expand(
            rows, fps, pos, end, base, self.out_rows, self.out_fp, self.n_out, self.parents, self.labels,
            self.m, self.visited.tables[0], self.k.layout.lay, self.k.cv, self.k.plan, self.k.table_args(),
            self.k.out, self.k.labels, self.k.key, self.ctr, self.enabled, self.taken_by, self.state_check,
            self.step_check, self.found_index, self.found_group, self.found_label, opts, self.k.work,
            self.k.params, self.none, self.fps, self.k.step_bad, self.k.reduce, self.ks, *K.twins(self), None)
        self._cut = self.m
        if status == K.NEED_EVENT:
            self.k.tables.fill(self.k.key)
            self.collector.filled()
        elif status == K.GROW:
            if self.n_out + self.k.max_successors > len(self.out_rows):
                self._flush()
            self.visited.counts[0] = int(self.ctr[K.C_VISITED])
            self._room(self.k.max_successors, 0)
            self._grow(0, self.k.max_successors)
        return status, pos

    def _flush(self) -> None:
        """Narrow the candidates not yet narrowed into a chunk (their fingerprints to cand_fp)."""
        n, at = self.n_out, self.m - self.n_out
        if not n:
            return
        self.budget.allow(self._held(), 16 * n + 4 * n * self.k.layout.width, "the level's candidates")
        if self.m > len(self.cand_fp.array):
            self.cand_fp.grow(max(self.m, 2 * len(self.cand_fp.array)), at)
        into, half = self.cand_fp.array, n // 2 if self.each is not None else n
        list((self.each or map)(lambda h: np.copyto(into[at + h[0]:at + h[1]], self.out_fp[h[0]:h[1]]),
                                ((0, half), (half, n))))      # the threads idle else (numpy's copy releases the GIL)
        for lo in range(0, n, CHUNK_ROWS):         # a chunk is at most what a frontier chunk holds
            self._write(self.cands, Chunk.of(self.out_rows[lo:], min(CHUNK_ROWS, n - lo), self.each))
        self.n_out = 0

    def _write(self, rows: ChunkFile, chunk: Chunk) -> None:
        self.budget.allow_disk(chunk.nbytes, "the levels' rows", self.files.dir)
        try:
            rows.append(chunk, self.each)
        except OSError as exc:
            raise self.files.failed("writing a level's rows", exc) from None

    def _read(self, rows: ChunkFile):
        try:
            yield from rows
        except OSError as exc:
            raise self._rows_lost(exc) from None

    def _open(self) -> tuple:
        """A level's (or a part's) start: no candidates, a table of the seeds only, and the
        counters as they are (what `_replay` goes back to)."""
        self.m = self.n_out = 0
        if self.cands is not None:
            self.cands.close()
        self.cands = ChunkFile(self.files.dir / "candidates.rows")
        self._clear_table()
        seeds = self._seeds()
        expected = int(len(self.front_fp) * self.per_state) if self.front_fp is not None else 0
        self.visited.empty_to(0, min(self.entries, sum(map(len, seeds)) + expected))
        self._seen(*seeds)
        return tuple(a.copy() for a in (self.ctr, self.enabled, self.found_index, self.found_group, self.found_label))

    def _seeds(self) -> tuple:
        room = self.entries // 2                     # the other half: the level's candidates
        return self.front_fp.read(0, room), self.prev_fp[:max(0, room - len(self.front_fp))]

    def _part(self, base: int) -> None:
        """The level's table holds its share of the budget: the candidates so far are filtered
        and become the next level's first states (a part; their run is one the candidates
        after are filtered against), and the table starts again. States are numbered in the
        order found, as one filter at the level's end would number them."""
        self._filtered(base, last=False)
        self._open()

    def _seen(self, *fps) -> None:
        """Fingerprints the level's table takes as seen: the level expanded and the one before
        (in this model most successors met before are of those two, and so never become
        candidates to narrow, sort and look up in the runs; as much of them as half the level's
        share of the budget holds: one not seeded is a candidate the runs drop), and a replay's
        candidates. The threads seed halves at once (claims of key 0, which nothing replaces)."""
        self._room(sum(len(f) for f in fps), 0)
        table = self.visited.tables[0]
        for f in fps:
            if self.each is not None and len(f) >= 1 << 16:
                half = len(f) // 2
                self.ctr[K.C_VISITED] += sum(self.each(lambda h: _seed_shared(table, h, self.lost), (f[:half], f[half:])))
            else:
                self.ctr[K.C_VISITED] += _seed(table, f)
        self.visited.counts[0] = int(self.ctr[K.C_VISITED])

    def _clear_table(self) -> None:
        """Empty the level's table of candidates: its pages go back to the OS (so the table takes
        no memory while the level is filtered), or are zeroed where it is not in a reservation."""
        self.ctr[K.C_VISITED] = 0
        self.visited.counts[0] = 0
        whole, table = self.visited._whole[0], self.visited.tables[0]
        self.table_high = max(self.table_high, len(table))     # where a longer table was (empty_to shortens it)
        if whole is None:
            table.fill(0)
        elif not release(whole[:self.table_high]):
            whole[:self.table_high].fill(0)
        scratch = self.visited._scratch[0]             # where the table's growths copied it
        if scratch is not None and self.visited._scratched[0] and release(scratch[:self.visited._scratched[0]]):
            self.visited._scratched[0] = 0

    def _over_time(self) -> str:
        budget = self.limits.time_budget
        return f"time budget {budget:g}s spent" if budget is not None and self._elapsed() > budget else ""

    def _report(self, width: int, done: int) -> None:
        import time
        now = time.monotonic()
        if self.progress and now >= self.next_report:
            self.next_report = now + 0.5
            self.progress(levels.progress(int(self.ctr[K.C_TRANSITIONS]), self.states_per_level, self.depth,
                                          self.m, self._elapsed(), level=width, level_done=done, done=self.n_store))

    def _stopped(self, status: str, reason: str, base: int) -> SearchResult:
        """A stop inside a level: the states it had found by then, the candidates filtered."""
        try:
            s = self._filtered(base)
        except MemoryBudget as exc:
            return self._finish(STOPPED, f"{reason}; {exc}" if reason and reason != str(exc) else str(exc))
        return self._finish(status, reason, cut=s)

    def _replay(self, base: int, keep, opened: tuple, opts) -> SearchResult:
        """Max states is reached inside this level: expand it again from its start, its table
        seeded with the candidates found so far that the runs hold, so that each state the
        loop keeps is new and it stops at the transition the in-memory loop stops at."""
        old = self.cand_fp.array[:len(keep)][~keep].copy()
        for now, then in zip((self.ctr, self.enabled, self.found_index, self.found_group, self.found_label), opened):
            now[:] = then
        self._open()
        self._seen(old)
        exact = opts.copy()
        exact[2] = self.limits.max_states - self.n_store
        ended = self._level(base, exact, opened)
        assert ended is not None, "a replay found fewer new states than the filter"
        return ended

    def _held(self) -> int:
        return (super()._held() + self.cand_fp.ram_bytes + self.prev_fp.nbytes + self.in_rows.nbytes + self.out_rows.nbytes
                + self.out_fp.nbytes)

    def _growth(self, n_next: int, more: int) -> list:
        """(buffer, rows it needs, rows in use) of the candidates' store."""
        store = len(self.parents)
        while self.m + more > store:
            store *= 2
        return [(b, store, self.m) for b in self._store]

    def _grow(self, n_next: int, more: int) -> None:
        super()._grow(n_next, more)
        self.ks = self._store[2].array

    def _spill(self, growth) -> bool:
        moved = super()._spill(growth)
        self.ks = self._store[2].array
        return moved

    # ---------------------------------------------------------------- the result
    def _path(self, index: int) -> tuple[int, list]:
        return path(self, index)

    def _finish(self, status: str, reason: str = "", cut: Optional[int] = None) -> SearchResult:
        """The result; a stop for a bound, a budget or a signal saves the checkpoint of the
        last level's end (diskpoint.py), which then holds what is left on disk."""
        if status == STOPPED and self.checkpoint is not None and not reason.startswith("max states"):
            self.checkpoint.save(self)
        for rows in (self.front, self.cands, self.next_front):       # left on disk: the runs and the links
            if rows is not None:
                rows.close(unlink=rows is not self.front or not self.files.kept)
        res = super()._finish(status, reason, cut)
        res.disk_bytes, res.disk_of = self.files.nbytes, "visited runs and links"
        res.disk_peak_bytes = max(self.files.peak, res.disk_bytes)
        return res
