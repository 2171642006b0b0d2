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
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from hypothesis import HealthCheck, Phase, Verbosity, seed as hypothesis_seed, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.stateful import (RuleBasedStateMachine, get_state_machine_test, initialize, invariant,
                                 precondition, rule)

from specs import Trace, config_summary
from verifier.core import knobs, stop
from verifier.core.properties import names as names_of
from verifier.core.properties import split, verdicts
from verifier.core.result import COMPLETE, DEADLOCK, SAMPLED_STATUS, VIOLATION, Progress, Result
from verifier.core.settings import Settings
from verifier.core.shrink import shrink_steps, violated_at_end

DATABASE_ROOT = Path(".hypothesis") / "kraft-verify"

# The profiles, registered with Hypothesis as kraft-verify-<name> (the names fuzz.Knobs.profile takes):
# `ci` is derandomized (the same examples every run), bounded by examples, without deadline, for
# CI gates; `nightly` is a large random budget whose failures go to the example database and
# replay first next time.
_COMMON = {"deadline": None, "print_blob": False, "verbosity": Verbosity.quiet, "report_multiple_bugs": False,
           "suppress_health_check": list(HealthCheck)}
settings.register_profile("kraft-verify-ci", max_examples=2500, stateful_step_count=40, derandomize=True,
                          database=None, phases=(Phase.explicit, Phase.generate, Phase.shrink), **_COMMON)
settings.register_profile("kraft-verify-nightly", max_examples=20_000, stateful_step_count=80, derandomize=False,
                          phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
                          **_COMMON)
PROFILES = ("ci", "nightly")


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

    progress: Optional[Callable] = None        # the command's progress line, told of each example
    started: float = 0.0

    def begin(self) -> None:
        self.examples += 1
        self.current = []
        if self.progress is not None:
            seconds = time.monotonic() - self.started
            self.progress(Progress(self.steps, self.examples, 0, 0, seconds,
                                   status=f"{self.examples:,} examples, {self.steps:,} steps"
                                          + (f", a failure found at example {self.first_failure_example:,}, shrinking"
                                             if self.first_failure_example else "")))

    def end(self) -> None:
        if self.current is not None:
            self.depths[len(self.current)] += 1
            self.current = None


def machine_for(model, invariants, recorder: Recorder) -> type[RuleBasedStateMachine]:
    """A RuleBasedStateMachine class for this model; statistics and failures go to `recorder`."""
    cfg = model.cfg
    state_invs, step_invs = split(invariants)
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
            self._enabled = {}

        def enabled(self, name: str) -> list:
            """The steps of action `name` this example may take. Every rule's precondition asks
            at each step, so all of a state's successors come from one kernel call (the same
            steps, in the same order, as asking each action, which cost about a quarter of a
            profiled run; the run is about 10% faster)."""
            if not self._enabled:
                self._enabled = {a: [] for a in model.action_names}
                for label, new in model.successors(self.state):
                    if model.fault_target(label) in (None, *self.targets):
                        self._enabled[label[0]].append((label, new))
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
    for inv in state_invs + step_invs:
        setattr(KRaftMachine, f"invariant_{inv.name}", _invariant_rule(cfg, inv))
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


def _invariant_rule(cfg, inv):
    """The property as a Hypothesis @invariant: a state invariant on the current state, a step
    invariant on the last step taken."""
    @invariant()
    def check(self):
        if inv.kind == "state":
            ok = inv.check(cfg, self.state)
        else:
            ok = self.last is None or inv.check(cfg, *self.last)
        if not ok:
            self.fail([inv.name])
    check.__name__ = f"invariant_{inv.name}"
    return check


