"""Breadth-first search on N worker processes, with the same results as one.

Level by level. Every worker expands the states it owns and keeps the successors it generated;
at first only fingerprints travel. Each fingerprint has an owner (fingerprint mod N) that
holds that part of the visited set: it drops what was seen before, and where several parents
reached a new state in this level it picks the one with the smallest (parent fingerprint,
position among that parent's steps), which does not depend on N; the generator of that winner
sends the state to its owner, who expands it at the next level and keeps its parent link. So
distinct states, transitions, states per level, verdicts and shortest counterexample lengths
are those of the one-process search (verifier/engines/bfs/), and the traces are the same run after
run. Limits are checked between levels, so --stop-at-first and --max-states stop at the end of
a level (the one-process search stops at once). Per-action "new states" counts may differ from
the one-process search: they follow the parent chosen, which differs.

Workers are forked from this process (they inherit the model); the coordinator here routes
fingerprints between them and rebuilds traces by asking for parent links level by level.
"""
from __future__ import annotations

import multiprocessing as mp
import time
from typing import Callable, Optional

from verifier.core import knobs, levels, stop
from verifier.core.fingerprint import collision_probability
from verifier.core.result import COMPLETE, DEADLOCK, VIOLATION, Progress, SearchResult
from verifier.core.settings import Limits, Options, Settings
from verifier.engines.parallel.worker import Worker, serve


class Pool:
    """N forked workers and the pipes to them."""

    def __init__(self, n: int, model, invariants, options: Options, deadline: Optional[float] = None):
        ctx = mp.get_context("fork")
        self.conns, self.procs = [], []
        self.halt, self.deadline = ctx.Event(), deadline     # set: the workers stop expanding at once
        for w in range(n):
            parent, child = ctx.Pipe()
            worker = Worker(w, n, model, invariants, options, self.halt, deadline)
            proc = ctx.Process(target=serve, args=(worker, child), daemon=True)
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)

    def ask(self, messages: list) -> list:
        """Send each worker its message, then collect every answer (in worker order)."""
        for conn, msg in zip(self.conns, messages):
            conn.send(msg)
        answers = []
        for conn in self.conns:
            while not conn.poll(0.2):    # a signal or the time budget reaches the workers within a slice
                if stop.requested() or (self.deadline is not None and time.monotonic() > self.deadline):
                    self.halt.set()
            answer = conn.recv()
            if isinstance(answer, BaseException):
                raise answer
            answers.append(answer)
        return answers

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(("stop",))
            except OSError:
                pass
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()


@knobs.declare("parallel")
class Knobs(knobs.Knobs):
    workers: int = knobs.knob(2, least=2)  # worker processes (one is the one-process search)


def run(model, properties, settings: Settings = Settings(),
        progress: Optional[Callable[[Progress], None]] = None) -> SearchResult:
    """The engine interface: the search of verifier/engines/bfs/ on `Knobs.workers` processes."""
    return explore_parallel(model, properties, Knobs.of(settings).workers, settings.limits, settings.options,
                            progress)


