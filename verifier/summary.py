"""One engine run as the summary.json every writer and CI gate reads.

Engines return a `Result`; this turns it into plain data with the verdict per
invariant, coverage with warnings, and the exit code, so the BFS, simulation and
Spark engines report in one shape.
"""
from __future__ import annotations

from dataclasses import asdict
from typing import Any, Optional

from verifier.bfs import COMPLETE, DEADLOCK, STOPPED, VIOLATION, Result
from verifier.exitcodes import EXIT_OK, EXIT_STOPPED, EXIT_VIOLATION
from verifier.fingerprint import BITS
from verifier.reports import SAMPLED_STATUS, STOPPED_STATUS
from verifier.trace import rows


def exit_code(result: Result) -> int:
    if result.status == VIOLATION:
        return EXIT_VIOLATION
    if result.status == STOPPED:
        return EXIT_STOPPED
    return EXIT_OK


def config_json(cfg) -> dict[str, Any]:
    from specs.config import explicit_flags
    return {"preset": cfg.preset, "mutant": cfg.mutant, "replicas": list(cfg.replicas),
            "extra_brokers": list(cfg.extra_brokers), "min_isr": cfg.min_isr,
            "unclean_leader_election": cfg.unclean_leader_election, "flags": explicit_flags(cfg),
            "rules": asdict(cfg.rules), "bounds": asdict(cfg.bounds)}


def counterexample_json(trace) -> dict[str, Any]:
    """The summary's view of the main counterexample and the files that hold it."""
    return {"length": len(trace), "violated": list(trace.violated), "rows": [list(r) for r in rows(trace)],
            "scenario": "counterexample.json", "itf": "counterexample.itf.json"}


def coverage(model, result: Result) -> tuple[list[dict], list[str]]:
    """Per action: transitions generated (enabled) and new states reached (taken). An action
    that is on but never taken is a warning: the model never exercised it."""
    off = model.off_by_config()
    table, warnings = [], []
    for name in model.action_names:
        enabled, taken = result.enabled.get(name, 0), result.taken.get(name, 0)
        if name in off and not enabled:
            status, reason = "off by config", off[name]
        elif taken == 0:
            status = "never taken"
            reason = "enabled but never reached a new state" if enabled else "never enabled"
            warnings.append(f"action {name} was {reason}: properties never saw it happen")
        else:
            status, reason = "ok", ""
        table.append({"action": name, "enabled": enabled, "new_states": taken, "status": status, "reason": reason})
    return table, warnings


def invariant_rows(invariants, violated, explored_all: bool, sampled: bool = False) -> list[dict]:
    """The verdict per invariant. A sampling engine (random walks, Hypothesis) that found
    nothing says so; it never says "holds"."""
    out = []
    for inv in invariants:
        if inv.name in violated:
            status = "violated"
        elif explored_all:
            status = "holds"
        else:
            status = SAMPLED_STATUS if sampled else STOPPED_STATUS
        out.append({"name": inv.name, "kind": inv.kind, "status": status, "quote": inv.quote})
    return out


def build(engine: str, model, invariants, result: Result, run_id: str, command: str,
          extra: Optional[dict] = None) -> dict[str, Any]:
    cov, warnings = coverage(model, result)
    if result.status == COMPLETE and engine == "simulate":
        warnings.append("simulation samples runs: no violation found is not a proof")
    if result.graph_note:
        warnings.append(result.graph_note)
    trace = result.counterexample
    invs = invariant_rows(invariants, result.counterexamples, result.explored_all,
                          sampled=engine == "simulate" and result.status == COMPLETE)
    summary: dict[str, Any] = {
        "tool": "kraft-verify",
        "engine": engine,
        "run_id": run_id,
        "command": command,
        "config": config_json(model.cfg),
        "result": {COMPLETE: "ok", VIOLATION: "violation", STOPPED: "stopped"}[result.status],
        "exit_code": exit_code(result),
        "stop_reason": result.stop_reason,
        "invariants": invs,
        "violated": sorted(result.counterexamples),
        "counts": {"distinct_states": result.distinct_states, "transitions": result.transitions,
                   "depth": result.depth, "states_per_level": list(result.states_per_level),
                   "seconds": round(result.seconds, 3), "states_per_second": round(result.states_per_second, 1),
                   "terminal_states": result.terminal_states},
        "memory": {"visited_store_bytes": result.store_bytes,
                   "visited_store_bytes_per_state": round(result.store_bytes / max(result.distinct_states, 1), 1)},
        "deadlock": {"checked": result.deadlock_checked, "found": DEADLOCK in result.counterexamples,
                     "complete": result.explored_all},
        "symmetry": {"enabled": model.symmetric, "group_size": model.group_size,
                     "note": model.symmetry_note or f"orbits of {model.group_size} renamings of the replicas"},
        "fingerprint": {"bits": BITS, "collision_probability": result.collision_probability},
        "coverage": cov,
        "warnings": warnings,
        "counterexample": None,
    }
    if trace is not None:
        summary["counterexample"] = counterexample_json(trace)
        if len(result.counterexamples) > 1:
            summary["counterexamples"] = {name: {"length": len(t), "scenario": f"counterexample-{name}.json"}
                                          for name, t in result.counterexamples.items()}
    if extra:
        summary.update(extra)
    return summary
