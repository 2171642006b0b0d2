"""A conform run: scenario files and seeded random walks of the model, each compared step by step
with one Kafka release's own controller (engine.py), stopping at the first divergence, which is
shrunk before it is reported.

Determinism: walk i of seed S draws from its own generator (S, i), so the same config and seed
give the same walks, the same counts and the same first divergence, however the run is cut.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from specs import Trace
from verifier.core import stop
from verifier.core.result import COMPLETE, SAMPLED_STATUS, STOPPED, VIOLATED, VIOLATION, Result, Verdict
from verifier.core.settings import Settings
from verifier.engines.conform.engine import Case, Divergence, check, shrink, walk
from verifier.engines.conform.oracle import Oracle


@dataclass
class Outcome:
    version: str                                   # the Kafka release
    preset: str                                    # the model's preset (the config's)
    cases: int = 0                                 # traces compared
    steps: int = 0                                 # model steps compared with Kafka
    files: list[tuple[str, int, Optional[str]]] = field(default_factory=list)   # (path, steps, cut short why)
    walks: int = 0
    walk_steps: int = 0
    ops: dict[str, int] = field(default_factory=dict)   # model steps compared, per action
    divergence: Optional[Divergence] = None
    stopped: Optional[str] = None                  # why the run ended before its budget
    seconds: float = 0.0

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0


def walk_rng(seed: int, i: int) -> random.Random:
    return random.Random(seed * 1_000_003 + i)


def conform(version: str, api: str, preset: str, *, cases: list[Case], model=None, walks: int = 0,
            steps: int = 0, depth: int = 50, seed: int = 0, time_budget: Optional[float] = None,
            shrink_budget: int = 400, progress: Optional[Callable[[Outcome], None]] = None) -> Outcome:
    """Compare `cases` (scenario files), then random walks of `model` with Kafka `version` (driver
    API generation `api`): `walks` of them, and more until `steps` walk steps were compared.
    Raises OracleError if the oracle cannot run."""
    out = Outcome(version, preset)
    start = time.monotonic()
    with Oracle(version, api) as oracle, stop.polled():
        def one(case: Case, is_walk: bool) -> bool:
            found, compared = check(oracle, case)
            out.cases += 1
            out.steps += compared
            for label, _, _ in case.steps[:compared]:
                out.ops[label[0]] = out.ops.get(label[0], 0) + 1
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
            if progress:
                progress(out)
        if out.divergence is None and model is not None:
            i = 0
            while i < walks or out.walk_steps < steps:
                if stop.requested():
                    out.stopped = stop.reason()
                    break
                if time_budget is not None and time.monotonic() - start > time_budget:
                    out.stopped = (f"time budget of {time_budget:g} s spent after {i:,} walks "
                                   f"({out.walk_steps:,} walk steps)")
                    break
                if not one(walk(model, walk_rng(seed, i), depth, f"walk {i} (seed {seed})"), True):
                    break
                if progress and i % 50 == 0:
                    out.seconds = time.monotonic() - start
                    progress(out)
                i += 1
    out.seconds = time.monotonic() - start
    return out


PROPERTY = "ControllerAgreesWithKafka"


def run(model, properties=(), settings: Settings = Settings(), progress=None) -> Result:
    """The engine interface. Its one property is agreement with Kafka (the safety properties
    are not its business); `settings.engine` holds the release (`version`, `api`), the model's
    `preset`, the scenario `cases`, `walks`, `steps`, `depth`; the seed and time budget are
    settings' own; `facts` is the run's Outcome. Raises OracleError if the oracle cannot run."""
    e = settings.engine
    out = conform(e["version"], e["api"], e["preset"], cases=e.get("cases", []), model=model,
                  walks=e.get("walks", 0), steps=e.get("steps", 0), depth=e.get("depth", 50),
                  seed=settings.seed or 0, time_budget=settings.limits.time_budget, progress=progress)
    d = out.divergence
    trace = None
    if d is not None:
        trace = Trace(d.case.model, d.case.initial, [(label, after) for label, after, _ in d.case.steps[:d.step]],
                      engine="conform")
    verdict = Verdict(PROPERTY, "conformance", VIOLATED if d else SAMPLED_STATUS, trace=trace,
                      quote=f"after every step, the model's controller state and answer equal those of Kafka "
                            f"{e['version']}'s own controller code")
    off = model.off_by_config()
    never = [a for a in model.action_names if out.walks and a not in out.ops and a not in off]
    return Result(VIOLATION if d else (STOPPED if out.stopped else COMPLETE), out.seconds, out.stopped or "",
                  "conform", facts=out, verdicts=[verdict],
                  counts={"samples": out.cases, "steps_compared": out.steps, "walks": out.walks,
                          "walk_steps": out.walk_steps, "scenario_files": len(out.files),
                          "seconds": round(out.seconds, 2), "steps_per_second": round(out.steps_per_second)},
                  warnings=[f"action {a} was never compared with Kafka in {out.walks:,} walks" for a in never])