def explore_parallel(model, invariants, workers: int, limits: Limits = Limits(), options: Options = Options(),
                     progress: Optional[Callable[[Progress], None]] = None) -> SearchResult:
    """The search of verifier/engines/bfs/ on `workers` processes (>= 2)."""
    start = time.monotonic()
    res = SearchResult(engine="bfs", deadlock_checked=options.check_deadlock)
    roots = {fp: s for fp, (s, _) in levels.roots(model).items()}
    canonical = model.canonical
    pool = Pool(workers, model, invariants, options,
                None if limits.time_budget is None else start + limits.time_budget)
    found: dict[str, tuple] = {}       # invariant -> (level, kind, fp, final label)
    try:
        seeds = [[(fp, canonical(s) if canonical else s) for fp, s in sorted(roots.items()) if fp % workers == w]
                 for w in range(workers)]
        level_found = pool.ask([("seed", part) for part in seeds])
        res.states_per_level = [len(roots)]
        _merge_found(found, level_found, 0)
        status, reason = COMPLETE, ""
        while True:
            if found and not options.keep_going:
                break
            if res.states_per_level[-1] == 0:
                res.states_per_level.pop()
                break
            stopped = levels.between_levels(limits, res.depth, res.states_per_level[-1], sum(res.states_per_level),
                                            start)
            if stopped:                     # between two levels: workers finish the one under way
                status, reason = stopped
                break
            total = sum(res.states_per_level)
            rounds = ROUND if limits.max_states is None else max(1000, min(ROUND, (limits.max_states - total) // workers))
            new, stopped = _level(pool, workers, res, found, len(res.states_per_level) - 1, frozenset(found),
                                  lambda so_far: levels.within_level(limits, total + so_far, start), rounds)
            res.states_per_level.append(new)
            if stopped:                     # inside the level: what the next level had so far is counted
                status, reason = stopped
                break
            if new:
                res.depth += 1
            if progress:
                progress(levels.progress(res.transitions, res.states_per_level, res.depth, new,
                                         time.monotonic() - start))
        cut = bool(found) and not options.keep_going and res.states_per_level[-1] > 0
        res.status = VIOLATION if found else status
        res.stop_reason = reason
        res.explored_all = status == COMPLETE and not cut
        _traces(pool, model, invariants, res, found, roots, options.keep_going)
    finally:
        pool.close()
    res.distinct_states = sum(res.states_per_level)
    res.seconds = time.monotonic() - start
    res.collision_probability = collision_probability(res.distinct_states, res.transitions + len(roots))
    return res.judge(invariants)


ROUND = 50_000          # states a worker expands between two looks at the budgets and signals


def _level(pool: Pool, n: int, res: SearchResult, found: dict, level: int, known: frozenset,
           mid_level, size: int) -> tuple[int, Optional[tuple]]:
    """Expand `level` in rounds of at most `size` states per worker (one round for a level of
    fewer; a state reached in two rounds keeps the first round's parent); between two rounds
    `mid_level(new states so far)` may stop it. Returns (new states, (STOPPED, why) or None)."""
    new, stopped = 0, None
    while True:
        answers = pool.ask([("expand", known, size)] * n)
        for stats, _, events, _ in answers:
            transitions, enabled, terminal = stats
            res.transitions += transitions
            res.enabled.update(enabled)
            res.terminal_states += terminal
            _merge_found(found, [events], level)
        if not all(done for _, _, _, done in answers):
            stopped = mid_level(new)    # the budget or a signal halted the round: its successors
            if stopped:                 # are not sorted out (seconds on a large round); the level is cut
                break
        # candidates go to their owners, winners back to their generators, states to their owners
        winners = pool.ask([("dedupe", [outgoing[owner] for _, outgoing, _, _ in answers]) for owner in range(n)])
        shipped = pool.ask([("ship", [owned[gen] for owned in winners]) for gen in range(n)])
        accepted = pool.ask([("accept", [sent[owner] for sent in shipped], known) for owner in range(n)])
        for count, taken, events in accepted:
            new += count
            res.taken.update(taken)
            _merge_found(found, [events], level + 1)
        if all(done for _, _, _, done in answers):
            break
        stopped = mid_level(new)        # (the workers halted only for the budget or a signal it sees)
        if stopped:
            break
    pool.ask([("advance",)] * n)
    return new, stopped


def _merge_found(found: dict, answers: list, level: int) -> None:
    """Keep, per invariant, the violation of the smallest (level, kind, fp, position of the step)."""
    events: dict[str, tuple] = {}
    for answer in answers:
        for name, key in answer.items():
            if name not in events or key < events[name]:
                events[name] = key
    for name, (kind, fp, nth, label) in sorted(events.items()):
        if name not in found:
            found[name] = (level, kind, fp, nth, label)


def _traces(pool: Pool, model, invariants, res: SearchResult, found: dict, roots: dict, keep_going) -> None:
    """Rebuild each violation's trace from the parent links the workers keep."""
    for name, key in levels.report_order(found, lambda k: k[0], lambda k: k[1]):
        level, kind, fp, _, final_label = key
        labels = []
        for k in range(level, 0, -1):
            owner = pool.conns[fp % len(pool.conns)]
            owner.send(("link", k, fp))
            parent, label = owner.recv()
            labels.append(label)
            fp = parent
        labels.reverse()
        trace = levels.rebuild(model, invariants, roots[fp], labels, final_label if kind == "step" else None,
                               [name], "bfs", keep_going)
        res.counterexamples[name] = trace
        res.counterexample = res.counterexample or trace
    if DEADLOCK in res.counterexamples:
        res.terminal_states -= 1       # as the one-process search: the stuck state reported is not terminal
