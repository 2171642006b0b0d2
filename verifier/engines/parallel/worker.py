"""One worker of the parallel search (verifier/engines/parallel/): its part of the visited set (the
fingerprints it owns), the states of the level it expands (as field ids, verifier/core/codec.py),
and the parent links of the states it generated, kept per level in flat sorted arrays (36
bytes a state)."""
from __future__ import annotations

import gc
import pickle
import time
from array import array
from bisect import bisect_left
from collections import Counter

from verifier.core import stop
from verifier.core.codec import Codec, Level
from verifier.core.levels import expand_states
from verifier.core.properties import split
from verifier.core.result import DEADLOCK
from verifier.core.settings import Options
from verifier.core.store import Labels

M64 = (1 << 64) - 1
PROTOCOL = pickle.HIGHEST_PROTOCOL


class Links:
    """Parent links of one level: fingerprint -> (parent fingerprint, label id), sorted arrays."""

    def __init__(self, entries: list):
        entries.sort()
        self.hi = array("Q", (fp >> 64 for fp, _, _ in entries))
        self.lo = array("Q", (fp & M64 for fp, _, _ in entries))
        self.phi = array("Q", (p >> 64 for _, p, _ in entries))
        self.plo = array("Q", (p & M64 for _, p, _ in entries))
        self.label = array("I", (lid for _, _, lid in entries))

    def find(self, fp: int):
        key = (fp >> 64, fp & M64)
        i = bisect_left(range(len(self.hi)), key, key=lambda j: (self.hi[j], self.lo[j]))
        if i < len(self.hi) and (self.hi[i], self.lo[i]) == key:
            return (self.phi[i] << 64) | self.plo[i], self.label[i]
        return None


