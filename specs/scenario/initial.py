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
from specs.actions.declare import EPOCH_MAP, INT, INT_LIST, JAVA_LONG, Kind
from specs.config import Config
from specs.scenario.checks import broker_id
from specs.state import NO_EPOCH, NO_LEADER, RECOVERED, Partition, State, sorted_tuple


def _get(d: Mapping[str, Any], name: str, kind: Kind, default: Any) -> Any:
    return kind.parse(d[name], name) if name in d else default


def _ids(d: Mapping[str, Any], name: str, distinct: bool = False) -> tuple[int, ...]:
    """A list of broker ids: each a Java int >= 0 (a negative one would be a broker of its own);
    a set-like field (ISR, ELR) names each broker once."""
    ids = _get(d, name, INT_LIST, ())
    problem = next(filter(None, (broker_id(b, name) for b in ids)), None)
    if problem:
        raise OpError(problem)
    if distinct and len(set(ids)) != len(ids):
        raise OpError(f"field '{name}' names a broker twice: {list(ids)}")
    return ids


def _count(d: Mapping[str, Any], name: str) -> int:
    value = _get(d, name, INT, 0)
    if value < 0:
        raise OpError(f"field '{name}' is a count, >= 0, got {value}")
    return value


INITIAL_FIELDS = {"leader", "leader_epoch", "partition_epoch", "isr", "elr", "last_known_elr", "fenced",
                  "in_controlled_shutdown", "broker_epochs", "brokers", "leader_recovery_state",
                  "adding_replicas", "removing_replicas", "cleared_elr"}
# The project's own initial fields: the broker side, for scenarios that start mid-run (a z3
# counterexample to induction). See docs/SCENARIOS.md.
BROKER_FIELDS = {"logs", "stopped", "clean_shutdown_files", "committed", "fetched",
                 "unclean_elections", "operator_unclean_elections", "unclean_shutdowns", "lossy_crashes",
                 "promised_min_isr", "least_min_isr"}


def broker_universe(cfg: Config, initial: Mapping[str, Any], steps: list) -> tuple[int, ...]:
    """Every broker id a scenario mentions, so each has a local replica in the model."""
    ids = set(cfg.brokers)
    for key in ("brokers", "fenced", "in_controlled_shutdown", "isr", "elr", "last_known_elr",
                "adding_replicas", "removing_replicas"):
        v = initial.get(key)
        if isinstance(v, list):
            ids.update(x for x in v if isinstance(x, int) and not isinstance(x, bool))
    if isinstance(initial.get("broker_epochs"), dict):
        for k in initial["broker_epochs"]:
            try:
                ids.add(int(k))
            except ValueError:       # not an id, or 5000 digits: initial_state says which
                pass
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
    extra = _ids(initial, "brokers")
    fenced = _ids(initial, "fenced")
    shutting = _ids(initial, "in_controlled_shutdown")
    epochs = dict(_get(initial, "broker_epochs", EPOCH_MAP, ()))
    problem = next(filter(None, (broker_id(b, "broker_epochs") for b in epochs)), None)
    if problem:
        raise OpError(problem)
    registered = sorted_tuple(cfg.replicas + cfg.extra_brokers + extra + tuple(epochs) + fenced + shutting)
    cfg = replace(cfg, extra_brokers=tuple(sorted((set(registered) | set(universe)) - set(cfg.replicas))))
    s = A.init_state(cfg)
    p = Partition(
        replicas=cfg.replicas,
        isr=_ids(initial, "isr", distinct=True) if "isr" in initial else cfg.replicas,
        elr=sorted_tuple(_ids(initial, "elr", distinct=True)),
        last_known_elr=sorted_tuple(_ids(initial, "last_known_elr", distinct=True)),
        leader=_get(initial, "leader", INT, cfg.replicas[0]),
        leader_epoch=_get(initial, "leader_epoch", INT, 0),
        partition_epoch=_get(initial, "partition_epoch", INT, 0),
        leader_recovery_state=_get(initial, "leader_recovery_state", RECOVERY, RECOVERED),
        adding_replicas=_ids(initial, "adding_replicas", distinct=True),
        removing_replicas=_ids(initial, "removing_replicas", distinct=True),
        cleared_elr=tuple(sorted(_ids(initial, "cleared_elr"))),
    )
    if p.leader != NO_LEADER and p.leader not in p.replicas:
        raise OpError(f"initial leader {p.leader} is not one of the replicas {list(p.replicas)} (-1: no leader)")
    if p.leader != NO_LEADER and not p.isr:     # the leader's HWM is the least LEO of an empty set
        raise OpError(f"initial ISR is empty but broker {p.leader} leads (set 'leader': -1, or name the ISR)")
    ctrl = s.ctrl._replace(partition=p, registered=registered,
                           broker_epochs=tuple(epochs.get(b, 100 + b) for b in registered),
                           fenced=sorted_tuple(fenced), shutting_down=sorted_tuple(shutting))
    return cfg, _broker_side(cfg, s._replace(ctrl=ctrl), initial)


