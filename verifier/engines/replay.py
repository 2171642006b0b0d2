"""The replay engine: a scenario file (docs/SCENARIOS.md) run through the model step by step,
with the properties it is given checked after every operation and the file's expectations
compared with the state.

Exit 0 when every expectation holds, 1 with expected vs actual at the first one that does
not, 2 when a file is malformed (one line naming the file, the step, the problem). The
file is checked whole before any step runs (specs/scenario/format.py), the property names it
gives included, so a malformed file never half-runs. Broker-side operations are the model's
own actions, so their guard is checked: a replayed counterexample is a real run.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional

from specs import Model, ScenarioError, Trace, load_scenario, parse_scenario
from specs.scenario import NotEnabled, apply_op, compare, enabled_probe, expected_violations, operation
from verifier.core import knobs
from verifier.core.properties import state_violations, step_violations
from verifier.core.result import COMPLETE, VIOLATION
from verifier.core.result import Result
from verifier.core.settings import Settings


@dataclass
class Failure:
    step: int                     # 1-based index into the file's steps
    message: str
    diffs: list[tuple[str, Any, Any]] = field(default_factory=list)   # (field, expected, actual)


@dataclass
class ScenarioRun:
    path: str
    name: str
    failure: Optional[Failure]
    trace: Trace
    violations: list[tuple[int, list[str]]] = field(default_factory=list)   # (step, names) seen

    @property
    def ok(self) -> bool:
        return self.failure is None


def run_scenario(data: dict, path: str = "<scenario>", *, properties, preset: Optional[str] = None,
                 force_invariants: bool = False) -> ScenarioRun:
    """Run one loaded scenario against `properties`. Raises ScenarioError if it is malformed
    or names a property that is not among them."""
    scenario = parse_scenario(data, path, preset=preset)
    known = {p.name: p for p in properties}
    for where, names in scenario.named:
        if any(n not in known for n in names):
            if where.endswith("check_invariants"):
                raise ScenarioError(f"{path}: check_invariants must be true or a list of invariant names")
            raise ScenarioError(f"{where}: expect_violation must name invariants from: {', '.join(known)}")
    checked = scenario.check_invariants
    if force_invariants or checked is True:
        watched = set(known)
    elif isinstance(checked, list):
        watched = set(checked)
    else:
        watched = set()
    cfg, s = scenario.cfg, scenario.initial
    trace = Trace(Model(cfg, symmetry=False), s, engine="replay", properties=tuple(properties))
    last_error: Optional[str] = None
    violations: list[tuple[int, list[str]]] = []
    current: list[str] = state_violations(properties, cfg, s)
    pending: Optional[tuple[int, list[str]]] = None   # violations not yet accounted for

    def result(failure: Optional[Failure]) -> ScenarioRun:
        return ScenarioRun(path, scenario.name, failure, trace, violations)

    def unexpected(pending) -> Optional[Failure]:
        if pending:
            step, names = pending
            names = [n for n in names if n in watched]
            if names:
                return Failure(step, f"invariant violated after step {step}: {', '.join(names)}")
        return None

    for i, st in enumerate(scenario.steps, 1):
        if "op" in st:
            if unexpected(pending):
                return result(unexpected(pending))
            try:
                nxt, last_error, label = apply_op(cfg, s, operation(st))
            except NotEnabled as exc:
                return result(Failure(i, str(exc)))
            current = state_violations(properties, cfg, nxt) + step_violations(properties, cfg, s, label, nxt)
            trace.steps.append((label, nxt))
            s = nxt
            pending = (i, current) if current else None
            if current:
                violations.append((i, current))
        elif "expect" in st:
            diffs = compare(st["expect"], s, last_error)
            if diffs:
                return result(Failure(i, "expectation does not hold", diffs))
        elif "expect_not_enabled" in st:
            enabled, what = enabled_probe(cfg, s, st["expect_not_enabled"])
            if enabled:
                return result(Failure(i, f"{what} is enabled, expected it not to be"))
        else:
            names = expected_violations(st)
            missing = [n for n in names if n not in current]
            if missing:
                return result(Failure(i, f"expected violation of {', '.join(missing)} did not occur"
                                      + (f" (violated: {', '.join(current)})" if current else "")))
            trace.violated = list(names)
            if pending:
                rest = [n for n in pending[1] if n not in names]
                pending = (pending[0], rest) if rest else None
    return result(unexpected(pending))


def run_file(path: str, *, properties, **kw) -> ScenarioRun:
    return run_scenario(load_scenario(path), path, properties=properties, **kw)


@knobs.declare("replay")
class Knobs(knobs.Knobs):
    files: tuple = ()  # the scenario files, each stating its own model
    preset: Optional[str] = None  # run every file under this preset instead
    force_invariants: bool = False  # check the invariants even where a file says not to


def run(model, properties, settings: Settings = Settings(), progress=None) -> Result:
    """The engine interface: every file of `Knobs.files` (each scenario states its own model,
    so `model` is unused). The whole batch is checked before any result is kept: a malformed
    file raises ScenarioError. `facts` holds each file's ScenarioRun."""
    own = Knobs.of(settings)
    started = time.monotonic()
    runs = [run_file(path, properties=properties, preset=own.preset, force_invariants=own.force_invariants)
            for path in own.files]
    failed = [r for r in runs if not r.ok]
    return Result(VIOLATION if failed else COMPLETE, time.monotonic() - started, engine="replay", facts=runs,
                   counts={"scenarios": len(runs), "failed": len(failed)})
