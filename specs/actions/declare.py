"""How an action is declared: one class per protocol step, checked when it is defined.

    @action(CONTROLLER, params=(BROKER,), budget="fences", charged_if_running=True, elects=True,
            fault=True, z3=("fence",))
    class fence:
        '''Session timeout, or a network partition from the controller.'''

The step's guard and effect are the kernel's (`<name>_params`, `<name>_effect` in
specs/kernel/data.py or control.py; specs/kernel checks every declared step has both). A
raw request only replay sends (REQUEST) has its `effect(cfg, s, *params)` here instead.

Everything else is derived from these declarations: the action list every engine explores,
replay's operation table and field checks, which faults engines may aim at a broker, which
actions symmetry must switch off, the z3 encoding's list of steps, and the action categories
engines and studies ask for: `fault` (hits one broker), `fair` (a healthy cluster takes it on
its own: liveness assumes weak fairness of it), `operator` (only a person triggers it: admin
elections, config changes, reassignment) and `disturbance` (neither a fault nor healing: a
follower falling behind). A declaration whose
parameters do not match its effect, whose budget is unknown, or that says nothing of how z3
sees it fails at import, not in the middle of a run.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, NamedTuple, Optional, Union

from specs.config import BUDGETS
from specs.rules import RULE_FIELDS, Outside

DATA, CONTROLLER, REQUEST = "data", "controller", "request"
# DATA: a broker-side step, gated by broker state (replay checks its guard).
# CONTROLLER: a controller operation (replay runs it without a broker-side guard).
# REQUEST: a raw controller request that only replay sends (never explored).


class OpError(ValueError):
    """A malformed operation (bad field, bad type, unknown op): replay exits 2."""


class Kind(NamedTuple):
    """A parameter's type: its name for messages and a parser from scenario JSON."""
    name: str
    parse: Callable[[Any, str], Any]
    to_json: Callable[[Any], Any] = lambda v: v


JAVA_LONG = 2**63 - 1      # Kafka's int64 fields: broker epochs
JAVA_INT = 2**31 - 1       # its int32 fields: broker ids, leader and partition epochs, min ISR
MAX_LIST = 64              # a request's list of brokers longer than this is no request Kafka sees


def _int(v, name, top: int = JAVA_LONG):
    if not isinstance(v, int) or isinstance(v, bool):
        raise OpError(f"field '{name}' has the wrong type ({type(v).__name__})")
    if not -top - 1 <= v <= top:
        raise OpError(f"field '{name}' = {v} does not fit Kafka's {'int64' if top == JAVA_LONG else 'int32'} "
                      f"field")
    return v


def _int32(v, name):
    return _int(v, name, JAVA_INT)


def _bool(v, name):
    if not isinstance(v, bool):
        raise OpError(f"field '{name}' has the wrong type ({type(v).__name__})")
    return v


def _ints(v, name):
    """A list of broker ids (int32); a raw request's may repeat one (Kafka answers INVALID_REQUEST)."""
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise OpError(f"field '{name}' has the wrong type ({type(v).__name__})")
    if len(v) > MAX_LIST:
        raise OpError(f"field '{name}' names {len(v)} brokers (at most {MAX_LIST})")
    return tuple(_int32(x, name) for x in v)


def _brokers(v, name):
    from specs.config import MAX_REPLICAS
    ids = _ints(v, name)
    if not ids or len(set(ids)) != len(ids):
        raise OpError(f"'{name}' must be a non-empty list without duplicates")
    if len(ids) > MAX_REPLICAS:
        raise OpError(f"'{name}' names {len(ids)} replicas: the model's replication factor is at most {MAX_REPLICAS}")
    return ids


def _epochs(v, name):
    if not isinstance(v, dict) or not all(isinstance(e, int) and not isinstance(e, bool) for e in v.values()):
        raise OpError(f"field '{name}' has the wrong type ({type(v).__name__})")
    if len(v) > MAX_LIST:
        raise OpError(f"field '{name}' names {len(v)} brokers (at most {MAX_LIST})")
    try:
        pairs = [(int(k), e) for k, e in v.items()]
    except ValueError:
        raise OpError(f"field '{name}' must map broker ids to epochs") from None
    for b, e in pairs:
        _int32(b, f"{name}: broker id")
        _int(e, f"{name}: broker epoch")
    return tuple(sorted(pairs))    # hashable, like every label


def choice(*values: str, optional: bool = False) -> Kind:
    def parse(v, name):
        if v is None and optional:
            return None
        if v not in values:
            raise OpError(f"field '{name}' must be {' or '.join(values)}, got {v!r}")
        return v
    return Kind("|".join(values), parse)


def at_least(low: int) -> Kind:
    def parse(v, name):
        if _int32(v, name) < low:
            raise OpError(f"field '{name}' must be >= {low}")
        return v
    return Kind(f"int>={low}", parse)


