"""Random walks over a `Model` (TLC's -simulate): deeper than exhaustive search reaches,
with no claim of completeness. Same model, same invariants, same Result and Trace
types as the BFS; a seed makes every walk reproducible.
"""
from __future__ import annotations

import random
import time
from typing import Callable, Optional

from specs import Trace
from verifier.core import knobs, stop
from verifier.core.fingerprint import Fingerprinter, collision_probability
from verifier.core.levels import concrete_trace
from verifier.core.properties import names, split
from verifier.core.result import COMPLETE, DEADLOCK, STOPPED, VIOLATION, Progress, SearchResult
from verifier.core.settings import Settings
from verifier.core.shrink import shrink_steps


@knobs.declare("simulate")
class Knobs(knobs.Knobs):
    walks: int = knobs.knob(1000, least=1)  # random walks
    depth: int = knobs.knob(100, least=1)  # steps per walk at the most
    seed: int = 0  # walk i of seed S is the same on every run
    shrink: bool = True  # shrink a failing walk (the mutation gate needs only the kill)


def run(model, properties, settings: Settings = Settings(),
        progress: Optional[Callable[[Progress], None]] = None) -> SearchResult:
    """The engine interface: `Knobs.walks` walks of at most `Knobs.depth` steps within the
    time budget."""
    own = Knobs.of(settings)
    return simulate(model, properties, own.walks, own.depth, own.seed, settings.limits.time_budget,
                    settings.options.check_deadlock, progress, shrink=own.shrink)


def simulate(model, invariants, walks: int, depth: int, seed: int, time_budget: Optional[float] = None,
             check_deadlock: bool = True, progress: Optional[Callable[[Progress], None]] = None,
             progress_every: float = 0.5, shrink: bool = True) -> SearchResult:
    """`walks` random walks of at most `depth` steps; each step picks a successor uniformly.
    Stops at the first violation; its trace is the walk so far, shrunk by deleting steps while
    the same property still fails (verifier/core/shrink.py): short, not necessarily shortest."""
    cfg = model.cfg
    state_invs, step_invs = split(invariants)
    rng = random.Random(seed)
    fpr = Fingerprinter()
    seen: set[int] = set()
    res = SearchResult(engine="simulate", states_per_level=[], deadlock_checked=check_deadlock, sampled=True)
    start = time.monotonic()
    next_report = start + progress_every
    inits = model.init_states()

    def fail(root, labels, bad) -> SearchResult:
        steps = concrete_trace(model, root, labels)
        if shrink and DEADLOCK not in bad and steps:      # the walk as found is long: shrink it as fuzz does
            steps = shrink_steps(model, root, steps, bad, invariants)
        trace = Trace(model, root, steps, bad, engine="simulate", checked=names(invariants),
                      properties=tuple(invariants))
        res.counterexample = trace
        res.counterexamples = {n: trace for n in bad}
        return finish(VIOLATION)

    def finish(status: str, reason: str = "") -> SearchResult:
        res.status, res.stop_reason = status, reason
        res.explored_all = False        # a sample never covers the state space
        res.distinct_states = len(seen)
        res.seconds = time.monotonic() - start
        res.collision_probability = collision_probability(len(seen), res.transitions + walks)
        return res.judge(invariants)

    for walk in range(walks):
        root = inits[rng.randrange(len(inits))]
        s, labels = root, []
        seen.add(fpr(s))
        bad = [inv.name for inv in state_invs if not inv.check(cfg, s)]
        if bad:
            return fail(root, labels, bad)
        for _ in range(depth):
            succ = list(model.successors(s))
            if not succ:
                res.terminal_states += 1
                if check_deadlock and model.stuck(s):
                    return fail(root, labels, [DEADLOCK])
                break
            for label, _t in succ:
                res.enabled[label[0]] += 1
            label, t = succ[rng.randrange(len(succ))]
            res.transitions += 1
            bad = [inv.name for inv in step_invs if not inv.check(cfg, s, label, t)]
            labels.append(label)
            fp = fpr(t)
            if fp not in seen:
                seen.add(fp)
                res.taken[label[0]] += 1
            bad += [inv.name for inv in state_invs if not inv.check(cfg, t)]
            if bad:
                return fail(root, labels, bad)
            s = t
        res.depth = max(res.depth, len(labels))
        if stop.requested():
            return finish(STOPPED, f"{stop.reason()} after {walk + 1} of {walks} walks")
        now = time.monotonic()
        if now >= next_report:
            next_report = now + progress_every
            if time_budget is not None and now - start > time_budget:
                return finish(STOPPED, f"time budget {time_budget:g}s spent after {walk + 1} of {walks} walks")
            if progress:
                progress(Progress(res.transitions, len(seen), res.depth, walks - walk - 1, now - start))
    return finish(COMPLETE)
