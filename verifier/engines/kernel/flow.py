"""A round of the threads (parallel.py) as one flow of jobs, not three phases with a wait between.

The phases of a round were expand every stretch, wait; settle every stretch, wait; number every
stretch, wait. At each wait one thread sat idle while the other finished the round's last
stretch: the largest part of the two threads' shortfall against two processes (issue 58's
0.9x). Their order only needs:
- settle(t) once stretches 0..t are expanded: a successor's discovery key is replaced only by a
  smaller one, which a stretch before it or the stretch itself hands out;
- number(t) once stretches 0..t are settled, none of them holding something to take in order
  (a violation of an open property, a deadlock), no max states, and room in the store and the
  next level for every state the round can keep (its stretches' candidates, or their buffers'
  room where not yet expanded): a growth moves the arrays, so a round that numbers a stretch
  early never grows, and a refused growth stops the search where it stopped before. The
  stretches not numbered so are numbered or merged after the round, as before.
So each job is handed to the pool as soon as those hold: a thread that ends its last expansion
settles and numbers the stretches before it while the other still expands. The pool takes jobs
in the order given, so a round's expansions come before its other jobs. A round that is undone
(a stretch's buffers or table share ran out) waits for every job it gave and is undone as
before (the numbering it did lies past every count, and is written again)."""
from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, wait

from verifier.engines.kernel.search import DONE


class Flow:
    """One round's jobs: `run` hands them to the pool and returns each stretch's
    (why, its end, successors, candidates); `settled` and `numbered` say how far it got."""

    def __init__(self, search, frontier, spans, shared, settle, number, room):
        self.s, self.frontier, self.spans, self.shared = search, frontier, spans, shared
        self.settle, self.number, self.room = settle, number, room
        n = len(spans)
        self.his, self.used, self.ncand, self.why = [hi for _, hi in spans], [0] * n, [0] * n, [DONE] * n
        self.expanded, self.is_settled = [False] * n, [False] * n
        self.settled = 0            # stretches 0..settled-1 settled
        self.numbered = 0           # stretches 0..numbered-1 numbered early (their jobs all ended by run's end)
        self.ordered = False        # a settled stretch holds something to take in order
        self.new = [0] * n          # each settled stretch's new states
        self.running: dict = {}
        self._settling = 0          # the next stretch to settle

    def _start(self, t: int, retry: bool) -> None:
        st, s = self.s.stretches[t], self.s
        job = s.pool.submit(st.expand, self.frontier, s._frontier_fp, self.spans[t][0], self.his[t], retry,
                            self.used[t], self.ncand[t], self.shared, s.step_check, s.state_check,
                            bool(s.options.check_deadlock))
        self.running[job] = ("expand", t)

    def run(self) -> list:
        for st in self.s.stretches[:len(self.spans)]:
            st.claimed[:] = 0
        for t in range(len(self.spans)):
            self._start(t, False)
        while self.running:
            done, _ = wait(self.running, return_when=FIRST_COMPLETED)
            for job in done:
                job.result()
            for job in sorted(done, key=lambda j: self.running[j][1]):
                what, t = self.running.pop(job)
                if what == "expand":
                    self._expanded(t)
                elif what == "settle":
                    self.ordered |= bool(job.result())
                    self.new[t] = int(self.s.stretches[t].sums[0])
                    self.is_settled[t] = True
                    while self.settled < len(self.spans) and self.is_settled[self.settled]:
                        self.settled += 1
            self._hand_out()
        return [(self.why[t], self.his[t], self.used[t], self.ncand[t]) for t in range(len(self.spans))]

    def _expanded(self, t: int) -> None:
        """A stretch's expansion ended: its controller events filled (the algebra, in Python)
        and its deferred states expanded again, or it is expanded. Where the table's facts
        could move (specs/kernel/tables.py, `fits`), a fill waits for every thread first."""
        st = self.s.stretches[t]
        ended, _, self.used[t], self.ncand[t], deferred = st.result
        if ended != DONE:
            self.why[t] = ended
            return
        if deferred:
            tables = self.s.k.tables
            if not tables.fits(deferred):       # the facts may move: let no thread read them
                wait(self.running)
            for k in range(deferred):
                tables.fill(st.misses[k])       # nothing for a key another stretch filled
            self.s.collector.filled()
            self._start(t, True)
            return
        self.expanded[t] = True

    def _most(self, t: int) -> int:
        """The most new states the round can have if stretch t is numbered now: those of 0..t,
        and every candidate of the stretches after it (their room, where not yet expanded)."""
        after = range(t + 1, len(self.spans))
        return sum(self.new[:t + 1]) + sum(self.ncand[s] if self.expanded[s] else len(self.s.stretches[s].rows)
                                          for s in after)

    def _hand_out(self) -> None:
        """Settle and number every stretch whose jobs before it have ended (none, in a round
        that is to be undone)."""
        if any(w != DONE for w in self.why):
            return
        n = len(self.spans)
        while self._settling < n and self.expanded[self._settling]:
            t = self._settling
            self.running[self.s.pool.submit(self.settle, t)] = ("settle", t)
            self._settling += 1
        if self.ordered:
            return
        while self.numbered < self.settled and self.room(self._most(self.numbered)):
            t = self.numbered
            self.running[self.s.pool.submit(self.number, t, sum(self.new[:t]))] = ("number", t)
            self.numbered += 1
