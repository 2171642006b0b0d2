"""The conform engine: the same traces through the model and through a Kafka release's own
controller (the oracle), compared field by field after every step.

A case is a starting state and a list of model steps (label, state after, error answered), from
a scenario file or a seeded random walk. Its steps are projected onto controller requests
(specs/projection.py), the oracle runs them, and the first step after which any field differs
is the case's divergence. A divergence is shrunk (steps deleted while every remaining step
stays allowed and the same field still differs) before it is reported.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Optional

from specs import Model
from verifier.engines.conform.compare import Diff, diff
from verifier.engines.conform.oracle import OracleError
from verifier.engines.conform.walks import PLAIN, Plan, walk_steps


@dataclass
class Case:
    name: str                      # "walk 17 (seed 3)" or a scenario file's path
    model: Model
    initial: Any                   # the model's starting state
    steps: list[tuple] = field(default_factory=list)    # (label, state after, error)
    cut: Optional[str] = None      # a scenario whose model run stops early: where and why
    violates: Optional[tuple] = None   # a scenario the model ends with a violation: (invariants, step)

    @property
    def labels(self) -> list[tuple]:
        return [label for label, _, _ in self.steps]


@dataclass
class Divergence:
    case: Case
    step: int                      # 1-based index of the step after which the states differ (0: the start)
    diffs: list[Diff]
    records: list[str]             # the record types Kafka wrote at that step
    kafka: dict[str, Any]          # Kafka's report after that step

    @property
    def label(self) -> Optional[tuple]:
        return self.case.steps[self.step - 1][0] if self.step else None


def replay(model: Model, initial, labels: list[tuple]) -> Optional[list[tuple]]:
    """The steps of `labels` from `initial`, or None if one is not allowed where it comes."""
    s, out = initial, []
    for label in labels:
        if not model.allows(s, label):
            return None
        s, error = model.apply(s, label)
        out.append((label, s, error))
    return out


def check(oracle, case: Case) -> tuple[Optional[Divergence], int]:
    """(the first divergence or None, steps compared)."""
    model = case.model
    ops, before = [], case.initial
    for label, after, _ in case.steps:
        ops.append(model.kafka_request(before, label, after))
        before = after
    states = oracle.run(model.kafka_start(case.initial), ops)
    views = [model.kafka_view(case.initial, None)] + [model.kafka_view(after, error) for _, after, error in case.steps]
    if not isinstance(states, list) or len(states) != len(views) or not all(isinstance(x, dict) for x in states):
        # another process's answer is data: a driver that answers short (a stale or foreign
        # build) compares nothing, and nothing compared is never an agreement
        got = len(states) if isinstance(states, list) else type(states).__name__
        raise OracleError(f"the Kafka oracle answered {got} states for {len(views)} (the start and {len(ops)} "
                          f"steps): remove oracle/target and rebuild it (make oracle)")
    for i, (mine, theirs) in enumerate(zip(views, states)):
        found = diff(mine, theirs, model.kafka_set_fields)
        if found:
            return Divergence(case, i, found, theirs.get("records", []), theirs), i
    return None, len(case.steps)


def walk(model: Model, rng: random.Random, depth: int, name: str, plan: Plan = PLAIN, refusable: tuple = (),
         enabled: Optional[set] = None) -> Case:
    """A seeded random walk (walks.py): from the initial state, a step chosen among the enabled
    ones (within the config's bounds, by the plan's weights, with the refused requests the plan
    offers) until none is or `depth` steps were taken."""
    s = model.init_states()[0]
    return Case(name, model, s, walk_steps(model, rng, depth, plan, refusable, enabled, start=s))


def shrink(oracle, found: Divergence, budget: int = 400) -> Divergence:
    """A shorter case with a divergence on the same field: steps after the divergence go, then
    chunks and single steps are deleted while the rest stays allowed and the field still
    differs (at most `budget` oracle runs)."""
    case = found.case
    target = found.diffs[0].field
    best = found
    labels = case.labels[:found.step]
    runs = 0

    def attempt(candidate: list[tuple]) -> Optional[Divergence]:
        nonlocal runs
        runs += 1
        steps = replay(case.model, case.initial, candidate)
        if steps is None:
            return None
        d, _ = check(oracle, Case(case.name, case.model, case.initial, steps))
        return d if d is not None and any(x.field == target for x in d.diffs) else None

    d = attempt(labels)
    if d is not None:
        best, labels = d, labels[:d.step]
    chunk = max(1, len(labels) // 2)
    while chunk >= 1 and runs < budget:
        i, progressed = 0, False
        while i < len(labels) and runs < budget:
            candidate = labels[:i] + labels[i + chunk:]
            d = attempt(candidate) if candidate else None
            if d is not None:
                best, labels, progressed = d, candidate[:d.step], True
            else:
                i += chunk
        if not progressed:
            chunk //= 2
    return best
