"""The kernel-simulate engine: verifier/engines/simulate.py's random walks, step for step, on
the compiled kernel.

The walks are that engine's because they make the same choices from the same numbers: the
kernel gives a state's successors in the model's order, and the walk draws from Python's own
generator (`random.Random(seed)`, MT19937), whose state is copied into an array and stepped
here as CPython steps it (`_next32`, `below`: its getrandbits and randrange). So the
transitions, distinct states, terminal states, depths, action counts and the first violating
walk equal the Python walks' for the same seed and bounds (tests/verifier/engines/
test_kernel_walks.py); only the speed differs. A violating walk is run again on the model
and shrunk by the code simulate.py uses (verifier/core/walks.py).

The compiled loop returns to Python for a controller event the table lacks (the algebra fills
it, then the same step is taken again), when the visited table or the walk's labels must
grow, on a violation and after every BATCH steps (progress, stop requests, the time budget). Between calls the walk in
progress lives in arrays: the row, its fingerprint, the labels so far and the counters `w`.
"""
from __future__ import annotations

import random
from collections import Counter
from typing import Callable, Optional

import numpy as np
from numba import njit

from specs.kernel.events import MISS
from specs.kernel.properties import STATE, STEP, state_violations, step_verdict
from specs.kernel.successors import BOUNDED, LABEL, N_ACTIONS, UNBOUNDED, successors
from verifier.core import knobs
from verifier.core.properties import split
from verifier.core.result import COMPLETE, DEADLOCK, STOPPED, VIOLATION, Progress, SearchResult
from verifier.core.settings import Settings
from verifier.core.walks import Pace, WalkKnobs, ended, found
from verifier.engines.kernel.memory import Budget, Collector, MemoryBudget
from verifier.core.rowhash import child_hash, row_hash
from verifier.engines.kernel.visited import Visited, visit

BATCH = 50_000            # steps per call into the compiled loop
PATH = 1024               # a walk's labels the first array holds (it doubles as a walk needs)
MT_N, MT_M = 624, 397     # MT19937's state words and its twist offset

# what a call ended with
DONE, NEED_EVENT, GROW, FOUND, PAUSE, LONGER = range(6)
# w: the walks between calls
(W_WALK, W_STEP, W_ROOT, W_IN_WALK, W_DEEPEST, W_TERMINAL, W_TRANSITIONS, W_DISTINCT, W_STATE_BAD, W_STEP_BAD,
 W_STUCK) = range(11)


@knobs.declare("kernel-simulate")
class Knobs(WalkKnobs):
    """walks, depth, seed, shrink: simulate's (verifier/core/walks.py)."""


def run(model, properties, settings: Settings = Settings(),
        progress: Optional[Callable[[Progress], None]] = None) -> SearchResult:
    """The engine interface: simulate's walks on the kernel; what the kernel cannot hold is
    refused before anything runs (InputError, the kernel engine's `refuse`)."""
    from verifier.engines.kernel import refuse
    own = Knobs.of(settings)
    refuse(model, properties, Settings(options=settings.options))
    return walk(model, properties, own.walks, own.depth, own.seed, settings.limits.time_budget,
                settings.options.check_deadlock, progress, shrink=own.shrink)


@njit(cache=True, nogil=True, _nrt=False)
def _next32(mt, at):
    """The generator's next 32-bit word (CPython's genrand_uint32: MT19937; mt holds its 624
    words, at[0] the next one's index)."""
    if at[0] >= MT_N:
        for k in range(MT_N):
            y = (mt[k] & 0x80000000) | (mt[(k + 1) % MT_N] & 0x7FFFFFFF)
            v = mt[(k + MT_M) % MT_N] ^ (y >> 1)
            if y & 1:
                v ^= 0x9908B0DF
            mt[k] = v
        at[0] = 0
    y = mt[at[0]]
    at[0] += 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y


@njit(cache=True, nogil=True, _nrt=False)
def below(mt, at, n):
    """random.Random.randrange(n) for 1 <= n < 2**32: getrandbits(n.bit_length()) until it
    is below n, each the top bits of one word."""
    k = 0
    while (n >> k) > 0:
        k += 1
    r = _next32(mt, at) >> (32 - k)
    while r >= n:
        r = _next32(mt, at) >> (32 - k)
    return r


def generator(seed: int) -> tuple:
    """(mt, at): random.Random(seed)'s state as the compiled walk steps it."""
    state = random.Random(seed).getstate()[1]
    return np.array(state[:MT_N], dtype=np.int64), np.array([state[MT_N]], dtype=np.int64)


