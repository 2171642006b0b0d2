"""A registry of named properties so engines and reports list them uniformly.

A state invariant is `check(cfg, state) -> bool`; a step invariant is
`check(cfg, prev, label, next) -> bool`. The docstring of each check quotes the
rule it states (a KIP sentence or a docs/protocol.md section); `Invariant.quote` is that docstring.
"""
from __future__ import annotations

import inspect
from typing import Callable, NamedTuple


class Invariant(NamedTuple):
    name: str
    kind: str             # "state" or "step"
    check: Callable
    group: str            # "elr", "data", "election"

    @property
    def quote(self) -> str:
        return inspect.getdoc(self.check) or ""


REGISTRY: list[Invariant] = []


def state_invariant(name: str, group: str):
    def register(fn: Callable) -> Callable:
        REGISTRY.append(Invariant(name, "state", fn, group))
        return fn
    return register


def step_invariant(name: str, group: str):
    def register(fn: Callable) -> Callable:
        REGISTRY.append(Invariant(name, "step", fn, group))
        return fn
    return register
