"""The properties an engine is handed, as every engine reads them: split by kind, checked on a
state or a step, named. Written once, so no engine keeps its own copy of "which invariants
were checked" or of the state/step split. Nothing here knows what a property says."""
from __future__ import annotations


def split(properties) -> tuple[tuple, tuple]:
    """(state invariants, step invariants), each in the order given."""
    props = tuple(properties)
    return tuple(p for p in props if p.kind == "state"), tuple(p for p in props if p.kind == "step")


def state_violations(properties, cfg, state, skip=()) -> list[str]:
    """The state invariants among `properties` (not named in `skip`) false in `state`."""
    return [p.name for p in properties if p.kind == "state" and p.name not in skip and not p.check(cfg, state)]


def step_violations(properties, cfg, prev, label, state, skip=()) -> list[str]:
    """The step invariants among `properties` (not named in `skip`) false on prev -label-> state."""
    return [p.name for p in properties
            if p.kind == "step" and p.name not in skip and not p.check(cfg, prev, label, state)]


def names(properties) -> list[str]:
    return [p.name for p in properties]


def verdicts(properties, counterexamples: dict, otherwise: str) -> list:
    """One Verdict per property: violated with its own trace, else `otherwise` (holds, not
    checked to completion, not violated in sampled runs...)."""
    from verifier.core.result import VIOLATED, Verdict
    out = []
    for p in properties:
        trace = counterexamples.get(p.name)
        out.append(Verdict(p.name, p.kind, VIOLATED if trace is not None else otherwise,
                           quote=getattr(p, "quote", ""), assumes=getattr(p, "assumes", ""), trace=trace))
    return out
