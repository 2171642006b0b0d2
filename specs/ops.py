"""Replay's entry point: build a state from a scenario's `initial` block and apply
one named operation (SCENARIO_FORMAT.md).

Controller operations act on the controller's view and are not gated by
broker-side state. Data-plane operations are the model's own actions: replay
checks their enabling condition, so a replayed counterexample is a real run.
Field errors raise OpError, which replay reports as a malformed scenario (exit 2).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Optional

from specs import actions as A
from specs import brokers as B
from specs import controller as C
from specs.algebra import CONCRETE
from specs.config import Config
from specs.state import (NO_EPOCH, NO_LEADER, RECOVERED, RECOVERING, RECOVERY_NAMES, AlterPartitionRequest,
                         Partition, State, sorted_tuple)


class OpError(ValueError):
    """A malformed operation or initial block (bad field, bad type, unknown op)."""


class NotEnabled(Exception):
    """A data-plane action whose enabling condition does not hold in this state."""


_MISSING = object()


def _field(d: Mapping[str, Any], name: str, kind: str, default: Any = _MISSING) -> Any:
    if name not in d:
        if default is _MISSING:
            raise OpError(f"missing field '{name}'")
        return default
    value = d[name]
    ok = {
        "int": isinstance(value, int) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
        "str": isinstance(value, str),
        "ints": isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value),
        "epochs": isinstance(value, dict) and all(isinstance(v, int) and not isinstance(v, bool)
                                                  for v in value.values()),
        "optint": value is None or (isinstance(value, int) and not isinstance(value, bool)),
    }[kind]
    if not ok:
        raise OpError(f"field '{name}' has the wrong type ({type(value).__name__})")
    if kind == "epochs":
        try:
            return {int(k): v for k, v in value.items()}
        except ValueError:
            raise OpError(f"field '{name}' must map broker ids to epochs") from None
    return value


def _recovery(value: Any, name: str = "leader_recovery_state") -> int:
    if value in RECOVERY_NAMES:
        return RECOVERY_NAMES.index(value)
    if value in (0, 1) and not isinstance(value, bool):
        return value
    raise OpError(f"field '{name}' must be RECOVERED or RECOVERING")


INITIAL_FIELDS = {"leader", "leader_epoch", "partition_epoch", "isr", "elr", "last_known_elr", "fenced",
                  "in_controlled_shutdown", "broker_epochs", "brokers", "leader_recovery_state",
                  "adding_replicas", "removing_replicas"}
# The project's own initial fields: the broker side, for scenarios that start mid-run (a z3
# counterexample to induction). See docs/SCENARIOS.md.
BROKER_FIELDS = {"logs", "stopped", "clean_shutdown_files", "committed", "fetched",
                 "unclean_elections", "unclean_shutdowns", "lossy_crashes"}


def broker_universe(cfg: Config, initial: Mapping[str, Any], steps: list) -> tuple[int, ...]:
    """Every broker id a scenario mentions, so each has a local replica in the model."""
    ids = set(cfg.brokers)
    for key in ("brokers", "fenced", "in_controlled_shutdown", "isr", "elr", "last_known_elr",
                "adding_replicas", "removing_replicas"):
        v = initial.get(key)
        if isinstance(v, list):
            ids.update(x for x in v if isinstance(x, int) and not isinstance(x, bool))
    if isinstance(initial.get("broker_epochs"), dict):
        ids.update(int(k) for k in initial["broker_epochs"] if str(k).lstrip("-").isdigit())
    for st in steps:
        if isinstance(st, dict):
            for key in ("broker", "leader"):
                v = st.get(key)
                if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                    ids.add(v)
            if isinstance(st.get("replicas"), list):
                ids.update(x for x in st["replicas"] if isinstance(x, int) and not isinstance(x, bool))
    return tuple(sorted(ids))


def initial_state(cfg: Config, initial: Optional[Mapping[str, Any]],
                  universe: tuple[int, ...] = ()) -> tuple[Config, State]:
    """The scenario's starting state; absent fields take the format's defaults. Returns the
    config widened to every broker that is registered or in `universe` (each gets a local
    replica; only the registered ones are known to the controller)."""
    initial = initial or {}
    if not isinstance(initial, Mapping):
        raise OpError("'initial' must be an object")
    for key in initial:
        if key not in INITIAL_FIELDS | BROKER_FIELDS:
            raise OpError(f"unknown initial field '{key}'")
    extra = _field(initial, "brokers", "ints", [])
    fenced = _field(initial, "fenced", "ints", [])
    shutting = _field(initial, "in_controlled_shutdown", "ints", [])
    epochs = _field(initial, "broker_epochs", "epochs", {})
    registered = sorted_tuple(list(cfg.replicas) + list(cfg.extra_brokers) + extra + list(epochs)
                              + fenced + shutting)
    cfg = replace(cfg, extra_brokers=tuple(sorted((set(registered) | set(universe)) - set(cfg.replicas))))
    s = A.init_state(cfg)
    p = Partition(
        replicas=cfg.replicas,
        isr=tuple(_field(initial, "isr", "ints", list(cfg.replicas))),
        elr=sorted_tuple(_field(initial, "elr", "ints", [])),
        last_known_elr=sorted_tuple(_field(initial, "last_known_elr", "ints", [])),
        leader=_field(initial, "leader", "int", cfg.replicas[0]),
        leader_epoch=_field(initial, "leader_epoch", "int", 0),
        partition_epoch=_field(initial, "partition_epoch", "int", 0),
        leader_recovery_state=_recovery(initial.get("leader_recovery_state", "RECOVERED")),
        adding_replicas=tuple(_field(initial, "adding_replicas", "ints", [])),
        removing_replicas=tuple(_field(initial, "removing_replicas", "ints", [])),
    )
    ctrl = s.ctrl._replace(partition=p, registered=registered,
                           broker_epochs=tuple(epochs.get(b, 100 + b) for b in registered),
                           fenced=sorted_tuple(fenced), shutting_down=sorted_tuple(shutting))
    return cfg, _broker_side(cfg, s._replace(ctrl=ctrl), initial)


def _per_broker(initial: Mapping[str, Any], name: str) -> dict[int, Any]:
    value = initial.get(name, {})
    if not isinstance(value, Mapping):
        raise OpError(f"field '{name}' must map broker ids to values")
    try:
        return {int(k): v for k, v in value.items()}
    except ValueError:
        raise OpError(f"field '{name}' must map broker ids to values") from None


def _broker_side(cfg: Config, s: State, initial: Mapping[str, Any]) -> State:
    """logs {b: [[leader_epoch, record], ...]}, stopped [b], clean_shutdown_files {b: epoch},
    committed [record] (what consumers saw), fetched {b: [leo, broker_epoch]} (the leader's
    view from Fetch), unclean_elections / unclean_shutdowns / lossy_crashes (history counts)."""
    if not BROKER_FIELDS & set(initial):
        return s
    logs = _per_broker(initial, "logs")
    files = _per_broker(initial, "clean_shutdown_files")
    fetched = _per_broker(initial, "fetched")
    stopped = set(_field(initial, "stopped", "ints", []))
    committed = tuple(_field(initial, "committed", "ints", []))
    replicas, followers = [], []
    for b, r, fs in zip(cfg.brokers, s.replicas, s.followers):
        log = logs.get(b, [])
        if not (isinstance(log, list) and all(isinstance(e, list) and len(e) == 2 and
                                              all(isinstance(x, int) for x in e) for e in log)):
            raise OpError(f"field 'logs' for broker {b} must be a list of [leader_epoch, record]")
        log = tuple((e[0], e[1]) for e in log)
        clean = files.get(b, NO_EPOCH)
        if not isinstance(clean, int):
            raise OpError(f"field 'clean_shutdown_files' for broker {b} must be an epoch")
        replicas.append(r._replace(alive=b not in stopped, log=log, flushed=len(log),
                                   hwm=min(len(log), len(committed)), clean_file=clean))
        f = fetched.get(b)
        if f is not None and not (isinstance(f, list) and len(f) == 2 and all(isinstance(x, int) for x in f)):
            raise OpError(f"field 'fetched' for broker {b} must be [leo, broker_epoch]")
        followers.append(fs if f is None else fs._replace(leo=f[0], broker_epoch=f[1]))
    hist = s.hist._replace(produced=max(committed, default=0), acked=committed, visible=committed,
                           unclean_elections=_field(initial, "unclean_elections", "int", 0),
                           unclean_shutdowns=_field(initial, "unclean_shutdowns", "int", 0),
                           lossy_crashes=_field(initial, "lossy_crashes", "int", 0))
    return s._replace(replicas=tuple(replicas), followers=tuple(followers), hist=hist)


CONTROLLER_OPS = {"fence", "unfence", "controlled_shutdown", "register", "alter_partition", "elect",
                  "set_min_isr", "set_unclean", "periodic_unclean_election", "reassign", "unclean_recovery"}
DATA_OPS = {a.name for a in A.ACTIONS if a.kind == "data"}
ALL_OPS = CONTROLLER_OPS | DATA_OPS
_OP_FIELDS = {
    "fence": {"broker"}, "unfence": {"broker"}, "controlled_shutdown": {"broker"},
    "register": {"broker", "clean_shutdown", "previous_broker_epoch", "new_broker_epoch"},
    "alter_partition": {"broker", "request_broker_epoch", "leader_epoch", "partition_epoch", "isr",
                        "broker_epochs", "leader_recovery_state"},
    "elect": {"type", "leader"}, "set_min_isr": {"value"}, "set_unclean": {"value"},
    "periodic_unclean_election": set(), "reassign": {"replicas"}, "unclean_recovery": {"strategy"},
}
for _a in A.ACTIONS:
    if _a.kind == "data":
        _OP_FIELDS[_a.name] = set(_a.params)
for _name in A.ELECTING:
    _OP_FIELDS[_name] = _OP_FIELDS[_name] | {A.ELECTED}


def op_label(op: Mapping[str, Any]) -> A.Label:
    """Validate a scenario step's operation and turn it into an action label; an `elected`
    field (any_candidate_elections) becomes the label's trailing choice."""
    label = _op_label(op)
    if A.ELECTED in op:
        label = label + ((A.ELECTED, _field(op, A.ELECTED, "int")),)
    return label