INT = Kind("int", _int32)                       # broker ids, leader and partition epochs
LONG = Kind("int64", _int)                      # broker epochs
BOOL = Kind("bool", _bool)
OPT_INT = Kind("int|null", lambda v, name: None if v is None else _int32(v, name))
BROKER_LIST = Kind("broker ids", _brokers, list)
INT_LIST = Kind("ints", _ints, list)
EPOCH_MAP = Kind("{broker: epoch}", _epochs, lambda v: {str(k): e for k, e in v})


class Param(NamedTuple):
    name: str
    kind: Kind = INT
    required: bool = True       # a missing optional field takes its default (replay only)
    default: Any = None


BROKER = Param("broker")


class Action(NamedTuple):
    name: str
    kind: str                                   # DATA, CONTROLLER or REQUEST
    params: tuple[Param, ...]
    doc: str
    effect: Optional[Callable]                  # a REQUEST's (cfg, s, *params) -> (state, error)
    budget: Optional[str]                       # the budget a step uses
    charged_if_running: bool                    # ... only when the broker it names (params[0]) runs
    elects: bool                                # its controller event may run an election
    fault: bool                                 # a fault injected on one broker (params[0])
    fair: bool                                  # taken on its own by a healthy cluster (weak fairness)
    operator: bool                              # only an operator triggers it
    disturbance: bool                           # a follower falling behind: neither fault nor healing
    reads_replica_order: bool                   # breaks broker symmetry when its budget is > 0 (its switch on)
    z3: Union[tuple[str, ...], Outside]         # the z3 steps that stand for it, or why none does
    check: Optional[Callable]                   # extra check of a parsed operation (replay)
    switch: Optional[str] = None                # a boolean rule without which it is never enabled

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def fixed_budget(self) -> Optional[str]:
        """The budget every step of it uses (None: none, or one charged only sometimes)."""
        return None if self.charged_if_running else self.budget


DECLARATIONS: list[Action] = []


def action(kind: str, *, params: tuple[Param, ...] = (), budget: Optional[str] = None,
           charged_if_running: bool = False,
           z3: Union[tuple[str, ...], Outside], elects: bool = False, fault: bool = False,
           fair: bool = False, operator: bool = False, disturbance: bool = False,
           reads_replica_order: bool = False, switch: Optional[str] = None):
    """Declare the class below as an action (see the module docstring)."""
    def declare(cls) -> Action:
        name = cls.__name__
        fail = lambda why: TypeError(f"action {name}: {why}")  # noqa: E731
        if kind not in (DATA, CONTROLLER, REQUEST):
            raise fail(f"unknown kind {kind!r}")
        if any(a.name == name for a in DECLARATIONS):
            raise fail("declared twice")
        doc = inspect.getdoc(cls)
        if not doc:
            raise fail("needs a docstring: it is the action's description")
        effect = cls.__dict__.get("effect")
        if (effect is None) == (kind == REQUEST) or "enabled" in cls.__dict__ or "budget" in cls.__dict__:
            raise fail("a replay-only request has effect(); a step has its guard and effect in specs/kernel")
        if effect is not None:
            names = list(inspect.signature(effect).parameters)
            expected = ["cfg", "s"] + [p.name for p in params]
            if names != expected:
                raise fail(f"effect{tuple(names)} does not match its parameters {tuple(expected)}")
        if budget is not None and budget not in BUDGETS:
            raise fail(f"unknown budget {budget!r} (known: {', '.join(BUDGETS)})")
        if charged_if_running and (budget is None or not params or params[0].name != "broker"):
            raise fail("a budget charged when its broker runs needs a budget and a broker parameter")
        if reads_replica_order and budget is None and switch is None:
            raise fail("reads the replica order, so it needs a budget or a rule (switch) that turns it off")
        if switch is not None and (switch not in RULE_FIELDS or RULE_FIELDS[switch].type is not bool):
            raise fail(f"switch {switch!r} is no boolean rule")
        if fault and (not params or params[0].name != "broker"):
            raise fail("a fault's first parameter is the broker it hits")
        if sum((fault, fair, operator, disturbance)) > 1:
            raise fail("an action is at most one of fault, fair, operator and disturbance")
        if kind == REQUEST and (fault or fair or operator or disturbance):
            raise fail("a replay-only request is never explored, so it has no category")
        if not (isinstance(z3, Outside) or (isinstance(z3, tuple) and z3 and all(isinstance(x, str) for x in z3))):
            raise fail("z3 must name the z3 steps that stand for it, or say why none does (Outside)")
        declared = Action(name, kind, tuple(params), doc, effect, budget, charged_if_running, elects, fault,
                          fair, operator, disturbance, reads_replica_order, z3, cls.__dict__.get("check"), switch)
        DECLARATIONS.append(declared)
        return declared
    return declare
