"""The rule-flip gate's cases: for a broker-side rule flipped from a release's value, the shortest
run of steps a real cluster can be made to take after which the flipped model and the release's
model part, as cluster-conform would see it.

A rule that makes the model more permissive than Kafka passes a random walk unless the walk
happens to drive the one step that tells the two apart. So the gate does not wait for one: it
runs both models side by side from the fresh topic a cluster starts with, over the steps the
harness can cause or waits for (steps.DRIVEN and WAITED, minus steps.not_drivable), breadth
first. A step both models take to the same state extends the common run. A step the flipped
model takes to another state than the release's, or that the release does not take at all,
ends a case, kept if the flipped model cannot explain what the release's model shows after it
(explain.search over that outcome, the comparison cluster-conform makes with a real cluster).
The case is the flipped model's run: `cluster-conform --flag RULE=VALUE FILE` acts it out, and a
real cluster diverging at the step whose run parts the two (Case.parts_at) or later, the common
run before it agreeing, is the gate passing for that rule (bench/ruleflip_bench.py).
None within the depth is a finding too: no step a harness can drive tells the two apart.
"""
from __future__ import annotations

from collections import deque
from typing import Any, NamedTuple, Optional

from specs import BUDGETS, Model, Trace, broker_side_rules, make_config
from verifier.engines.cluster import steps as ST
from verifier.engines.cluster.explain import model_incarnation, model_view, search
from verifier.engines.cluster.harness import Data, Observation

# What a broker does at once after a step, with no request of the harness: the release's model
# takes these after the distinguishing step to predict what a real cluster shows.
AT_ONCE = ("deliver_alter_partition", "advance_hwm", "expand_isr")
# The bounds the search widens through, smallest first (a bound not named is 0): a case needs few
# faults, and a search over the widest bounds alone drowns in the ones it does not need.
LADDER = (
    {"records": 1, "isr_shrinks": 1},
    {"records": 2, "isr_shrinks": 1, "fences": 1},
    {"records": 2, "isr_shrinks": 1, "clean_shutdowns": 1},
    {"records": 2, "isr_shrinks": 1, "fences": 1, "clean_shutdowns": 1},
    {"records": 2, "isr_shrinks": 2, "fences": 1, "crashes": 1, "lossy_crashes": 1, "clean_shutdowns": 1},
)
MAX_STATES = 60_000


class Case(NamedTuple):
    rule: str
    value: Any                      # the flipped value
    trace: Optional[Trace]          # the flipped model's run, its last step the one that parts them
    release_takes: Optional[tuple]  # the release's model after that step: (state, error), None: it cannot take it
    states: int                     # settled states of the common run searched (every rung)
    why_none: str = ""              # no case: why
    bounds: Optional[dict] = None   # the rung of LADDER the case was found on
    parts_at: int = 0               # the place (1-based) in the trace of the step whose run parts the two: the
                                    # steps before it are the common run


def at_once(model, s) -> list[tuple]:
    """What brokers do at once from `s` with no request of the harness, one step at a time (the
    first in label order): [(label, state)]."""
    out = []
    for _ in range(6):
        nxt = next(((lbl, t) for lbl, t in sorted(model.successors(s, unbounded=True), key=lambda p: p[0])
                    if lbl[0] in AT_ONCE), None)
        if nxt is None:
            break
        out.append(nxt)
        s = nxt[1]
    return out


def run_of(model, s, label) -> list[tuple]:
    """`label` taken in `s`, then what brokers do at once: [(label, state)]; [] if not allowed."""
    if not model.allows(s, label):
        return []
    t = model.apply(s, label)[0]
    run = [(label, t)]
    unfence = ("unfence", label[1]) if label[0] == "fetch" else None
    if unfence and label[1] in s.ctrl.fenced and model.allows(t, unfence):
        # the harness heals a fenced follower's link to the controller for its fetch (steps.drive):
        # its next heartbeat unfences it
        t = model.apply(t, unfence)[0]
        run.append((unfence, t))
    return run + at_once(model, t)


