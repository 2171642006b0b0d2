"""Hypothesis stateful testing of the model: a RuleBasedStateMachine built from the
action table, not a second copy of the protocol.

One rule per action; its precondition is the action's guard (with budgets), and its
parameters are drawn from the steps the model says are enabled, so Hypothesis shrinks
towards earlier candidates and shorter stories. Every invariant of `invariants/` is an
`@invariant`. The machine is built per config, so presets, mutants, replication factor,
min ISR and fault bounds are all just the Config it is given.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from hypothesis import HealthCheck, Phase, Verbosity, seed as hypothesis_seed, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.stateful import (RuleBasedStateMachine, get_state_machine_test, initialize, invariant,
                                 precondition, rule)

from specs import Trace
from verifier import stop
from verifier.bfs import DEADLOCK

DATABASE_ROOT = Path(".hypothesis") / "kraft-verify"

PROFILES = {
    # derandomized (the same examples every run), bounded by examples, no deadline: for CI gates
    "ci": {"max_examples": 2500, "stateful_step_count": 40, "derandomize": True,
           "phases": (Phase.explicit, Phase.generate, Phase.shrink)},
    # a large random budget; failures are saved to the example database and replayed first
    "nightly": {"max_examples": 20_000, "stateful_step_count": 80, "derandomize": False,
                "phases": (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink)},
}


class Violation(AssertionError):
    """An invariant failed; carries the names so the CLI need not parse messages."""

    def __init__(self, names: list[str]):
        super().__init__("violated: " + ", ".join(names))
        self.names = names


@dataclass
class Recorder:
    """What the runs did (statistics) and the last failing run (after shrinking: the minimal one)."""
    examples: int = 0
    steps: int = 0
    rule_runs: Counter = field(default_factory=Counter)
    depths: Counter = field(default_factory=Counter)      # steps per example -> examples
    first_failure_example: Optional[int] = None
    failure: Optional[tuple[object, list, list[str]]] = None   # (initial, [(label, state)], violated)
    current: Optional[list] = None

    def begin(self) -> None:
        self.examples += 1
        self.current = []

    def end(self) -> None:
        if self.current is not None:
            self.depths[len(self.current)] += 1
            self.current = None


def machine_for(model, invariants, recorder: Recorder) -> type[RuleBasedStateMachine]:
    """A RuleBasedStateMachine class for this model; statistics and failures go to `recorder`."""
    cfg = model.cfg
    state_invs = [inv for inv in invariants if inv.kind == "state"]
    step_invs = [inv for inv in invariants if inv.kind == "step"]
    inits = model.init_states()
    targets = list(model.fault_targets)

    class KRaftMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            recorder.begin()
            self.initial = inits[0]
            self.state = self.initial
            self.steps: list = []
            self.last: Optional[tuple] = None
            self._enabled: dict = {}
            self.targets = frozenset(targets)

        @initialize(index=st.integers(0, len(inits) - 1),
                    faulty=st.sets(st.sampled_from(targets), min_size=1))
        def start(self, index, faulty):
            """`faulty`: what faults may hit in this example (brokers). Swarm testing for faults:
            a race usually needs several faults on one broker, which spreading them never does."""
            self.initial = self.state = inits[index]
            self.targets = frozenset(faulty)

        def enabled(self, name: str) -> list:
            if name not in self._enabled:
                steps = [(label, new) for label, new in model.action_successors(self.state, name)
                         if model.fault_target(label) in (None, *self.targets)]
                self._enabled[name] = steps
            return self._enabled[name]

        def apply(self, label, new) -> None:
            if stop.requested():     # a BaseException: Hypothesis passes it on without shrinking
                raise stop.Interrupted(stop.requested())
            self.last = (self.state, label, new)
            self.state = new
            self.steps.append((label, new))
            self._enabled = {}

            recorder.rule_runs[label[0]] += 1
            recorder.steps += 1
            recorder.current = self.steps

        def fail(self, names: list[str]) -> None:
            if recorder.first_failure_example is None:
                recorder.first_failure_example = recorder.examples
            recorder.failure = (self.initial, list(self.steps), names)
            raise Violation(names)

        @precondition(lambda self: not any(self.enabled(a) for a in model.action_names))
        @rule()
        def quiescent(self):
            """Nothing is enabled within the bounds. A deadlock if nothing could happen at all."""
            if model.stuck(self.state):
                self.fail([DEADLOCK])

        def teardown(self):
            recorder.end()

    for name in model.action_names:
        setattr(KRaftMachine, name, _rule_for(name, model.action_docs[name]))
    for inv in state_invs:
        setattr(KRaftMachine, f"invariant_{inv.name}", _state_check(cfg, inv))
    for inv in step_invs:
        setattr(KRaftMachine, f"invariant_{inv.name}", _step_check(cfg, inv))
    KRaftMachine.__name__ = KRaftMachine.__qualname__ = f"ModelMachine_{cfg.preset}_{cfg.mutant or 'none'}"
    return KRaftMachine


def _rule_for(name: str, doc: str):
    @precondition(lambda self: bool(self.enabled(name)))
    @rule(data=st.data())
    def run(self, data):
        label, new = data.draw(st.sampled_from(self.enabled(name)), label=name)
        self.apply(label, new)
    run.__name__ = name
    run.__doc__ = doc
    return run


def _state_check(cfg, inv):
    @invariant()
    def check(self):
        if not inv.check(cfg, self.state):
            self.fail([inv.name])
    check.__name__ = f"invariant_{inv.name}"
    return check


def _step_check(cfg, inv):
    @invariant()
    def check(self):
        if self.last is not None and not inv.check(cfg, *self.last):
            self.fail([inv.name])
    check.__name__ = f"invariant_{inv.name}"
    return check


def replay_failure(model, initial, labels: list, names: set, invariants) -> Optional[list]:
    """Run `labels` from `initial`; the steps up to the first violation of one of `names`, or
    None if a label is not enabled where it stands or no such violation happens."""
    cfg = model.cfg
    state_invs = [inv for inv in invariants if inv.kind == "state"]
    step_invs = [inv for inv in invariants if inv.kind == "step"]
    s, steps = initial, []
    for label in labels:
        new = next((t for lb, t in model.action_successors(s, label[0]) if lb == label), None)
        if new is None:
            return None
        bad = {inv.name for inv in step_invs if not inv.check(cfg, s, label, new)}
        bad |= {inv.name for inv in state_invs if not inv.check(cfg, new)}
        steps.append((label, new))
        if bad & names:
            return steps
        s = new
    return None


def shrink_steps(model, initial, steps: list, names: list[str], invariants) -> list:
    """Delete steps while the same invariant still fails and every step stays enabled: halving
    chunks, then every window of 1-4 steps, then every pair of steps (a fence and its unfence
    only go together), until no deletion helps."""
    wanted = set(names)

    def attempt(labels):
        return replay_failure(model, initial, labels, wanted, invariants) if labels else None

    best = attempt([label for label, _ in steps]) or steps
    labels = [label for label, _ in best]
    chunk = max(len(labels) // 2, 1)
    while chunk > 4:                                   # coarse: halving chunks
        i = 0
        while i < len(labels):
            found = attempt(labels[:i] + labels[i + chunk:])
            if found is not None:
                best, labels = found, [label for label, _ in found]
            else:
                i += chunk
        chunk //= 2
    changed = True
    while changed:
        changed = False
        for size in (4, 3, 2, 1):                      # every window, at every offset
            i = 0
            while i + size <= len(labels):
                found = attempt(labels[:i] + labels[i + size:])
                if found is not None:
                    best, labels, changed = found, [label for label, _ in found], True
                else:
                    i += 1
        for a in range(len(labels)):                   # every pair of separate steps
            for b in range(a + 2, len(labels)):
                found = attempt(labels[:a] + labels[a + 1:b] + labels[b + 1:])
                if found is not None:
                    best, labels, changed = found, [label for label, _ in found], True
                    break
            if changed:
                break
    return best


def hypothesis_settings(profile: str, cfg, examples: Optional[int] = None,
                        steps: Optional[int] = None, database: Optional[Path] = DATABASE_ROOT) -> settings:
    """The profile's settings. Random profiles keep failures in `database`/<config key>, so a
    saved failure replays first next time; derandomized ones (ci) use no database."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile '{profile}' (known: {', '.join(PROFILES)})")
    p = dict(PROFILES[profile])
    if examples is not None:
        p["max_examples"] = examples
    if steps is not None:
        p["stateful_step_count"] = steps
    db = None
    if database is not None and not p["derandomize"]:
        db = DirectoryBasedExampleDatabase(str(Path(database) / database_key(cfg)))
    return settings(deadline=None, database=db, print_blob=False, verbosity=Verbosity.quiet,
                    report_multiple_bugs=False,
                    suppress_health_check=list(HealthCheck), **p)


