"""One Trace type that every engine produces and every writer consumes.

A trace is a config, a start state, and steps (label, state after). Rendering shows,
per step, the action and only the fields that changed: a story a person can read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from specs.actions import describe, label_to_op
from specs.config import Config, config_to_dict
from specs.state import NO_LEADER, RECOVERY_NAMES, State


@dataclass
class Trace:
    config: Config
    initial: State
    steps: list[tuple[tuple, State]] = field(default_factory=list)
    violated: list[str] = field(default_factory=list)   # invariants violated in the last state/step
    engine: str = "bfs"
    checked: Optional[list[str]] = None                 # invariants the engine checked (None: all)

    @property
    def final(self) -> State:
        return self.steps[-1][1] if self.steps else self.initial

    def __len__(self) -> int:
        return len(self.steps)


def _ids(xs) -> str:
    return "[" + ",".join(str(x) for x in xs) + "]"


def _log(log) -> str:
    return "[" + " ".join(f"e{ep}:r{rec}" for ep, rec in log) + "]"


def view(cfg: Config, s: State) -> dict[str, str]:
    """The fields a reader cares about, rendered as short strings."""
    p = s.ctrl.partition
    out = {
        "leader": str(p.leader) if p.leader != NO_LEADER else "-1",
        "leader_epoch": str(p.leader_epoch),
        "partition_epoch": str(p.partition_epoch),
        "isr": _ids(p.isr),
        "elr": _ids(p.elr),
        "last_known_elr": _ids(p.last_known_elr),
        "recovery": RECOVERY_NAMES[p.leader_recovery_state],
        "replicas": _ids(p.replicas),
        "fenced": _ids(s.ctrl.fenced),
        "shutting_down": _ids(s.ctrl.shutting_down),
        "min_isr": str(s.ctrl.min_isr),
        "unclean_enabled": str(s.ctrl.unclean_leader_election).lower(),
    }
    for b, r, fs in zip(cfg.brokers, s.replicas, s.followers):
        out[f"b{b}"] = ("up" if r.alive else "down") + f" log={_log(r.log)} hwm={r.hwm}"
        epoch = s.ctrl.broker_epoch(b)
        out[f"b{b}.epoch"] = str(epoch) if epoch is not None else "-"
        if fs.leo >= 0:
            out[f"b{b}.fetched"] = f"leo={fs.leo} epoch={fs.broker_epoch}"
        else:
            out[f"b{b}.fetched"] = "-"
    req = s.inflight
    out["in_flight"] = "-" if req is None else (
        f"AlterPartition(from={req.broker} le={req.leader_epoch} pe={req.partition_epoch} "
        f"isr={_ids(req.isr)} epochs={_ids(req.member_epochs)})")
    out["acked"] = _ids(s.hist.acked)
    out["visible"] = _ids(s.hist.visible)
    return out


def changes(cfg: Config, before: State, after: State) -> dict[str, str]:
    a, b = view(cfg, before), view(cfg, after)
    return {k: v for k, v in b.items() if a.get(k) != v}


def rows(trace: Trace) -> list[tuple[int, str, str]]:
    """(step number, action, 'field=value; ...') per step; step 0 is the start state."""
    cfg = trace.config
    init = view(cfg, trace.initial)
    start = ", ".join(f"{k}={v}" for k, v in init.items()
                      if k in ("leader", "isr", "elr", "leader_epoch", "partition_epoch"))
    out = [(0, "initial", start)]
    prev = trace.initial
    for i, (label, s) in enumerate(trace.steps, 1):
        diff = changes(cfg, prev, s)
        out.append((i, describe(label), "; ".join(f"{k}={v}" for k, v in diff.items()) or "(no change)"))
        prev = s
    return out


def render(trace: Trace, console=None, title: Optional[str] = None) -> None:
    from rich.console import Console
    from rich.table import Table
    console = console or Console()
    table = Table(title=title or f"counterexample: {', '.join(trace.violated)} ({len(trace)} steps)",
                  show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("action")
    table.add_column("what changed")
    from rich.markup import escape
    for n, action, diff in rows(trace):
        table.add_row(str(n), escape(action), escape(diff))
    console.print(table)


def initial_block(cfg: Config, s: State) -> dict[str, Any]:
    """The scenario `initial` block for s: the controller fields, and, if s is not a fresh
    cluster's broker side, the project's broker fields (specs/ops.py BROKER_FIELDS)."""
    from specs.actions import init_state
    p, ctrl = s.ctrl.partition, s.ctrl
    out: dict[str, Any] = {"leader": p.leader, "isr": list(p.isr),
                           "broker_epochs": {str(b): e for b, e in zip(ctrl.registered, ctrl.broker_epochs)}}
    fresh = init_state(cfg)
    if p != fresh.ctrl.partition._replace(leader=p.leader, isr=p.isr) or ctrl.fenced or ctrl.shutting_down:
        out.update({"leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch, "elr": list(p.elr),
                    "last_known_elr": list(p.last_known_elr), "fenced": list(ctrl.fenced),
                    "in_controlled_shutdown": list(ctrl.shutting_down),
                    "leader_recovery_state": RECOVERY_NAMES[p.leader_recovery_state]})
    if s.replicas != fresh.replicas or s.followers != fresh.followers or s.hist != fresh.hist:
        out.update({
            "logs": {str(b): [list(e) for e in r.log] for b, r in zip(cfg.brokers, s.replicas) if r.log},
            "stopped": [b for b, r in zip(cfg.brokers, s.replicas) if not r.alive],
            "clean_shutdown_files": {str(b): r.clean_file for b, r in zip(cfg.brokers, s.replicas)
                                     if r.clean_file != -1},
            "committed": list(s.hist.visible),
            "fetched": {str(b): [fs.leo, fs.broker_epoch] for b, fs in zip(cfg.brokers, s.followers) if fs.leo >= 0},
            "unclean_elections": s.hist.unclean_elections, "unclean_shutdowns": s.hist.unclean_shutdowns,
            "lossy_crashes": s.hist.lossy_crashes})
    return out


def to_scenario(trace: Trace, name: str, source: str) -> dict[str, Any]:
    """The replay scenario (SCENARIO_FORMAT.md) that reproduces this trace."""
    cfg = trace.config
    p = trace.initial.ctrl.partition
    steps: list[dict[str, Any]] = [label_to_op(label) for label, _ in trace.steps]
    final = trace.final.ctrl.partition
    steps.append({"expect": {"leader": final.leader, "isr": list(final.isr), "elr": list(final.elr),
                             "last_known_elr": list(final.last_known_elr),
                             "leader_epoch": final.leader_epoch, "partition_epoch": final.partition_epoch}})
    if trace.violated:
        steps.append({"expect_violation": list(trace.violated)})
    return {
        "name": name,
        "source": source,
        "kind": "counterexample",
        "check_invariants": True if trace.checked is None else list(trace.checked),
        "config": config_to_dict(cfg),
        "initial": initial_block(cfg, trace.initial),
        "steps": steps,
    }