def predicted(model, s, label) -> tuple[Observation, Any]:
    """What the release's model says a real cluster shows after the harness makes it take `label`
    in `s`: the step if the model takes it, then what brokers do at once, as cluster-conform's
    observation (the controller's states as the log would hold them, the replicas, the HWMs), and
    the model's state after it."""
    error = model.apply(s, label)[1] if model.allows(s, label) else None
    path = [t for _, t in (run_of(model, s, label) or at_once(model, s))]
    x = path[-1] if path else s
    views, last = [], model_view(s)
    for y in path:
        if model_view(y) != last:
            views.append(Model.kafka_view(y, None))
        last = model_view(y)
    cfg = model.cfg
    leader = x.ctrl.partition.leader
    alive = {b: r.alive for b, r in zip(cfg.brokers, x.replicas)}
    hwm = x.replicas[cfg.brokers.index(leader)].hwm if leader in cfg.brokers and alive[leader] else None
    data = Data(alive, {b: [tuple(e) for e in r.log] for b, r in zip(cfg.brokers, x.replicas)}, hwm,
                tuple(sorted(x.hist.acked)), {b: r.hwm for b, r in zip(cfg.brokers, x.replicas) if r.alive})
    return Observation(views, [[] for _ in views], data, error), x


def _cut(cfg, s) -> set:
    """The brokers a harness has cut from the controller in `s`: fenced while running."""
    return {b for b, r in zip(cfg.brokers, s.replicas) if r.alive and b in s.ctrl.fenced}


def distinguish(preset: str, rule: str, value: Any, max_depth: int = 8, replicas: Optional[list] = None,
                ladder: tuple = LADDER) -> Case:
    """The first case of the bounds of `ladder`, smallest first (see _distinguish); Case.trace None
    when no rung has one."""
    states, whys = 0, []
    for rung in ladder:
        bounds = {name: rung.get(name, 0) for name in BUDGETS}
        case = _distinguish(preset, rule, value, bounds, max_depth, replicas)
        states += case.states
        if case.trace is not None:
            return case._replace(states=states, bounds=rung)
        whys.append(case.why_none)
    return Case(rule, value, None, None, states, whys[-1] if len(whys) == 1 else
                f"on each of {len(ladder)} bound sets up to {_bounds_text(ladder[-1])}: " + whys[-1])


def _bounds_text(rung: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in rung.items())


def _distinguish(preset: str, rule: str, value: Any, bounds: dict, max_depth: int,
                 replicas: Optional[list]) -> Case:
    """The shortest flipped-model run whose last step a real cluster of the release would show to
    differ (see the module's docstring); Case.trace None when none is within `max_depth` driven
    steps. The search runs over settled states (what brokers do at once taken), as a cluster
    rests between the harness's steps."""
    release = Model(make_config(preset, replicas=replicas, bounds=bounds), symmetry=False)
    flipped = Model(make_config(preset, replicas=replicas, bounds=bounds, flags={rule: value}), symmetry=False)
    start = release.init_states()[0]
    if flipped.init_states()[0] != start:
        return Case(rule, value, Trace(flipped, flipped.init_states()[0]), None, 0, parts_at=1)
    first = at_once(release, start)
    if first != at_once(flipped, start):
        return _ends(release, flipped, rule, value, {start: None}, start, None, 1)
    settled = first[-1][1] if first else start
    parent: dict = {settled: (start, first) if first else None}
    queue = deque([(settled, 0)])
    hidden: dict[str, str] = {}         # step -> why no harness can drive it, where the models part
    unseen: set[str] = set()            # steps where they part with outcomes a cluster shows alike
    while queue and len(parent) < MAX_STATES:
        s, depth = queue.popleft()
        for label in sorted({lbl for lbl, _ in release.successors(s)} | {lbl for lbl, _ in flipped.successors(s)}):
            if label[0] not in ST.DRIVEN + ST.WAITED:
                continue
            mine, theirs = run_of(release, s, label), run_of(flipped, s, label)
            why = ST.not_drivable(flipped, s, label) or _partial_shrink(s, label)
            if why:
                if mine != theirs:
                    hidden.setdefault(label[0], why)
                continue
            if mine == theirs:
                t = theirs[-1][1] if theirs else None
                if t is not None and t not in parent and depth + 1 < max_depth:
                    parent[t] = (s, theirs)
                    queue.append((t, depth + 1))
                continue
            case = _ends(release, flipped, rule, value, parent, s, label, len(parent))
            if case is not None:
                return case
            k = _parting(mine, theirs)
            unseen.add((mine if k < len(mine) else theirs)[k][0][0])
    why = (f"no run of at most {max_depth} steps a harness can drive tells {rule}={value} from the release's "
           f"value ({len(parent)} settled states of the common run searched"
           + (", the search's cap" if len(parent) >= MAX_STATES else "") + ")")
    if hidden:
        why += "; the models part only at steps no harness can drive: " + "; ".join(
            f"{name} ({reason})" for name, reason in sorted(hidden.items()))
    if unseen:
        why += ("; they part at " + ", ".join(sorted(unseen)) + " only with outcomes a cluster shows alike "
                "(the order of what brokers do at once, or state no observation holds)")
    return Case(rule, value, None, None, len(parent), why)


