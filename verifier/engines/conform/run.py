"""A conform run: scenario files and seeded random walks of the model, each compared step by step
with one Kafka release's own controller (engine.py), stopping at the first divergence, which is
shrunk before it is reported.

Determinism: walk i of seed S draws from its own generator (S, i), so the same config and seed
give the same walks, the same counts and the same first divergence, however the run is cut. A
plan with refused requests first scouts the labels it may refuse with a generator of its own
(walks.py), so that too is fixed by the seed.

What the walks compared is counted per kind of step (`walks.kind`: the action, an election by
its type) and per error the controller answered with, and a run whose walks were not cut short
and never compared an action some state of its config enables is not a pass (`COVERAGE`, exit 3):
the walks did not check what the run claims they did (reach.py decides what no state enables).
"""
from __future__ import annotations

import random
import time
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from specs import Trace
from verifier.core import knobs, stop
from verifier.core.result import (COMPLETE, HOLDS, SAMPLED_STATUS, STOPPED, STOPPED_STATUS, VIOLATED, VIOLATION,
                                  Progress, Result, Verdict)
from verifier.core.settings import Settings
from verifier.engines.conform.engine import Case, Divergence, check, shrink, walk
from verifier.engines.conform.oracle import Oracle, OracleStopped
from verifier.engines.conform.walks import PLAIN, Plan, kind, scout


@dataclass
class Outcome:
    version: str                                   # the Kafka release
    preset: str                                    # the model's preset (the config's)
    cases: int = 0                                 # traces compared
    steps: int = 0                                 # model steps compared with Kafka
    files: list[tuple[str, int, Optional[str]]] = field(default_factory=list)   # (path, steps, cut short why)
    walks: int = 0
    walk_steps: int = 0
    ops: dict[str, int] = field(default_factory=dict)   # model steps compared, per kind (walks.kind)
    with_error: dict[str, int] = field(default_factory=dict)   # ... of which answered with an error
    errors: dict[str, int] = field(default_factory=dict)    # steps compared, per error answered
    walk_ops: dict[str, int] = field(default_factory=dict)  # the walks' share of `ops`
    refusable: tuple = ()                          # the labels the plan's walks may send refused
    enabled: set = field(default_factory=set)      # the actions some walk state offered
    divergence: Optional[Divergence] = None
    stopped: Optional[str] = None                  # why the run ended before its budget
    seconds: float = 0.0
    classpath: list = field(default_factory=list)  # the oracle's (its kafka-metadata jar: coverage)

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0


def walk_rng(seed: int, i: int) -> random.Random:
    return random.Random(seed * 1_000_003 + i)


def _count(table: dict, key: str) -> None:
    table[key] = table.get(key, 0) + 1


def conform(version: str, api: str, preset: str, *, cases: list[Case], model=None, walks: int = 0,
            steps: int = 0, depth: int = 50, seed: int = 0, time_budget: Optional[float] = None,
            shrink_budget: int = 400, progress: Optional[Callable[[Progress], None]] = None,
            plan: Plan = PLAIN, coverage: Optional[str] = None, log: Optional[tuple[str, str]] = None) -> Outcome:
    """Compare `cases` (scenario files), then random walks of `model` with Kafka `version` (driver
    API generation `api`): `walks` of them, and more until `steps` walk steps were compared, each
    chosen as `plan` says; with `coverage` (a file) Kafka's classes run under JaCoCo, their probes
    appended there (jacoco.py); with `log` (level, file) they log at that level into that file.
    Raises OracleError if the oracle cannot run."""
    out = Outcome(version, preset)
    start = time.monotonic()
    if model is not None and plan.refusals and (walks or steps):
        out.refusable = scout(model, walk_rng(seed, -1))
    oracle = Oracle(version, api, Path(coverage) if coverage else None, log)
    out.classpath = oracle.classpath
    with oracle, stop.polled():
        oracle.deadline = start + time_budget if time_budget is not None else None
        try:
            _compare(oracle, out, cases, model, walks, steps, depth, seed, plan, time_budget, shrink_budget,
                     progress, start)
        except OracleStopped as exc:      # a signal or the budget ended a wait for the oracle's answer
            out.stopped = str(exc)
    out.seconds = time.monotonic() - start
    return out


