"""Random walks over a `Model` (TLC's -simulate): deeper than exhaustive search reaches,
with no claim of completeness. Same model, same invariants, same Result and Trace
types as the BFS; a seed makes every walk reproducible.
"""
from __future__ import annotations

import random
import time
from typing import Callable, Optional

from verifier import stop
from verifier.result import COMPLETE, DEADLOCK, STOPPED, VIOLATION, Progress, Result, concrete_trace
from specs import Trace
from verifier.fingerprint import Fingerprinter, collision_probability


def simulate(model, invariants, walks: int, depth: int, seed: int, time_budget: Optional[float] = None,
             check_deadlock: bool = True, progress: Optional[Callable[[Progress], None]] = None,
             progress_every: float = 0.5, shrink: bool = True) -> Result:
    """`walks` random walks of at most `depth` steps; each step picks a successor uniformly.
    Stops at the first violation; its trace is the walk so far, shrunk by deleting steps while
    the same property still fails (verifier/fuzz.py's shrinker): short, not necessarily shortest."""
    cfg = model.cfg
    state_invs = [inv for inv in invariants if inv.kind == "state"]
    step_invs = [inv for inv in invariants if inv.kind == "step"]
    rng = random.Random(seed)
    fpr = Fingerprinter()
    seen: set[int] = set()
    res = Result(COMPLETE, 0, 0, 0, 0.0, states_per_level=[], deadlock_checked=check_deadlock)
    start = time.monotonic()
    next_report = start + progress_every
    inits = model.init_states()

    def fail(root, labels, names) -> Result:
        steps = concrete_trace(model, root, labels)
        if shrink and DEADLOCK not in names and steps:
            from verifier.fuzz import shrink_steps      # the walk as found is long: shrink it as fuzz does
            steps = shrink_steps(model, root, steps, names, invariants)
        trace = Trace(model, root, steps, names, engine="simulate")
        res.counterexample = trace
        res.counterexamples = {n: trace for n in names}
        return finish(VIOLATION)

    def finish(status: str, reason: str = "") -> Result:
        res.status, res.stop_reason = status, reason
        res.explored_all = False        # a sample never covers the state space
        res.distinct_states = len(seen)
        res.seconds = time.monotonic() - start
        res.collision_probability = collision_probability(len(seen), res.transitions + walks)
        return res

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