def _ends(release, flipped, rule, value, parent, s, label, states) -> Optional[Case]:
    """A case ending where the two models' runs of `label` from `s` part (label None: what brokers
    do at once from the start), if a real cluster acting as the release's model would show the
    flipped model wrong. The flipped run is acted out from its first step of its own (from
    `label` when it is the release's brokers that do more) one step at a time as cluster-conform
    does: each step driven, the release's outcome observed, the flipped model's explanation
    searched; the first step with none ends the case."""
    mine = run_of(release, s, label) if label else at_once(release, s)
    theirs = run_of(flipped, s, label) if label else at_once(flipped, s)
    k = _parting(mine, theirs)
    first = k if k < len(theirs) else 0
    x_flipped = x_release = theirs[first - 1][1] if first else s
    taken: list[tuple] = []
    for j in range(first, len(theirs)):
        step = theirs[j][0]
        if not flipped.allows(x_flipped, step):
            if step not in taken:       # cluster-conform would call the file not drivable
                return None
            taken.remove(step)          # taken on its own before: cluster-conform skips it
            continue
        obs, after = predicted(release, x_release, step)
        found = search(flipped, x_flipped, step, obs, model_incarnation, _cut(flipped.cfg, x_flipped)).found
        if found is None:
            trace = _trace(flipped, parent, s, theirs[:j + 1])
            return Case(rule, value, trace, _taken(release, x_release, step), states,
                        parts_at=len(trace.steps) - j)
        taken += [lbl for lbl, _, _ in found.path if lbl != step]
        x_flipped, x_release = found.state, after
    return None


def _partial_shrink(s, label) -> Optional[str]:
    """Why a harness cannot count on a cluster shrinking the ISR by only some of its followers:
    it cuts every follower's data link between steps, so each lags from its last fetch and a
    real leader drops all whose lag passed replica.lag.time.max.ms, in one request or a few
    (a case that needs part of the ISR builds it up again with fetches)."""
    if label[0] != "shrink_isr":
        return None
    p = s.ctrl.partition
    if {label[1], *label[2]} == set(p.isr) - {p.leader}:
        return None
    return "a lag shrink takes every follower whose data link the harness cut, not some of them"


def _parting(mine: list, theirs: list) -> int:
    """The index of the first step where two runs part."""
    return next(i for i in range(max(len(mine), len(theirs)) + 1)
                if i >= len(mine) or i >= len(theirs) or mine[i] != theirs[i])


def _taken(model, s, label) -> Optional[tuple]:
    return model.apply(s, label) if model.allows(s, label) else None


def _trace(model, parent: dict, s, steps: list[tuple]) -> Trace:
    """The run from the start to `s` (each settled state's parent: (state before, its steps)), then
    `steps`."""
    out = list(steps)
    while parent.get(s) is not None:
        prev, run = parent[s]
        out = list(run) + out
        s = prev
    return Trace(model, s, out)


def flips(preset: str) -> list[tuple[str, Any]]:
    """Every broker-side rule, flipped from the preset's value."""
    rules = make_config(preset).rules
    return [(name, not getattr(rules, name)) for name in broker_side_rules()]
