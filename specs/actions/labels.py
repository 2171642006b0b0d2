"""Labels and scenario operations, both derived from the action declarations.

A label is `(name, *params)` in the declared parameter order; under any_candidate_elections
an electing action's label may end in `("elected", broker)`. A scenario operation is the same
step as JSON: `{"op": name, param: value, ...}`. `op_label` checks an operation against the
declaration (unknown op, unknown or missing field, wrong type) before anything runs.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

from specs.actions.declare import DECLARATIONS, Action, OpError

ELECTED = "elected"
# A controlled shutdown's step in a partition the broker does not lead while it leads another
# (specs/partitions.py): its label is ("controlled_shutdown", broker, LEADS_ELSEWHERE). One
# partition's model never takes it.
LEADS_ELSEWHERE = ("leads", "another partition")


def _action(name: Any) -> Action:
    for a in DECLARATIONS:
        if a.name == name:
            return a
    raise OpError(f"unknown op {name!r}")


def split_choice(label: tuple) -> tuple[tuple, Optional[int]]:
    """(params, elected broker or None) of a label."""
    last = label[-1] if len(label) > 1 else None
    if type(last) is tuple and len(last) == 2 and last[0] == ELECTED:
        return label[1:-1], last[1]
    return label[1:], None


def op_label(op: Mapping[str, Any]) -> tuple:
    """The label of a scenario operation, every field checked against the declaration."""
    action = _action(op.get("op"))
    allowed = set(action.param_names) | ({ELECTED} if action.elects else set())
    for key in op:
        if key != "op" and key not in allowed:
            raise OpError(f"op '{action.name}' has an unknown field '{key}'")
    values = []
    for p in action.params:
        if p.name not in op:
            if p.required:
                raise OpError(f"missing field '{p.name}'")
            values.append(p.default)
            continue
        values.append(p.kind.parse(op[p.name], p.name))
    if action.check is not None:
        action.check(*values)
    label = (action.name,) + tuple(values)
    if ELECTED in op:
        value = op[ELECTED]
        if not isinstance(value, int) or isinstance(value, bool):
            raise OpError(f"field '{ELECTED}' has the wrong type ({type(value).__name__})")
        label = label + ((ELECTED, value),)
    return label


def label_to_op(label: tuple) -> dict[str, Any]:
    """The scenario operation for a label (fields left at their default are left out)."""
    action = _action(label[0])
    op: dict[str, Any] = {"op": label[0]}
    params, prefer = split_choice(label)
    for p, value in zip(action.params, params):
        if value is None or (not p.required and value == p.default):
            continue
        op[p.name] = p.kind.to_json(value)
    if prefer is not None:
        op[ELECTED] = prefer
    return op


def describe(label: tuple) -> str:
    op = label_to_op(label)
    args = " ".join(f"{k}={v}" for k, v in op.items() if k != "op")
    return f"{op['op']} {args}".strip()
