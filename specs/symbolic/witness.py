"""Turn what z3 found into runs of the concrete model.

A symbolic step says what changed, not how the brokers made it happen: an HWM advance
is a produce, some fetches and the advance; an AlterPartition the leader's proposal and
its delivery. So each step is matched by a small breadth-first search over the concrete
model's own actions, among those that can make that step, for a state whose abstraction
is the symbolic successor. Preparation (a fetch, a produce, a proposal left in flight)
may come first as long as it changes nothing the abstraction sees; if a later step
needs a different preparation, the search backtracks.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import replace
from typing import Any, Optional

from specs import actions as A
from specs.config import Bounds, Config
from specs.model import Model
from specs.rules import Outside
from specs.scenario import NotEnabled, apply_op
from specs.state import State
from specs.symbolic.abstraction import Abstract, abstract, concretize
from specs.trace import Trace


def _makes() -> dict[str, frozenset]:
    """The concrete actions whose declarations name each z3 step (specs/actions/)."""
    out: dict[str, set] = {}
    for a in A.ACTIONS:
        for name in ([] if isinstance(a.z3, Outside) else a.z3):
            out.setdefault(name, set()).add(a.name)
    return {k: frozenset(v) for k, v in out.items()}


MAKES = _makes()
# Moves that prepare a step without changing what z3 sees: the steps z3 stands for by a
# stutter (a produce, an ISR proposal still in flight), fetches and HWM advances.
PREPARE = MAKES["stutter"] | MAKES["fetch"] | MAKES["advance_hwm"]
# A step only the abstraction has: after an unclean election, logs diverge by these moves.
MAKES = {**MAKES, "diverge": PREPARE | frozenset({"crash_lossy", "restart"}), "stutter": frozenset()}
FREE_PATH = frozenset({"alter_partition", "advance_hwm", "diverge"})   # may pass other abstractions


def _key(a: Abstract) -> Abstract:
    """What a concrete run must match: the leader's Fetch bookkeeping is left to the search
    (the run needs its own fetches; the concrete AlterPartition checks decide staleness)."""
    return a._replace(fetched=0, stale=0)


def search_config(cfg: Config) -> Config:
    """The concrete config with room for any run z3 may ask for (budgets do not gate replay)."""
    big = {f: 64 for f in Bounds.__dataclass_fields__}
    return replace(cfg, bounds=Bounds(**big))


def _leader_request(cfg: Config, s: State, isr: tuple[int, ...]) -> Optional[dict]:
    """The AlterPartition the leader would send for `isr`, as a controller request: each
    member's broker epoch as the leader learned it from Fetch (its own: the registered one).
    None if it names a new member the leader has no Fetch from in this leader epoch."""
    p, ctrl = s.ctrl.partition, s.ctrl
    if p.leader not in cfg.brokers or p.leader not in isr:
        return None
    epochs = {}
    for b in isr:
        fs = s.followers[cfg.brokers.index(b)]
        if b == p.leader or (b in p.isr and fs.leo < 0):
            epochs[str(b)] = ctrl.broker_epoch(b)
        elif fs.leo >= 0:
            epochs[str(b)] = fs.broker_epoch
        else:
            return None
    return {"broker": p.leader, "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch,
            "isr": list(isr), "broker_epochs": epochs}


def _moves(cfg: Config, s: State, names: set[str], propose: Optional[tuple[int, ...]] = None):
    for label, nxt in A.successors(cfg, s, unbounded=True):
        if label[0] in names:
            yield label, nxt
    fields = _leader_request(cfg, s, propose) if propose is not None else None
    if fields is not None:
        # Kafka's leader may change several members in one AlterPartition, and a request may
        # arrive late; the model's leader changes one member at a time, so such a step is
        # sent as the controller request the leader would have built.
        try:
            nxt, _, label = apply_op(cfg, s, {"op": "alter_partition", **fields})
        except (A.OpError, NotEnabled):
            return
        yield label, nxt


def step_runs(cfg: Config, s: State, step, target: Abstract, depth: int, limit: int = 4000,
              want: int = 6) -> list[list[tuple[tuple, State]]]:
    """Up to `want` shortest action sequences from s that make `step` and reach `target`."""
    names = MAKES[step.action] | PREPARE
    here, target = _key(abstract(cfg, s)), _key(target)
    if step.action == "stutter" or here == target:
        return [[]]
    free = step.action in FREE_PATH
    propose = None
    if step.action == "alter_partition":
        propose = tuple(b for i, b in enumerate(cfg.replicas) if step.members >> i & 1)
    found: list[list[tuple[tuple, State]]] = []
    seen = {s}
    queue = deque([(s, [])])
    while queue and len(seen) < limit:
        cur, path = queue.popleft()
        if len(path) >= depth:
            continue
        for label, nxt in _moves(cfg, cur, names, propose):
            if nxt in seen:
                continue
            seen.add(nxt)
            a = _key(abstract(cfg, nxt))
            run = path + [(label, nxt)]
            if a == target and (label[0] in MAKES[step.action] or label[0] == "alter_partition"):
                found.append(run)
                if len(found) >= want:
                    return found
            elif free or a == here:
                queue.append((nxt, run))
    return found


def concrete_run(cfg: Config, trace: list[tuple[Any, Abstract]],
                 seconds: float = 15.0) -> Optional[list[tuple[tuple, State]]]:
    """A run of the concrete model from its initial state through every abstract state of
    `trace` (a BMC counterexample), or None if the search finds none within `seconds`."""
    cfg = search_config(cfg)
    start = A.init_state(cfg)
    if _key(abstract(cfg, start)) != _key(trace[0][1]):
        return None
    deadline = time.monotonic() + seconds
    n = len(cfg.replicas)

    def go(s: State, i: int) -> Optional[list[tuple[tuple, State]]]:
        if i == len(trace):
            return []
        step, target = trace[i]
        if time.monotonic() > deadline:
            return None
        options = step_runs(cfg, s, step, target, 2 * n + 4)
        for run in options:
            end = run[-1][1] if run else s
            rest = go(end, i + 1)
            if rest is not None:
                return run + rest
        return None

    return go(start, 1)


def witness_trace(cfg: Config, trace, violated: list[str], properties=()) -> Optional[Trace]:
    """The BMC counterexample as a concrete Trace (engine z3), or None; `properties` are the
    concrete invariants the violated names stand for (the caller's)."""
    run = concrete_run(cfg, trace)
    if run is None:
        return None
    cfg = search_config(cfg)
    props = tuple(p for p in properties if p.name in violated)
    checked = [p.name for p in props]
    trace = Trace(Model(cfg, symmetry=False), A.init_state(cfg), run, violated=checked, engine="z3", checked=checked,
                  properties=props)
    return trace if checked and concrete_violations(trace) == checked else None


def cti_trace(cfg: Config, cti, properties=()) -> Optional[Trace]:
    """The counterexample to induction as a concrete state and the action(s) of its step."""
    cfg = search_config(replace(cfg, unclean_leader_election=cti.pre.unclean_leader_election))
    pre = concretize(cfg, cti.pre)
    if _key(abstract(cfg, pre)) != _key(cti.pre):
        return None
    n = len(cfg.replicas)
    depth = 2 * n + 4
    runs = step_runs(cfg, pre, cti.step, cti.post, depth)
    if not runs:
        return None
    props = tuple(p for p in properties if p.name in cti.violated)
    checked = [p.name for p in props]
    return Trace(Model(cfg, symmetry=False), pre, runs[0], violated=checked, engine="z3", checked=checked,
                 properties=props)


def concrete_violations(trace: Trace) -> list[str]:
    """Which of the trace's named invariants the concrete model says are broken at its end."""
    cfg = trace.config
    prev = trace.steps[-2][1] if len(trace.steps) > 1 else trace.initial
    label, last = trace.steps[-1] if trace.steps else (None, trace.initial)
    out = []
    by_name = {p.name: p for p in trace.properties}
    for name in trace.violated:
        inv = by_name[name]
        ok = inv.check(cfg, last) if inv.kind == "state" else (label is None or inv.check(cfg, prev, label, last))
        if not ok:
            out.append(name)
    return out
