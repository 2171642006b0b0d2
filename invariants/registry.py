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
    assumes: str = ""     # the fault assumption under which it is claimed (shown beside its verdict)

    @property
    def quote(self) -> str:
        return inspect.getdoc(self.check) or ""


REGISTRY: list[Invariant] = []


# KIP-966's durability promise has a stated limit; the properties that rely on it say so.
TOLERANCE = "assumes < min ISR lossy crashes of candidates and no unclean election (KIP-966's tolerance)"


def state_invariant(name: str, group: str, assumes: str = ""):
    def register(fn: Callable) -> Callable:
        REGISTRY.append(Invariant(name, "state", fn, group, assumes))
        return fn
    return register


def step_invariant(name: str, group: str, assumes: str = ""):
    def register(fn: Callable) -> Callable:
        REGISTRY.append(Invariant(name, "step", fn, group, assumes))
        return fn
    return register
