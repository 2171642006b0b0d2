"""The named properties, and everything each one carries, declared where the property is.

A state invariant is `check(cfg, state) -> bool`; a step invariant is
`check(cfg, prev, label, next) -> bool`. The docstring of each check quotes the rule it
states (a KIP sentence or a docs/protocol.md section); `Invariant.quote` is that docstring.
Beside the check an invariant may carry:
- `explain`: why it fails at the last step of a counterexample, in words
  (invariants/explain.py); without one (or when it has nothing to say) the report writes a
  generic sentence from the model's display hooks;
- `symbolic`: its z3 twin, the same rule over symbolic states for any cluster size
  (invariants/symbolic.py), which the z3 engine proves inductive;
- `proved`: whether `prove` checks that twin when no --invariant is named (the others it
  checks when named).
Engines never import this package: the command line hands them the properties to check.
"""
from __future__ import annotations

import inspect
from typing import Callable, NamedTuple, Optional


class Invariant(NamedTuple):
    name: str
    kind: str                            # "state" or "step"
    check: Callable
    group: str                           # "elr", "data", "election"
    assumes: str = ""                    # the fault assumption under which it is claimed
    explain: Optional[Callable] = None   # (cfg, states, labels, describe) -> str or None
    symbolic: Optional[Callable] = None  # the z3 twin's formula: (enc, s) or (enc, s, params, t) -> BoolRef
    proved: bool = False                 # `prove` checks the twin by default

    @property
    def quote(self) -> str:
        return inspect.getdoc(self.check) or ""

    def why(self, trace) -> Optional[str]:
        """Why this property fails at the last step of `trace` (a specs.Trace), in words; None
        if it has no story of its own for this state."""
        if self.explain is None:
            return None
        states = [trace.initial] + [s for _, s in trace.steps]
        labels = [label for label, _ in trace.steps]
        return self.explain(trace.config, states, labels, trace.model.describe)


REGISTRY: list[Invariant] = []


# KIP-966's durability promise has a stated limit; the properties that rely on it say so.
TOLERANCE = ("assumes fewer lossy crashes than the min ISR the committed records were promised (the least "
             "since the first commit: a later raise does not count) and no unclean election an operator chose "
             "(KIP-966's tolerance; the controller's own last-known-leader election is no excuse)")


def _register(name: str, kind: str, group: str, assumes: str, explain, symbolic, proved: bool):
    def register(fn: Callable) -> Callable:
        if any(inv.name == name for inv in REGISTRY):
            raise TypeError(f"invariant {name}: declared twice")
        if not inspect.getdoc(fn):
            raise TypeError(f"invariant {name}: needs a docstring quoting the rule it states")
        if proved and symbolic is None:
            raise TypeError(f"invariant {name}: proved by default needs a z3 twin (symbolic=)")
        REGISTRY.append(Invariant(name, kind, fn, group, assumes, explain, symbolic, proved))
        return fn
    return register


def state_invariant(name: str, group: str, assumes: str = "", *, explain: Optional[Callable] = None,
                    symbolic: Optional[Callable] = None, proved: bool = False):
    return _register(name, "state", group, assumes, explain, symbolic, proved)


def step_invariant(name: str, group: str, assumes: str = "", *, explain: Optional[Callable] = None,
                   symbolic: Optional[Callable] = None, proved: bool = False):
    return _register(name, "step", group, assumes, explain, symbolic, proved)