def _op_label(op: Mapping[str, Any]) -> A.Label:
    """An action label (for ops the model's action table has) or a raw controller request."""
    name = op.get("op")
    if not isinstance(name, str) or name not in ALL_OPS:
        raise OpError(f"unknown op {name!r}")
    for key in op:
        if key != "op" and key not in _OP_FIELDS[name]:
            raise OpError(f"op '{name}' has an unknown field '{key}'")
    if name in ("register", "alter_partition"):
        return (name,)
    if name == "elect":
        kind = _field(op, "type", "str")
        if kind not in ("preferred", "unclean", "designated"):
            raise OpError(f"elect type must be preferred, unclean or designated, got {kind!r}")
        leader = _field(op, "leader", "optint", None)
        if kind == "designated" and leader is None:
            raise OpError("a designated election needs 'leader'")
        return ("elect", kind, leader)
    if name == "set_min_isr":
        value = _field(op, "value", "int")
        if value < 1:
            raise OpError("set_min_isr value must be >= 1")
        return (name, value)
    if name == "set_unclean":
        return (name, _field(op, "value", "bool"))
    if name == "reassign":
        replicas = _field(op, "replicas", "ints")
        if not replicas or len(set(replicas)) != len(replicas):
            raise OpError("reassign replicas must be a non-empty list without duplicates")
        return (name, tuple(replicas))
    if name == "unclean_recovery":
        strategy = op.get("strategy")
        if strategy is not None and strategy not in ("aggressive", "balanced", "none"):
            raise OpError("unclean_recovery strategy must be aggressive, balanced or none")
        return (name, strategy)
    action = A.ACTIONS_BY_NAME[name]
    return (name,) + tuple(_field(op, p, "int") for p in action.params)