@njit(cache=True, _nrt=False)
def walk_on(roots, root_fps, walks, depth, mt, at, w, cur, cur_fp, path, table, lay, cv, plan, tables, out, labels,
            key, work, params, enabled, taken, state_check, step_check, deadlocks):
    """Go on with the walks from where `w` says (see the module's docstring): what ended the call."""
    facts = tables[3]
    steps = 0
    while w[W_WALK] < walks:
        if not w[W_IN_WALK]:
            if 2 * (w[W_DISTINCT] + 1) > len(table):
                return GROW
            r = below(mt, at, len(roots))
            w[W_ROOT], w[W_STEP], w[W_IN_WALK] = r, 0, 1
            for j in range(len(cur)):
                cur[j] = roots[r, j]
            cur_fp[0], cur_fp[1] = root_fps[r, 0], root_fps[r, 1]
            if visit(table, cur_fp[0], cur_fp[1]):
                w[W_DISTINCT] += 1
            w[W_STATE_BAD] = state_violations(cur, lay, facts, state_check) if state_check else 0
            if w[W_STATE_BAD]:
                return FOUND
        while w[W_STEP] < depth:
            if 2 * (w[W_DISTINCT] + 1) > len(table):
                return GROW
            if w[W_STEP] >= len(path):
                return LONGER
            n = successors(cur, lay, cv, plan, tables, BOUNDED, -1, out, labels, key, work, params)
            if n == MISS:
                return NEED_EVENT
            if n == 0:
                stuck = False
                if deadlocks:
                    m = successors(cur, lay, cv, plan, tables, UNBOUNDED, -1, out, labels, key, work, params)
                    if m == MISS:
                        return NEED_EVENT
                    stuck = m == 0
                w[W_TERMINAL] += 1
                if stuck:
                    w[W_STUCK] = 1
                    return FOUND
                break
            for k in range(n):
                enabled[labels[k, 0]] += 1
            k = below(mt, at, n)
            w[W_TRANSITIONS] += 1
            for j in range(LABEL):
                path[w[W_STEP], j] = labels[k, j]
            w[W_STEP] += 1
            t = out[k]
            w[W_STEP_BAD] = step_verdict(cur, labels[k, 0], t, lay, facts, step_check) if step_check else 0
            a, b = child_hash(cur, cur_fp[0], cur_fp[1], t)
            if visit(table, a, b):
                w[W_DISTINCT] += 1
                taken[labels[k, 0]] += 1
            w[W_STATE_BAD] = state_violations(t, lay, facts, state_check) if state_check else 0
            for j in range(len(cur)):
                cur[j] = t[j]
            cur_fp[0], cur_fp[1] = a, b
            if w[W_STEP_BAD] or w[W_STATE_BAD]:
                return FOUND
            steps += 1
        w[W_DEEPEST] = max(w[W_DEEPEST], w[W_STEP])
        w[W_IN_WALK] = 0
        w[W_WALK] += 1
        if steps >= BATCH:
            return PAUSE
    return DONE


def walk(model, invariants, walks: int, depth: int, seed: int, time_budget: Optional[float] = None,
         check_deadlock: bool = True, progress: Optional[Callable[[Progress], None]] = None,
         progress_every: float = 0.5, shrink: bool = True) -> SearchResult:
    """simulate.simulate's walks on the kernel (the same arguments, the same result)."""
    from specs.kernel import Kernel
    k = Kernel(model.cfg)
    state_invs, step_invs = split(invariants)
    state_check = sum(1 << STATE.index(p.name) for p in state_invs)
    step_check = sum(1 << STEP.index(p.name) for p in step_invs)
    inits = model.init_states()
    roots = np.array([k.pack(s) for s in inits], dtype=np.int32)
    root_fps = np.array([row_hash(r) for r in roots], dtype=np.uint64)
    mt, at = generator(seed)
    w = np.zeros(11, dtype=np.int64)
    cur, cur_fp = np.zeros(k.layout.width, dtype=np.int32), np.zeros(2, dtype=np.uint64)
    path = np.zeros((min(depth, PATH), LABEL), dtype=np.int64)
    enabled, taken = np.zeros(N_ACTIONS, dtype=np.int64), np.zeros(N_ACTIONS, dtype=np.int64)
    budget = Budget()
    visited = Visited(1, most=budget.limit or 1 << 36)
    collector = Collector()
    res = SearchResult(engine="kernel-simulate", states_per_level=[], deadlock_checked=check_deadlock, sampled=True)
    pace = Pace(walks, time_budget, progress, progress_every)

    def finish(status: str, reason: str = "") -> SearchResult:
        names = model.action_names
        res.enabled = Counter({names[a]: int(n) for a, n in enumerate(enabled) if n})
        res.taken = Counter({names[a]: int(n) for a, n in enumerate(taken) if n})
        res.transitions, res.terminal_states, res.depth = int(w[W_TRANSITIONS]), int(w[W_TERMINAL]), int(w[W_DEEPEST])
        return ended(res, invariants, status, reason, int(w[W_DISTINCT]), walks, pace.seconds())

    try:
        while True:
            why = walk_on(roots, root_fps, walks, depth, mt, at, w, cur, cur_fp, path, visited.tables[0],
                          k.layout.lay, k.cv, k.plan, k.table_args(), k.out, k.labels, k.key, k.work, k.params,
                          enabled, taken, state_check, step_check, check_deadlock)
            if why == DONE:
                return finish(COMPLETE)
            if why == NEED_EVENT:
                k.tables.fill(k.key)
                collector.filled()
            elif why == GROW:
                visited.counts[0] = int(w[W_DISTINCT])
                try:
                    budget.allow(visited.nbytes, visited.growth(1 << 16), "the visited set")
                except MemoryBudget as exc:
                    return finish(STOPPED, f"{exc} after {int(w[W_WALK])} of {walks} walks")
                visited.room(1 << 16)
            elif why == LONGER:
                path = np.concatenate([path, np.zeros_like(path)])
            elif why == FOUND:
                bad = ([DEADLOCK] if w[W_STUCK] else
                       [p.name for p in step_invs if w[W_STEP_BAD] >> STEP.index(p.name) & 1]
                       + [p.name for p in state_invs if w[W_STATE_BAD] >> STATE.index(p.name) & 1])
                labels = [k.label(path[i]) for i in range(int(w[W_STEP]))]
                found(model, invariants, res, inits[int(w[W_ROOT])], labels, bad, shrink)
                return finish(VIOLATION)
            reason = pace.stop_reason(int(w[W_WALK]), lambda: (int(w[W_TRANSITIONS]), int(w[W_DISTINCT]),
                                                                int(w[W_DEEPEST])))
            if reason:
                return finish(STOPPED, reason)
    finally:
        collector.close()