class Worker:
    def __init__(self, w: int, n: int, model, invariants, options: Options, halt=None, deadline=None):
        self.w, self.n, self.model, self.options = w, n, model, options
        self.halt, self.deadline = halt, deadline     # the coordinator's stop, the time budget's end
        self.cfg, self.canonical = model.cfg, model.canonical
        self.state_invs, self.step_invs = split(invariants)
        self.codec = Codec()                 # states are held as field ids (verifier/core/codec.py)
        self.visited: set[int] = set()       # the fingerprints this worker owns (fp mod n == w)
        self.frontier = Level("fingerprint")  # the canonical states it expands (this level)
        self.pos = 0                         # ... how many of them it has expanded
        self.next = Level("fingerprint")     # the next level's states it owns, so far
        self.entries: list = []              # ... and their parent links
        self.cand: dict[int, tuple] = {}     # fp -> (parent fp, n-th successor, label, ids): best parent
        self.kept: list = []                 # the new states it both generated and owns
        self.links: list[Links] = []         # per level
        self.labels = Labels()

    def _state_events(self, fp: int, s, known, events: dict) -> None:
        for inv in self.state_invs:
            if inv.name not in known and not inv.check(self.cfg, s):
                key = ("state", fp, 0, None)
                if inv.name not in events or key < events[inv.name]:
                    events[inv.name] = key

    def seed(self, part: list) -> dict:
        events: dict = {}
        self.links.append(Links([]))
        for fp, s in part:
            self.visited.add(fp)
            self.frontier.append(fp, self.codec.encode(s))
            self._state_events(fp, s, frozenset(), events)
        return events

    def expand(self, known: frozenset, limit: int) -> tuple:
        """Successors of the next `limit` states of this worker's part of the level (a round):
        counts, candidates per owner, events, and whether its part is done."""
        codec, model = self.codec, self.model
        step_invs = [inv for inv in self.step_invs if inv.name not in known]
        enabled: Counter = Counter()
        events: dict = {}
        cand, visited, n, w = self.cand, self.visited, self.n, self.w

        def keep(fp, n_succ, label, ids, fp2):
            if fp2 % n == w and fp2 in visited:
                return                         # seen before, and this worker is its owner
            mine = cand.get(fp2)
            if mine is None or (fp, n_succ) < mine[:2]:
                cand[fp2] = (fp, n_succ, label, ids)
        skip = not self.options.check_deadlock or DEADLOCK in known
        end = min(self.pos + limit, len(self.frontier))
        transitions, terminal, _ = expand_states(model, codec, self._slice(end), step_invs, skip, enabled, events,
                                                 (_step_key, _deadlock_key), keep)
        outgoing: list[list] = [[] for _ in range(self.n)]
        for fp2, (parent, nth, _, _) in cand.items():
            outgoing[fp2 % self.n].append((fp2, parent, nth))
        return ((transitions, dict(enabled), terminal), [pickle.dumps(o, PROTOCOL) for o in outgoing], events,
                self.pos == len(self.frontier))

    def _slice(self, end: int):
        """The round's states, `pos` kept as they go; every 256 a look at the halt and the time
        budget, which end the round at once (the run is stopped then: its level is cut)."""
        frontier = self.frontier
        while self.pos < end:
            if self.pos % 256 == 0 and self.halt is not None and (
                    self.halt.is_set() or (self.deadline is not None and time.monotonic() > self.deadline)):
                return
            self.pos += 1
            yield frontier[self.pos - 1]

    def dedupe(self, routed: list) -> list:
        """As owner: the new fingerprints and, for each, the generator of its smallest parent."""
        best: dict[int, tuple] = {}
        visited = self.visited
        for gen, blob in enumerate(routed):
            for fp, parent, nth in pickle.loads(blob):
                if fp in visited:
                    continue
                key = (parent, nth, gen)
                old = best.get(fp)
                if old is None or key < old:
                    best[fp] = key
        visited.update(best)
        winners: list[list] = [[] for _ in range(self.n)]
        for fp, (_, _, gen) in best.items():
            winners[gen].append(fp)
        return [pickle.dumps(w, PROTOCOL) for w in winners]

    def ship(self, won: list) -> list:
        """As generator: the states this worker won, to their owners (who sent `won`). States
        decoded from ids share their field objects, so pickle writes each value once."""
        cand, decode = self.cand, self.codec.decode
        out = []
        for owner, blob in enumerate(won):
            if owner == self.w:                       # its own: kept as ids, nothing to pickle
                self.kept = [(fp, cand[fp][0], cand[fp][2], cand[fp][3]) for fp in pickle.loads(blob)]
                out.append(pickle.dumps([], PROTOCOL))
                continue
            items = [(fp, cand[fp][0], cand[fp][2], decode(cand[fp][3])) for fp in pickle.loads(blob)]
            out.append(pickle.dumps(items, PROTOCOL))
        self.cand = {}
        return out

    def accept(self, shipped: list, known: frozenset) -> tuple:
        """As owner: the new states it owns join its part of the next level, with their parent
        links, and the state invariants are checked on them."""
        taken: Counter = Counter()
        events: dict = {}
        entries, frontier, codec = self.entries, self.next, self.codec
        received = [item for blob in shipped for item in pickle.loads(blob)]
        states = self.kept + [item[:3] + (ids,) for item, ids
                              in zip(received, codec.encode_batch([item[3] for item in received]))]
        states.sort(key=lambda item: item[0])
        self.kept = []
        for fp, parent, label, ids in states:
            entries.append((fp, parent, self.labels.id(label)))
            frontier.append(fp, ids)
            taken[label[0]] += 1
            self._state_events(fp, codec.decode(ids), known, events)
        return len(states), dict(taken), events

    def advance(self) -> int:
        """The level is over: what was accepted becomes the level to expand, its links kept."""
        self.links.append(Links(self.entries))
        self.frontier, self.pos, self.next, self.entries = self.next, 0, Level("fingerprint"), []
        return len(self.frontier)

    def link(self, level: int, fp: int):
        hit = self.links[level].find(fp) if level < len(self.links) else None
        return None if hit is None else (hit[0], self.labels[hit[1]])


def _step_key(fp: int, nth: int, label) -> tuple:
    return "step", fp, nth, label


def _deadlock_key(fp: int) -> tuple:
    return "state", fp, 0, None


def serve(worker: Worker, conn) -> None:
    """Answer the coordinator's messages until it says stop."""
    stop.ignore_in_worker()       # the coordinator stops the workers in order on an interrupt
    gc.freeze()                   # what the fork inherited is never garbage: keep the collector off it
    gc.set_threshold(50_000, 20, 20)
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        op = msg[0]
        if op == "stop":
            return
        try:
            conn.send(getattr(worker, op)(*msg[1:]))
        except Exception as exc:       # the coordinator raises it (a bug, reported with its message)
            conn.send(RuntimeError(f"worker {worker.w}: {op}: {type(exc).__name__}: {exc}"))