def hypothesis_settings(profile: str, cfg, examples: Optional[int] = None,
                        steps: Optional[int] = None, database: Optional[Path] = DATABASE_ROOT) -> settings:
    """The profile's settings. Random profiles keep failures in `database`/<config key>, so a
    saved failure replays first next time; derandomized ones (ci) use no database."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile '{profile}' (known: {', '.join(PROFILES)})")
    base = settings.get_profile(f"kraft-verify-{profile}")
    changes: dict = {}
    if examples is not None:
        changes["max_examples"] = examples
    if steps is not None:
        changes["stateful_step_count"] = steps
    if database is not None and not base.derandomize:
        changes["database"] = DirectoryBasedExampleDatabase(str(Path(database) / database_key(cfg)))
    else:
        changes["database"] = None
    return settings(base, **changes)


def database_key(cfg) -> str:
    """One example database per config, so a saved failure replays against the same model."""
    import hashlib
    import json
    text = json.dumps(config_summary(cfg), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@knobs.declare("fuzz")
class Knobs(knobs.Knobs):
    """A Hypothesis profile and what a run changes of it."""
    profile: str = knobs.knob("ci", choices=PROFILES)  # ci: derandomized and bounded; nightly: random, large
    examples: Optional[int] = knobs.knob(None, least=1)  # max_examples (None: the profile's)
    steps: Optional[int] = knobs.knob(None, least=1)  # steps per example (None: the profile's)
    seed: Optional[int] = None  # None: the profile's
    shrink: bool = True  # let Hypothesis shrink a failure (the mutation gate needs only the kill)
    database: Any = "default"  # the example database root ("default": .hypothesis/, None: none)


def run(model, properties, settings_: Settings = Settings(), progress=None) -> Result:
    """The engine interface: a Hypothesis profile with what `Knobs` changes of it."""
    own = Knobs.of(settings_)
    database = DATABASE_ROOT if own.database == "default" else own.database
    return fuzz(model, properties, own.profile, own.examples, own.steps, own.seed, database,
                hypothesis_shrink=own.shrink, progress=progress)


def fuzz(model, invariants, profile: str = "ci", examples: Optional[int] = None,
         steps: Optional[int] = None, seed: Optional[int] = None, database: Optional[Path] = DATABASE_ROOT,
         hypothesis_shrink: bool = True, progress: Optional[Callable] = None) -> Result:
    """Run the machine outside pytest; a failure comes back shrunk, as a Trace: by Hypothesis
    (unless `hypothesis_shrink` is off, as for the mutant kill table, which needs only the kill),
    then by deleting steps while the same invariant still fails."""
    cfg = model.cfg
    recorder = Recorder(progress=progress, started=time.monotonic())
    machine = machine_for(model, invariants, recorder)
    chosen = hypothesis_settings(profile, cfg, examples, steps, database)
    if not hypothesis_shrink:
        chosen = settings(chosen, phases=[p for p in chosen.phases if p != Phase.shrink])
    test = get_state_machine_test(machine, settings=chosen)
    if seed is not None:
        test = hypothesis_seed(seed)(test)
    start = time.monotonic()
    trace = None
    try:
        with _constants_of_no_module():
            test()
    except Violation:
        initial, path, names = recorder.failure
        shrunk = shrink_steps(model, initial, path, names, invariants)
        violated = violated_at_end(cfg, initial, shrunk, invariants) or names
        trace = Trace(model, initial, shrunk, violated, engine="fuzz", checked=names_of(invariants),
                      properties=tuple(invariants))
    finally:
        recorder.end()
    seconds = time.monotonic() - start
    found = {name: trace for name in trace.violated} if trace is not None else {}
    result = Result(VIOLATION if trace is not None else COMPLETE, seconds, engine="fuzz", facts=recorder, sampled=True,
                    counterexamples=found, counterexample=trace, verdicts=verdicts(invariants, found, SAMPLED_STATUS))
    _statistics(result, model)
    return result


def _statistics(result: Result, model) -> None:
    """Counts, coverage and warnings: an action no example ever took is a warning, not silence.
    `result.facts` is the run's Recorder."""
    rec, seconds = result.facts, result.seconds
    off = model.off_by_config()
    result.counts = {"samples": rec.examples, "examples": rec.examples, "steps": rec.steps,
                     "seconds": round(seconds, 3), "examples_per_second": round(rec.examples / max(seconds, 1e-9), 1),
                     "steps_per_second": round(rec.steps / max(seconds, 1e-9), 1),
                     "examples_to_failure": rec.first_failure_example,
                     "depth": max(rec.depths) if rec.depths else 0}
    result.warnings = [f"action {name} never ran in any example: random testing never reached it"
                       for name in model.action_names if not rec.rule_runs.get(name) and name not in off]
    if result.counterexample is None:
        result.warnings.append("Hypothesis samples runs: no violation found is not a proof")
    result.sections = {
        "deadlock": {"checked": True, "found": DEADLOCK in result.counterexamples, "complete": True},
        "coverage": [{"action": a, "runs": rec.rule_runs.get(a, 0),
                      "status": "ran" if rec.rule_runs.get(a) else "off by config" if a in off else "never ran"}
                     for a in model.action_names]}


@contextmanager
def _constants_of_no_module():
    """Hypothesis (6.170, pinned) now and then draws a literal found in the source of the
    non-library modules in sys.modules ("local constants"), so a derandomized run depended on
    what the process had imported: the ci profile killed a mutant (the one without broker
    epoch checks) after 1,437 examples alone, 1,667 after importing the prove engine, 2,057
    after the CLI's bindings. A
    fuzz run draws from no module's literals, the same examples whoever calls it (its private
    hook; the cache of the pools it fills is set aside for the run)."""
    from hypothesis.internal.conjecture import providers
    from hypothesis.internal.cache import LRUCache
    from hypothesis.internal.constants_ast import Constants
    saved = providers._get_local_constants, providers.CONSTANTS_CACHE
    none = Constants()
    providers._get_local_constants, providers.CONSTANTS_CACHE = (lambda: none), LRUCache(1024)
    try:
        yield
    finally:
        providers._get_local_constants, providers.CONSTANTS_CACHE = saved
