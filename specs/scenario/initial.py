"""A scenario's starting state, from its `initial` block (docs/SCENARIOS.md).

The controller fields are the format's; the broker-side fields are the project's own, for
scenarios that start mid-run (a z3 counterexample to induction). Every field is checked with
the same parameter kinds the action declarations use, so a malformed block is one line and
exit 2, never a traceback.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Optional

from specs import actions as A
from specs.actions import OpError
from specs.actions.control import RECOVERY
from specs.actions.declare import EPOCH_MAP, INT, INT_LIST, Kind
from specs.config import Config
from specs.state import NO_EPOCH, NO_LEADER, RECOVERED, Partition, State, sorted_tuple


def _get(d: Mapping[str, Any], name: str, kind: Kind, default: Any) -> Any:
    return kind.parse(d[name], name) if name in d else default


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
    extra = _get(initial, "brokers", INT_LIST, ())
    fenced = _get(initial, "fenced", INT_LIST, ())
    shutting = _get(initial, "in_controlled_shutdown", INT_LIST, ())
    epochs = dict(_get(initial, "broker_epochs", EPOCH_MAP, ()))
    registered = sorted_tuple(cfg.replicas + cfg.extra_brokers + extra + tuple(epochs) + fenced + shutting)
    cfg = replace(cfg, extra_brokers=tuple(sorted((set(registered) | set(universe)) - set(cfg.replicas))))
    s = A.init_state(cfg)
    p = Partition(
        replicas=cfg.replicas,
        isr=_get(initial, "isr", INT_LIST, cfg.replicas),
        elr=sorted_tuple(_get(initial, "elr", INT_LIST, ())),
        last_known_elr=sorted_tuple(_get(initial, "last_known_elr", INT_LIST, ())),
        leader=_get(initial, "leader", INT, cfg.replicas[0]),
        leader_epoch=_get(initial, "leader_epoch", INT, 0),
        partition_epoch=_get(initial, "partition_epoch", INT, 0),
        leader_recovery_state=_get(initial, "leader_recovery_state", RECOVERY, RECOVERED),
        adding_replicas=_get(initial, "adding_replicas", INT_LIST, ()),
        removing_replicas=_get(initial, "removing_replicas", INT_LIST, ()),
    )
    if p.leader != NO_LEADER and p.leader not in p.replicas:
        raise OpError(f"initial leader {p.leader} is not one of the replicas {list(p.replicas)} (-1: no leader)")
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
    stopped = set(_get(initial, "stopped", INT_LIST, ()))
    committed = _get(initial, "committed", INT_LIST, ())
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
                           unclean_elections=_get(initial, "unclean_elections", INT, 0),
                           unclean_shutdowns=_get(initial, "unclean_shutdowns", INT, 0),
                           lossy_crashes=_get(initial, "lossy_crashes", INT, 0))
    return s._replace(replicas=tuple(replicas), followers=tuple(followers), hist=hist)