def apply_op(cfg: Config, s: State, op: Mapping[str, Any]) -> tuple[State, Optional[str]]:
    """Apply one scenario operation. Returns (next state, error name or None).
    Raises OpError for a malformed op and NotEnabled for a data-plane step that cannot run."""
    label = op_label(op)
    name = label[0]
    if name == "register":
        return _register(cfg, s, op)
    if name == "alter_partition":
        return _alter_partition(cfg, s, op)
    if name in DATA_OPS and not A.enabled(cfg, s, label):
        raise NotEnabled(f"{A.describe(label)} is not enabled in this state")
    return A.step(cfg, s, label)


def _register(cfg: Config, s: State, op: Mapping[str, Any]) -> tuple[State, Optional[str]]:
    b = _field(op, "broker", "int")
    clean = _field(op, "clean_shutdown", "bool", None) if "clean_shutdown" in op else None
    previous = _field(op, "previous_broker_epoch", "int", NO_EPOCH)
    current = s.ctrl.broker_epoch(b)
    new_epoch = _field(op, "new_broker_epoch", "int", (100 + b if current is None else current) + 1000)
    out = C.register(CONCRETE, cfg.rules, s.ctrl, b, previous, new_epoch, clean)
    if b in cfg.brokers:   # the broker side: a new incarnation, running
        r = B.replica_of(cfg, s, b)
        s = B.set_replica(cfg, s, b, r._replace(alive=True, flushed=len(r.log), clean_file=NO_EPOCH))
    return A._after_controller(cfg, s, out)


def _alter_partition(cfg: Config, s: State, op: Mapping[str, Any]) -> tuple[State, Optional[str]]:
    p = s.ctrl.partition
    sender = _field(op, "broker", "int", p.leader)
    sender_epoch = _field(op, "request_broker_epoch", "int", None) if "request_broker_epoch" in op else None
    if sender_epoch is None:
        sender_epoch = s.ctrl.broker_epoch(sender)
        sender_epoch = NO_EPOCH if sender_epoch is None else sender_epoch
    isr = tuple(_field(op, "isr", "ints"))
    epochs = _field(op, "broker_epochs", "epochs", {})
    req = AlterPartitionRequest(
        broker=sender, broker_epoch=sender_epoch,
        leader_epoch=_field(op, "leader_epoch", "int"), partition_epoch=_field(op, "partition_epoch", "int"),
        isr=isr, member_epochs=tuple(epochs.get(b, NO_EPOCH) for b in isr),
        leader_recovery_state=_recovery(op.get("leader_recovery_state", "RECOVERED")))
    return A._after_controller(cfg, s, C.alter_partition(CONCRETE, cfg.rules, s.ctrl, req))


__all__ = ["OpError", "NotEnabled", "initial_state", "apply_op", "op_label", "broker_universe",
           "ALL_OPS", "CONTROLLER_OPS", "DATA_OPS", "NO_LEADER", "RECOVERED", "RECOVERING"]
