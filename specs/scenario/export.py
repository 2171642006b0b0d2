"""A run of the model as a replay scenario (docs/SCENARIOS.md), so any counterexample an engine
finds can be replayed, edited and kept as a regression test."""
from __future__ import annotations

from typing import Any

from specs.actions import init_state, label_to_op
from specs.config import Config, config_to_dict
from specs.state import NO_EPOCH, RECOVERY_NAMES, State


def initial_block(cfg: Config, s: State) -> dict[str, Any]:
    """The scenario `initial` block for s: the controller fields, and, if s is not a fresh
    cluster's broker side, the project's broker fields (specs/scenario/initial.py)."""
    p, ctrl = s.ctrl.partition, s.ctrl
    out: dict[str, Any] = {"leader": p.leader, "isr": list(p.isr),
                           "broker_epochs": {str(b): e for b, e in zip(ctrl.registered, ctrl.broker_epochs)}}
    fresh = init_state(cfg)
    if p != fresh.ctrl.partition._replace(leader=p.leader, isr=p.isr) or ctrl.fenced or ctrl.shutting_down:
        out.update({"leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch, "elr": list(p.elr),
                    "last_known_elr": list(p.last_known_elr), "fenced": list(ctrl.fenced),
                    "in_controlled_shutdown": list(ctrl.shutting_down), "cleared_elr": list(p.cleared_elr),
                    "leader_recovery_state": RECOVERY_NAMES[p.leader_recovery_state]})
    if s.replicas != fresh.replicas or s.followers != fresh.followers or s.hist != fresh.hist:
        out.update({
            "logs": {str(b): [list(e) for e in r.log] for b, r in zip(cfg.brokers, s.replicas) if r.log},
            "stopped": [b for b, r in zip(cfg.brokers, s.replicas) if not r.alive],
            "clean_shutdown_files": {str(b): r.clean_file for b, r in zip(cfg.brokers, s.replicas)
                                     if r.clean_file != NO_EPOCH},
            "committed": list(s.hist.visible),
            "fetched": {str(b): [fs.leo, fs.broker_epoch] for b, fs in zip(cfg.brokers, s.followers) if fs.leo >= 0},
            "unclean_elections": s.hist.unclean_elections,
            "operator_unclean_elections": s.hist.operator_unclean_elections,
            "unclean_shutdowns": s.hist.unclean_shutdowns,
            "lossy_crashes": s.hist.lossy_crashes})
        out.update({k: v for k, v in (("promised_min_isr", s.hist.promised_min_isr),
                                      ("least_min_isr", s.hist.least_min_isr)) if v})
    return out


def expectation(s: State) -> dict[str, Any]:
    """The `expect` block a scenario checks a state with: the partition's leadership fields."""
    p = s.ctrl.partition
    return {"leader": p.leader, "isr": list(p.isr), "elr": list(p.elr), "last_known_elr": list(p.last_known_elr),
            "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch}


def to_scenario(trace, name: str, source: str) -> dict[str, Any]:
    """The replay scenario that reproduces `trace` (a specs.trace.Trace)."""
    cfg = trace.config
    return scenario_of(trace, name, source, config_to_dict(cfg), initial_block(cfg, trace.initial),
                       [label_to_op(label) for label, _ in trace.steps], expectation(trace.final))


def scenario_of(trace, name: str, source: str, config: dict, initial: dict, ops: list, expect: dict) -> dict[str, Any]:
    """A counterexample's scenario from its parts: the operations, then what the last state
    is expected to be and the properties it violates."""
    steps = list(ops) + [{"expect": expect}]
    if trace.violated:
        steps.append({"expect_violation": list(trace.violated)})
    return {
        "name": name,
        "source": source,
        "kind": "counterexample",
        "check_invariants": True if trace.checked is None else list(trace.checked),
        "config": config,
        "initial": initial,
        "steps": steps,
    }
