"""What every level-synchronous search shares (the one-process BFS, the worker processes and
Spark): its roots, when it stops between two levels and why, its progress line, and how a
violation's trace is rebuilt from the labels along its path. Written once, so the stop
messages, the order violations are reported in and the traces are the same for every search.
"""
from __future__ import annotations

import time
from typing import Optional

from specs import Trace
from verifier.core import stop
from verifier.core.estimate import predict
from verifier.core.fingerprint import Fingerprinter
from verifier.core.result import DEADLOCK, STOPPED, Progress
from verifier.core.settings import Limits

GRAPH_LIMIT = 50_000       # --dump-graph is for small runs


def roots(model) -> dict[int, tuple]:
    """fingerprint -> (initial state, its canonical form), the first of each orbit kept, in
    the model's order."""
    fpr, canonical = Fingerprinter(), model.canonical
    out: dict[int, tuple] = {}
    for s in model.init_states():
        c = canonical(s) if canonical else s
        out.setdefault(fpr(c), (s, c))
    return out


def depth_reached(limits: Limits, depth: int, unexplored: int) -> Optional[str]:
    if limits.max_depth is not None and depth >= limits.max_depth:
        return f"max depth {limits.max_depth} reached with {unexplored} states unexplored"
    return None


def between_levels(limits: Limits, depth: int, unexplored: int, total: int, started: float,
                   budget_spent: bool = False) -> Optional[tuple[str, str]]:
    """(STOPPED, why) if the search must stop before expanding the next level, else None."""
    why = depth_reached(limits, depth, unexplored)
    if why is None and limits.max_states is not None and total >= limits.max_states:
        why = f"max states {limits.max_states} reached"
    if why is None and (budget_spent or (limits.time_budget is not None
                                         and time.monotonic() - started > limits.time_budget)):
        why = f"time budget {limits.time_budget:g}s spent"
    if why is None and stop.requested():
        why = stop.reason()
    return (STOPPED, why) if why else None


def within_level(limits: Limits, total: int, started: float) -> Optional[tuple[str, str]]:
    """(STOPPED, why) if a search must stop inside a level: its states, time or a signal."""
    if limits.max_states is not None and total >= limits.max_states:
        return STOPPED, f"max states {limits.max_states} reached"
    if limits.time_budget is not None and time.monotonic() - started > limits.time_budget:
        return STOPPED, f"time budget {limits.time_budget:g}s spent"
    if stop.requested():
        return STOPPED, stop.reason()
    return None


def progress(generated: int, per_level: list[int], depth: int, queue: int, seconds: float,
             level: int = 0, level_done: int = 0, done: Optional[int] = None) -> Progress:
    """The progress line's figures, with a forecast and an ETA once the finished levels allow."""
    done = sum(per_level) if done is None else done
    forecast = predict(per_level)
    eta = max(forecast.states - done, 0) / (done / seconds) if forecast is not None and seconds > 0 and done else None
    return Progress(generated, done, depth, queue, seconds, level=level, level_done=level_done, eta=eta,
                    predicted=forecast.states if forecast else None)


def report_order(found: dict, level_of, kind_of) -> list:
    """The violations in the order they are reported: by the level their trace ends at (a step
    violation ends one level deeper than the state it leaves), then by name."""
    return sorted(found.items(), key=lambda kv: (level_of(kv[1]) + (kind_of(kv[1]) == "step"), kv[0]))


def concrete_trace(model, root, labels: list, final_label=None, canonical=None) -> list:
    """Steps (label, state) from the concrete initial state `root`. Without symmetry the
    stored labels replay as they are; with it they were taken from orbit representatives,
    so each step is matched to the concrete successor whose canonical form agrees."""
    if canonical is None:
        steps, s = [], root
        for label in labels + ([final_label] if final_label is not None else []):
            s = model.step(s, label)
            steps.append((label, s))
        return steps
    rep = canonical(root)
    targets = []
    for label in labels:
        rep = canonical(model.step(rep, label))
        targets.append(rep)
    if final_label is not None:
        targets.append(canonical(model.step(rep, final_label)))
    steps, s = [], root
    for i, target in enumerate(targets):
        found = next(((lb, t) for lb, t in model.successors(s) if canonical(t) == target), None)
        if found is None:
            raise UnconfirmedViolation(f"step {i + 1} of the stored path has no concrete step of the model")
        steps.append(found)
        s = found[1]
    return steps


