"""Breadth-first search on N worker processes, with the same results as one.

Level by level. Every worker expands the states it owns and keeps the successors it generated;
at first only fingerprints travel. Each fingerprint has an owner (fingerprint mod N) that
holds that part of the visited set: it drops what was seen before, and where several parents
reached a new state in this level it picks the one with the smallest (parent fingerprint,
position among that parent's steps), which does not depend on N; the generator of that winner
sends the state to its owner, who expands it at the next level and keeps its parent link. So
distinct states, transitions, states per level, verdicts and shortest counterexample lengths
are those of the one-process search (verifier/bfs.py), and the traces are the same run after
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

from specs import Trace
from verifier.estimate import predict
from verifier.fingerprint import Fingerprinter, collision_probability
from verifier.parallel_worker import Worker, serve
from verifier import stop
from verifier.result import COMPLETE, DEADLOCK, STOPPED, VIOLATION, Limits, Options, Progress, Result, concrete_trace


class Pool:
    """N forked workers and the pipes to them."""

    def __init__(self, n: int, model, invariants, options: Options):
        ctx = mp.get_context("fork")
        self.conns, self.procs = [], []
        for w in range(n):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=serve, args=(Worker(w, n, model, invariants, options), child), daemon=True)
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


def explore_parallel(model, invariants, workers: int, limits: Limits = Limits(), options: Options = Options(),
                     progress: Optional[Callable[[Progress], None]] = None) -> Result:
    """The search of verifier/bfs.py on `workers` processes (>= 2)."""
    canonical = model.canonical
    checked = None if len(invariants) == len(model.properties) else [inv.name for inv in invariants]
    start = time.monotonic()
    res = Result(COMPLETE, 0, 0, 0, 0.0, deadlock_checked=options.check_deadlock)
    fpr = Fingerprinter()
    roots: dict[int, object] = {}
    for s in model.init_states():
        c = canonical(s) if canonical else s
        roots.setdefault(fpr(c), s)
    pool = Pool(workers, model, invariants, options)
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
            if limits.max_depth is not None and res.depth >= limits.max_depth:
                status = STOPPED
                reason = f"max depth {limits.max_depth} reached with {res.states_per_level[-1]} states unexplored"
                break
            if limits.max_states is not None and sum(res.states_per_level) >= limits.max_states:
                status, reason = STOPPED, f"max states {limits.max_states} reached"
                break
            if limits.time_budget is not None and time.monotonic() - start > limits.time_budget:
                status, reason = STOPPED, f"time budget {limits.time_budget:g}s spent"
                break
            if stop.requested():            # between two levels: workers finish the one under way
                status, reason = STOPPED, stop.reason()
                break
            new = _level(pool, workers, res, found, len(res.states_per_level) - 1, frozenset(found))
            res.states_per_level.append(new)
            if new:
                res.depth += 1
            if progress:
                done, seconds = sum(res.states_per_level), time.monotonic() - start
                forecast = predict(res.states_per_level)
                eta = max(forecast.states - done, 0) / (done / seconds) if forecast and seconds > 0 else None
                progress(Progress(res.transitions, done, res.depth, new, seconds, eta=eta,
                                  predicted=forecast.states if forecast else None))
        cut = bool(found) and not options.keep_going and res.states_per_level[-1] > 0
        res.status = VIOLATION if found else status
        res.stop_reason = reason
        res.explored_all = status == COMPLETE and not cut
        _traces(pool, model, res, found, roots, canonical, checked, options.keep_going)
    finally:
        pool.close()
    res.distinct_states = sum(res.states_per_level)
    res.seconds = time.monotonic() - start
    res.collision_probability = collision_probability(res.distinct_states, res.transitions + len(roots))
    return res


def _level(pool: Pool, n: int, res: Result, found: dict, level: int, known: frozenset) -> int:
    """Expand `level`; return how many new states the next level has."""
    answers = pool.ask([("expand", known)] * n)
    for stats, _, events in answers:
        transitions, enabled, terminal = stats
        res.transitions += transitions
        res.enabled.update(enabled)
        res.terminal_states += terminal
        _merge_found(found, [events], level)
    # candidates go to their owners, winners back to their generators, states to their owners
    winners = pool.ask([("dedupe", [outgoing[owner] for _, outgoing, _ in answers]) for owner in range(n)])
    shipped = pool.ask([("ship", [owned[gen] for owned in winners]) for gen in range(n)])
    accepted = pool.ask([("accept", [sent[owner] for sent in shipped], known) for owner in range(n)])
    new = 0
    for count, taken, events in accepted:
        new += count
        res.taken.update(taken)
        _merge_found(found, [events], level + 1)
    return new


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


def _traces(pool: Pool, model, res: Result, found: dict, roots: dict, canonical, checked, keep_going) -> None:
    """Rebuild each violation's trace from the parent links the workers keep."""
    order = sorted(found.items(), key=lambda kv: (kv[1][0] + (kv[1][1] == "step"), kv[0]))
    for name, key in order:
        level, kind, fp, _, final_label = key
        labels = []
        for k in range(level, 0, -1):
            owner = pool.conns[fp % len(pool.conns)]
            owner.send(("link", k, fp))
            parent, label = owner.recv()
            labels.append(label)
            fp = parent
        labels.reverse()
        root = roots[fp]
        trace = Trace(model, root, concrete_trace(model, root, labels, final_label if kind == "step" else None,
                                                  canonical),
                      [name], engine="bfs", checked=[name] if keep_going else checked)
        res.counterexamples[name] = trace
        res.counterexample = res.counterexample or trace
    if DEADLOCK in res.counterexamples:
        res.terminal_states -= 1       # as the one-process search: the stuck state reported is not terminal
