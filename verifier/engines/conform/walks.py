"""Conform's seeded random walks, and what a walk plan may bias.

A walk starts from the model's initial state and takes, at each step, one of the enabled
steps within the config's bounds. Two things a plan (`Plan`) may add, both only through the
Model's hooks, so the walk stays a run of the model:

- **refused requests**: the model's successors leave out a step that changes nothing, so a
  walk never sends an operator a request the controller refuses (a preferred election while
  the preferred replica leads: ELECTION_NOT_NEEDED; an unclean election with no live replica:
  ELIGIBLE_LEADERS_NOT_AVAILABLE). Kafka's answer to such a request is part of what conform
  compares, so a plan with `refusals=N` also offers, up to N times per walk, a step whose guard
  holds, that the model answers with an error and that leaves the state as it was. Which labels
  can be refused is found by `scout`ing the config first (the labels of every step seen in a few
  walks, kept if some state seen refuses them), so nothing here names an action. A refusal
  leaves the state as it was, its budget included: it is compared, but it does not use up the
  bound that the operator's real elections need.
- **weights**: action name -> how much more (or less) often a step of it is chosen than an
  unweighted one, among the steps enabled at that point. This is how a walk set reaches an
  action whose guard holds rarely (the periodic unclean election needs a leaderless partition
  whose topic just enabled unclean elections) without lowering the bar it is held to.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Optional

from specs import Model

SCOUT_WALKS = 50            # walks that find the labels a config can refuse
SCOUT_DEPTH = 50


@dataclass(frozen=True)
class Plan:
    """How a set's walks choose their steps (the default: uniformly, no refusals)."""
    refusals: int = 0                                   # refused requests offered per walk, at most
    weights: dict[str, float] = field(default_factory=dict)   # action name -> weight (default 1)

    def describe(self) -> dict[str, Any]:
        return {"refusals_per_walk": self.refusals, "weights": dict(sorted(self.weights.items()))}


PLAIN = Plan()


def kind(label: tuple) -> str:
    """What conform counts a step under: its action, and the type a choice parameter names
    (`elect preferred`, `elect unclean`): the kinds of one action reach different code in Kafka."""
    return f"{label[0]} {label[1]}" if len(label) > 1 and isinstance(label[1], str) else label[0]


def refused(model: Model, state, label: tuple) -> Optional[tuple[Any, str]]:
    """(state, error) if `label` is a request the controller refuses in `state`: its guard holds,
    the model answers with an error and changes nothing (but the budget); else None."""
    if not model.allows(state, label):
        return None
    after, error = model.apply(state, label)
    if error is None or model.view(after) != model.view(state) or \
            model.kafka_view(after, None) != model.kafka_view(state, None):
        return None
    return state, error


def scout(model: Model, rng: random.Random, walks: int = SCOUT_WALKS) -> tuple[tuple, ...]:
    """The labels some state of `walks` plain walks refuses (sorted, so a seed fixes them)."""
    states, labels = [], set()
    for _ in range(walks):
        s = model.init_states()[0]
        for _ in range(SCOUT_DEPTH):
            options = list(model.successors(s))
            states.append(s)
            labels.update(label for label, _ in options)
            if not options:
                break
            s = options[rng.randrange(len(options))][1]
    found = {label for label in labels for s in states if refused(model, s, label)}
    return tuple(sorted(found, key=repr))


def walk_steps(model: Model, rng: random.Random, depth: int, plan: Plan = PLAIN, refusable: tuple = (),
               enabled: Optional[set] = None, start=None) -> list[tuple]:
    """A seeded random walk's steps, (label, state after, error): from the initial state, one of
    the enabled steps (and, while the plan allows, the refused requests of `refusable`) chosen by
    the plan's weights until none is left or `depth` steps were taken. The plain plan draws as
    it always has (uniformly, one `randrange` per step), so its walks do not change. `enabled`
    collects the actions offered at any step (a report tells "never enabled" from "not taken");
    `start` is the initial state (the caller's object, so a refusal's state is the one before it)."""
    s = model.init_states()[0] if start is None else start
    steps: list[tuple] = []
    left = plan.refusals
    for _ in range(depth):
        options = [(label, None) for label, _ in model.successors(s)]
        if left:
            options += [(label, found) for label in refusable if (found := refused(model, s, label))]
        if enabled is not None:
            enabled.update(label[0] for label, _ in options)
        if not options:
            break
        if plan.weights:
            label, found = rng.choices(options, [plan.weights.get(o[0][0], 1.0) for o in options])[0]
        else:
            label, found = options[rng.randrange(len(options))]
        if found is not None:
            left -= 1
            nxt, error = found
        else:
            nxt, error = model.apply(s, label)
        steps.append((label, nxt, error))
        s = nxt
    return steps