class UnconfirmedViolation(Exception):
    """A violation whose path does not replay through the model, or whose property does not
    fail at its end: a forged checkpoint or level (by someone holding the key) or an engine
    bug. Never reported as a verdict: one line, exit 2."""


def rebuild(model, properties, root, labels: list, final_label, violated: list[str], engine: str,
            keep_going: bool) -> Trace:
    """A violation's trace from the real initial state, re-run through the model and checked
    (`confirm`) before anyone reports it. With keep_going, earlier states may break other
    invariants, reported apart: the trace says it checked only the ones it shows."""
    try:
        steps = concrete_trace(model, root, labels, final_label, model.canonical)
    except (LookupError, TypeError, ValueError, AttributeError) as exc:    # a label the model has no step for
        raise UnconfirmedViolation(f"the counterexample for {', '.join(violated) or '?'} does not replay through "
                                   f"the model (a stored step cannot be taken: {type(exc).__name__}): "
                                   f"not reported") from None
    confirm(model, properties, root, steps, violated)
    checked = list(violated) if keep_going else [p.name for p in properties]
    return Trace(model, root, steps, list(violated), engine=engine, checked=checked, properties=tuple(properties))


def attach_traces(res, found: dict, path, roots: dict, model, properties, engine: str, keep_going: bool) -> None:
    """Each violated property's trace into `res`: `found` maps a property to (state number,
    the names found with it, final label or None), `path(number)` gives (root number, labels);
    one rebuilt trace per find, shared by the names found with it (the searches' results)."""
    traces: dict = {}
    for name, key in found.items():
        if key not in traces:
            index, names, final = key
            root, labels = path(index)
            traces[key] = rebuild(model, properties, roots[root], labels, final, list(names), engine, keep_going)
        res.counterexamples[name] = traces[key]
    res.counterexample = next(iter(traces.values()), None)


def confirm(model, properties, root, steps: list, violated: list[str]) -> None:
    """The counterexample is one: it starts at an initial state, every step is one the model
    takes there (within its bounds) and yields the stored state, and each property named fails
    where the path ends (a state property on the last state, a step property on the last step,
    a deadlock: nothing left to do)."""
    def refuse(why: str):
        raise UnconfirmedViolation(f"the counterexample for {', '.join(violated) or '?'} does not replay through "
                                   f"the model ({why}): not reported")
    if root not in model.init_states():
        refuse("it does not start at an initial state")
    s = root
    for i, (label, t) in enumerate(steps):
        if not any(lb == label and nt == t for lb, nt in model.successors(s)):
            refuse(f"step {i + 1}, {label!r}, is not a step the model takes there")
        s = t
    by_name = {p.name: p for p in properties}
    cfg = model.cfg
    for name in violated:
        p = by_name.get(name)
        if name == DEADLOCK:
            ok = not model.stuck(s)
        elif p is None:
            refuse(f"{name} is not a property of this run")
        elif p.kind == "step":
            ok = not steps or p.check(cfg, steps[-2][1] if len(steps) > 1 else root, steps[-1][0], s)
        else:
            ok = p.check(cfg, s)
        if ok:
            refuse(f"{name} holds where the path ends")


def random_step(model, state, rng, allowed=None) -> Optional[tuple]:
    """A step chosen uniformly among the enabled ones (those `allowed(state, label)` says may
    be taken, if given): (label, next state), or None if there is none. Random walks,
    conform's walks and the availability study draw their steps here."""
    options = [(label, t) for label, t in model.successors(state) if allowed is None or allowed(state, label)]
    return options[rng.randrange(len(options))] if options else None
