"""Random walks over a `Model` (TLC's -simulate): deeper than exhaustive search reaches,
with no claim of completeness. Same model, same invariants, same Result and Trace
types as the BFS; a seed makes every walk reproducible.
"""
from __future__ import annotations

import random
from typing import Callable, Optional

from verifier.core import knobs
from verifier.core.fingerprint import Fingerprinter
from verifier.core.properties import split
from verifier.core.result import COMPLETE, DEADLOCK, STOPPED, VIOLATION, Progress, SearchResult
from verifier.core.settings import Settings
from verifier.core.walks import Pace, WalkKnobs, ended, found


@knobs.declare("simulate")
class Knobs(WalkKnobs):
    """walks, depth, seed, shrink (verifier/core/walks.py: kernel-simulate takes the same)."""


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
    """`walks` random walks of at most `depth` steps; each step picks a successor uniformly
    (`rng.randrange`: verifier/engines/kernel/walks.py draws the same numbers). Stops at the
    first violation; its trace is the walk so far, shrunk (verifier/core/walks.py `found`)."""
    cfg = model.cfg
    state_invs, step_invs = split(invariants)
    rng = random.Random(seed)
    fpr = Fingerprinter()
    seen: set[int] = set()
    res = SearchResult(engine="simulate", states_per_level=[], deadlock_checked=check_deadlock, sampled=True)
    pace = Pace(walks, time_budget, progress, progress_every)
    inits = model.init_states()

    def fail(root, labels, bad) -> SearchResult:
        found(model, invariants, res, root, labels, bad, shrink)
        return finish(VIOLATION)

    def finish(status: str, reason: str = "") -> SearchResult:
        return ended(res, invariants, status, reason, len(seen), walks, pace.seconds())

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
        reason = pace.stop_reason(walk + 1, lambda: (res.transitions, len(seen), res.depth))
        if reason:
            return finish(STOPPED, reason)
    return finish(COMPLETE)