def database_key(cfg) -> str:
    """One example database per config, so a saved failure replays against the same model."""
    import hashlib
    import json
    from verifier.summary import config_json
    text = json.dumps(config_json(cfg), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _violated_at_end(cfg, initial, steps: list, invariants) -> list[str]:
    prev = steps[-2][1] if len(steps) > 1 else initial
    label, last = steps[-1]
    return [inv.name for inv in invariants
            if not (inv.check(cfg, last) if inv.kind == "state" else inv.check(cfg, prev, label, last))]


def _checked(model, invariants):
    return None if len(invariants) == len(model.properties) else [inv.name for inv in invariants]


@dataclass
class FuzzResult:
    status: str                       # "ok" | "violation"
    recorder: Recorder
    seconds: float
    trace: Optional[Trace] = None

    @property
    def violated(self) -> list[str]:
        return list(self.trace.violated) if self.trace else []


def fuzz(model, invariants, profile: str = "ci", examples: Optional[int] = None,
         steps: Optional[int] = None, seed: Optional[int] = None, database: Optional[Path] = DATABASE_ROOT,
         hypothesis_shrink: bool = True) -> FuzzResult:
    """Run the machine outside pytest; a failure comes back shrunk, as a Trace: by Hypothesis
    (unless `hypothesis_shrink` is off, as for the mutant kill table, which needs only the kill),
    then by deleting steps while the same invariant still fails."""
    cfg = model.cfg
    recorder = Recorder()
    machine = machine_for(model, invariants, recorder)
    chosen = hypothesis_settings(profile, cfg, examples, steps, database)
    if not hypothesis_shrink:
        chosen = settings(chosen, phases=[p for p in chosen.phases if p != Phase.shrink])
    test = get_state_machine_test(machine, settings=chosen)
    if seed is not None:
        test = hypothesis_seed(seed)(test)
    start = time.monotonic()
    try:
        test()
    except Violation:
        initial, path, names = recorder.failure
        shrunk = shrink_steps(model, initial, path, names, invariants)
        violated = _violated_at_end(cfg, initial, shrunk, invariants) or names
        trace = Trace(model, initial, shrunk, violated, engine="fuzz", checked=_checked(model, invariants))
        return FuzzResult("violation", recorder, time.monotonic() - start, trace)
    finally:
        recorder.end()
    return FuzzResult("ok", recorder, time.monotonic() - start)