def _compare(oracle, out, cases, model, walks, steps, depth, seed, plan, time_budget, shrink_budget, progress,
             start) -> None:
    """The files, then the walks, each compared with the oracle (the loop of `conform`)."""
    def one(case: Case, is_walk: bool) -> bool:
        found, compared = check(oracle, case)
        out.cases += 1
        out.steps += compared
        for label, _, error in case.steps[:compared]:
            k = kind(label)
            _count(out.ops, k)
            if is_walk:
                _count(out.walk_ops, k)
            if error is not None:
                _count(out.with_error, k)
                _count(out.errors, error)
        if is_walk:
            out.walks += 1
            out.walk_steps += compared
        if found is not None:
            out.divergence = shrink(oracle, found, shrink_budget)
            return False
        return True

    for case in cases:
        out.files.append((case.name, len(case.steps), case.cut))
        if not one(case, False):
            break
        _report(progress, out, walks)
    if out.divergence is None and model is not None:
        i = 0
        while i < walks or out.walk_steps < steps:
            out.stopped = stop.cut(start, time_budget, lambda: f"time budget of {time_budget:g} s spent after "
                                                               f"{i:,} walks ({out.walk_steps:,} walk steps)")
            if out.stopped:
                break
            if not one(walk(model, walk_rng(seed, i), depth, f"walk {i} (seed {seed})", plan, out.refusable,
                            out.enabled), True):
                break
            if i % 50 == 0:
                out.seconds = time.monotonic() - start
                _report(progress, out, walks)
            i += 1


def _report(progress, out: Outcome, walks: int) -> None:
    """Where the comparison is, in the core `Progress`: steps compared, cases finished, walks left."""
    if progress:
        progress(Progress(out.steps, out.cases, 0, max(walks - out.walks, 0), out.seconds))


PROPERTY = "ControllerAgreesWithKafka"
COVERAGE = "EveryActionCompared"


def coverage(model, out: Outcome, reached=None) -> tuple[list[dict], list[str]]:
    """Per action of the model and per kind its walks or files compared: steps compared (in
    walks, answered with an error) and its status: `compared`, `off by config` (the model says no
    run of this config enables it), `in no Kafka release` (the model says so; conform refuses a
    config that enables it), `not reachable here` (no state of the config enables it: `reached`,
    an exhaustive search, reach.py), `never compared` (the walks could have, and did not; why:
    never enabled in the states reached, or offered and never taken) or, in a run without walks,
    `not in the files`. Returns (rows, the actions never compared, each with its why)."""
    from verifier.engines.conform.reach import aims_at
    off = model.off_by_config()
    rows, never = [], []
    for name in model.action_names:
        kinds = sorted(k for k in out.ops if k == name or k.startswith(name + " ")) or [name]
        for k in kinds:
            n = out.ops.get(k, 0)
            lacks = model.kafka_lacks((name,))
            if n:
                status, why = "compared", ""
            elif lacks:
                status, why = "in no Kafka release", lacks
            elif name in off:
                status, why = "off by config", off[name]
            elif reached is not None and reached.unreachable(name):
                status, why = "not reachable here", f"no state of this config enables it (all {reached.states:,} searched)"
            elif out.walks:
                status = "never compared"
                sets = aims_at(model, name)
                why = (("offered by some state, never taken" if name in out.enabled else
                        "never enabled in the states the walks reached")
                       + ("; a state of this config enables it" if reached is not None and reached.complete else
                          f"; whether a state of this config enables it is open: {reached.why}" if reached else "")
                       + (f"; {model.enable_hint(name)}" if model.enable_hint(name) else "")
                       + (f"; walk sets that aim at it: --bound-set {', '.join(sets)}" if sets else ""))
                never.append(f"{name} ({why})")
            else:
                status, why = "not in the files", ""
            rows.append({"action": k, "compared": n, "walks": out.walk_ops.get(k, 0),
                         "with_error": out.with_error.get(k, 0), "status": status, "why": why})
    return rows, never