def _per_broker(initial: Mapping[str, Any], name: str) -> dict[int, Any]:
    value = initial.get(name, {})
    if not isinstance(value, Mapping):
        raise OpError(f"field '{name}' must map broker ids to values")
    try:
        out = {int(k): v for k, v in value.items()}
    except ValueError:
        raise OpError(f"field '{name}' must map broker ids to values") from None
    problem = next(filter(None, (broker_id(b, name) for b in out)), None)
    if problem:
        raise OpError(problem)
    return out


def _ints(value: Any, low: tuple[int, ...]) -> bool:
    """A list of len(low) integers (not booleans), each at least its `low`."""
    return (isinstance(value, list) and len(value) == len(low)
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= m for x, m in zip(value, low)))


def _broker_side(cfg: Config, s: State, initial: Mapping[str, Any]) -> State:
    """logs {b: [[leader_epoch, record], ...]}, stopped [b], clean_shutdown_files {b: epoch},
    committed [record] (what consumers saw), fetched {b: [leo, broker_epoch]} (the leader's
    view from Fetch), unclean_elections / operator_unclean_elections / unclean_shutdowns /
    lossy_crashes (history counts), promised_min_isr / least_min_isr (the min ISR the committed
    records were promised and the least of the run, where a min ISR change before the scenario
    left them below the current one; 0 or absent: the current effective min ISR)."""
    if not BROKER_FIELDS & set(initial):
        return s
    logs = _per_broker(initial, "logs")
    files = _per_broker(initial, "clean_shutdown_files")
    fetched = _per_broker(initial, "fetched")
    stopped = set(_ids(initial, "stopped"))
    committed = _get(initial, "committed", INT_LIST, ())
    if any(r < 1 for r in committed):
        raise OpError(f"field 'committed': record ids start at 1, got {list(committed)}")
    replicas, followers = [], []
    for b, r, fs in zip(cfg.brokers, s.replicas, s.followers):
        log = logs.get(b, [])
        if not (isinstance(log, list) and all(_ints(e, (0, 1)) for e in log)):
            raise OpError(f"field 'logs' for broker {b} must be a list of [leader_epoch >= 0, record >= 1]")
        log = tuple((e[0], e[1]) for e in log)
        clean = files.get(b, NO_EPOCH)
        if not isinstance(clean, int) or isinstance(clean, bool):
            raise OpError(f"field 'clean_shutdown_files' for broker {b} must be an epoch")
        replicas.append(r._replace(alive=b not in stopped, log=log, flushed=len(log),
                                   hwm=min(len(log), len(committed)), clean_file=clean))
        f = fetched.get(b)
        if f is not None and not _ints(f, (0, -JAVA_LONG - 1)):
            raise OpError(f"field 'fetched' for broker {b} must be [leo >= 0, broker_epoch]")
        followers.append(fs if f is None else fs._replace(leo=f[0], broker_epoch=f[1]))
    hist = s.hist._replace(produced=max(committed, default=0), acked=committed, visible=committed,
                           unclean_elections=_count(initial, "unclean_elections"),
                           operator_unclean_elections=_count(initial, "operator_unclean_elections"),
                           unclean_shutdowns=_count(initial, "unclean_shutdowns"),
                           lossy_crashes=_count(initial, "lossy_crashes"),
                           promised_min_isr=_below_min_isr(s, initial, "promised_min_isr"),
                           least_min_isr=_below_min_isr(s, initial, "least_min_isr"))
    return s._replace(replicas=tuple(replicas), followers=tuple(followers), hist=hist)


def _below_min_isr(s: State, initial: Mapping[str, Any], name: str) -> int:
    """A kept min ISR: 1 up to the effective min ISR, stored as 0 when it is the current one
    (History's form, so a state has one row)."""
    value = _count(initial, name)
    current = s.ctrl.effective_min_isr
    if value > current:
        raise OpError(f"field '{name}' is at most the effective min ISR {current}, got {value}")
    return 0 if value == current else value