@knobs.declare("conform")
class Knobs(knobs.Knobs):
    """Which release's controller, and what is compared with it."""
    version: str = ""  # the Kafka release
    api: str = ""  # the driver API generation of that release
    preset: str = "kafka"  # the model's preset
    cases: tuple = ()  # scenario files, as Cases
    walks: int = knobs.knob(0, least=0)  # random walks of the model
    steps: int = knobs.knob(0, least=0)  # and more walks until this many walk steps were compared
    depth: int = knobs.knob(50, least=1)  # steps per walk at the most
    seed: int = 0  # walk i of seed S is the same on every run
    plan: Plan = PLAIN  # what a walk chooses (a walk set)
    coverage: str = ""  # a file: Kafka's classes under JaCoCo, their probes appended there
    coverage_report: bool = True  # and read into the result (False: the caller reads it once, after its runs)
    controller_log: str = ""  # a level of oracle.LOG_LEVELS: Kafka's controller classes log at it ("": not at all)
    controller_log_file: str = ""  # ... into this file ("": nowhere)
    reach: Any = None  # model -> reach.Reach: which actions no state of the config enables (the CLI binds a search)


def run(model, properties=(), settings: Settings = Settings(), progress=None) -> Result:
    """The engine interface. Its properties are agreement with Kafka (the safety properties
    are not its business) and, when it walks, that the walks compared every action the config
    can enable; what is compared is its `Knobs`, the time budget the settings' own; `facts` is
    the run's Outcome, `sections["actions"]` the coverage rows, `sections["kafka_coverage"]` (with
    the `coverage` knob) what JaCoCo saw of Kafka's controller code (jacoco.measure).
    Raises OracleError if the oracle cannot run.

    An action the walks never compared is searched for (reach.py): if no state of the config
    enables it, it is "not reachable here" and the run may pass; if one does (or the search
    cannot tell), the run did not check what it claims and stops short of a pass (exit 3, with
    what would reach it), never a violation (1: nothing disagreed). A run cut short by its
    budget says which actions it had not reached yet, as a warning."""
    e = Knobs.of(settings)
    out = conform(e.version, e.api, e.preset, cases=list(e.cases), model=model, walks=e.walks, steps=e.steps,
                  depth=e.depth, seed=e.seed, time_budget=settings.limits.time_budget, progress=progress, plan=e.plan,
                  coverage=e.coverage or None,
                  log=(e.controller_log, e.controller_log_file) if e.controller_log else None)
    d = out.divergence
    trace = None
    if d is not None:
        trace = Trace(d.case.model, d.case.initial, [(label, after) for label, after, _ in d.case.steps[:d.step]],
                      engine="conform")
    verdicts = [Verdict(PROPERTY, "conformance", VIOLATED if d else SAMPLED_STATUS, trace=trace,
                        quote=f"after every step, the model's controller state and answer equal those of Kafka "
                              f"{e.version}'s own controller code")]
    rows, never = coverage(model, out) if model is not None else ([], [])    # files alone: no walks, no model
    if never and out.walks and not d and not out.stopped and e.reach is not None:   # which no state enables
        rows, never = coverage(model, out, e.reach(model))
    warnings, short = [], ""
    if out.walks and not d:
        if out.stopped and never:
            warnings += [f"action {a} was not compared before the run stopped" for a in never]
        elif never:
            short = f"never compared in {out.walks:,} walks: " + ", ".join(never)
        verdicts.append(Verdict(COVERAGE, "coverage", STOPPED_STATUS if never else HOLDS,
                                quote="the walks compared every action the config can enable with Kafka at least once",
                                detail=short))
    sections = {"actions": rows}
    if e.coverage and e.coverage_report:
        from verifier.engines.conform.jacoco import JacocoError, measure
        from verifier.engines.conform.oracle import OracleError
        try:
            sections["kafka_coverage"] = measure(Path(e.coverage), out.classpath, e.version, Path(e.coverage).parent)
        except JacocoError as exc:
            raise OracleError(str(exc)) from None
    return Result(VIOLATION if d else (STOPPED if out.stopped or short else COMPLETE), out.seconds,
                  out.stopped or (f"not every action compared: {short}" if short else ""),
                  "conform", facts=out, verdicts=verdicts, sections=sections,
                  counts={"samples": out.cases, "steps_compared": out.steps, "walks": out.walks,
                          "walk_steps": out.walk_steps, "scenario_files": len(out.files),
                          "seconds": round(out.seconds, 2), "steps_per_second": round(out.steps_per_second)},
                  warnings=warnings)
