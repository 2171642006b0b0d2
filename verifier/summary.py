"""summary.json: one schema for every engine and the mutation gate (docs/summary.md).

Every command condenses its run into one dict with the same top-level keys (schema_version,
engine, config, result, exit_code, invariants, counts, warnings, counterexamples); engine-
specific facts go under `counts` and `details`. report.md, JUnit and CI gates read only this.
"""
from __future__ import annotations

from typing import Any, Optional

from specs import config_summary
from verifier.result import COMPLETE, DEADLOCK, STOPPED, VIOLATION, Result
from verifier.exitcodes import EXIT_OK, EXIT_STOPPED, EXIT_VIOLATION
from verifier.fingerprint import BITS
from verifier.trace import rows, timeline, why

SCHEMA_VERSION = 1
HOLDS = "holds"
VIOLATED = "violated"
STOPPED_STATUS = "not checked to completion"
SAMPLED_STATUS = "not violated in sampled runs"     # random walks and Hypothesis: a sample, no proof
UNKNOWN_STATUS = "unknown"                          # z3: neither proved nor refuted within the depth
RESULTS = {COMPLETE: "ok", VIOLATION: "violation", STOPPED: "stopped"}


def exit_code(result: Result) -> int:
    if result.status == VIOLATION:
        return EXIT_VIOLATION
    if result.status == STOPPED:
        return EXIT_STOPPED
    return EXIT_OK


def config_json(cfg) -> dict[str, Any]:
    return config_summary(cfg)


def header(engine: str, cfg, run_id: str, command: str) -> dict[str, Any]:
    """The keys every summary starts with."""
    return {"schema_version": SCHEMA_VERSION, "tool": "kraft-verify", "engine": engine, "run_id": run_id,
            "command": command, "config": config_json(cfg)}


def counterexample_json(trace, scenario: Optional[str], itf: Optional[str] = None) -> dict[str, Any]:
    """One invariant's counterexample: its length, the table, and the files that hold it."""
    return {"length": len(trace), "violated": list(trace.violated), "rows": [list(r) for r in rows(trace)],
            "why": why(trace), "timeline": timeline(trace), "scenario": scenario, "itf": itf}


def invariant_rows(invariants, counterexamples: dict, status_if_not_violated: str) -> list[dict]:
    """The verdict per invariant, each violated one with its own counterexample."""
    out = []
    for inv in invariants:
        cex = counterexamples.get(inv.name)
        out.append({"name": inv.name, "kind": inv.kind, "status": VIOLATED if cex else status_if_not_violated,
                    "quote": inv.quote, "assumes": getattr(inv, "assumes", ""), "counterexample": cex})
    return out


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
            hint = "" if enabled else model.enable_hint(name)
            reason += f": {hint}" if hint else ""
            warnings.append(f"action {name} was {reason} (properties never saw it happen)")
        else:
            status, reason = "ok", ""
        table.append({"action": name, "enabled": enabled, "new_states": taken, "status": status, "reason": reason})
    return table, warnings


def search_summary(engine: str, model, invariants, result: Result, run_id: str, command: str,
                   counterexamples: dict[str, dict]) -> dict[str, Any]:
    """BFS, random walks and Spark. `counterexamples`: invariant -> counterexample_json."""
    cov, warnings = coverage(model, result)
    sampled = engine == "simulate" and result.status == COMPLETE
    if sampled:
        warnings.append("simulation samples runs: no violation found is not a proof")
    if result.graph_note:
        warnings.append(result.graph_note)
    status = HOLDS if result.explored_all else (SAMPLED_STATUS if sampled else STOPPED_STATUS)
    summary = header(engine, model.cfg, run_id, command)
    summary.update({
        "result": RESULTS[result.status], "exit_code": exit_code(result), "stop_reason": result.stop_reason,
        "invariants": invariant_rows(invariants, counterexamples, status),
        "violated": sorted(counterexamples),
        "counts": {"distinct_states": result.distinct_states, "transitions": result.transitions,
                   "depth": result.depth, "states_per_level": list(result.states_per_level),
                   "seconds": round(result.seconds, 3), "states_per_second": round(result.states_per_second, 1),
                   "terminal_states": result.terminal_states},
        "memory": {"visited_store_bytes": result.store_bytes,
                   "visited_store_bytes_per_state": round(result.store_bytes / max(result.distinct_states, 1), 1)},
        "deadlock": {"checked": result.deadlock_checked, "found": DEADLOCK in result.counterexamples,
                     "complete": result.explored_all or sampled},
        "symmetry": {"enabled": model.symmetric, "group_size": model.group_size,
                     "note": model.symmetry_note or f"orbits of {model.group_size} renamings of the replicas"},
        "fingerprint": {"bits": BITS, "collision_probability": result.collision_probability},
        "coverage": cov, "warnings": warnings})
    return with_counterexamples(summary, counterexamples, result.counterexample)


def with_counterexamples(summary: dict, counterexamples: dict[str, dict], first=None) -> dict:
    """`counterexamples` (every violated invariant's) and `counterexample` (the first found)."""
    summary["counterexamples"] = counterexamples
    main = next((c for name, c in counterexamples.items() if first is not None and name in first.violated), None)
    summary["counterexample"] = main or next(iter(counterexamples.values()), None)
    return summary


def gate_summary(engine: str, cfg, run_id: str, command: str, rows_: list[dict], exit_code_: int,
                 details: Optional[dict] = None) -> dict[str, Any]:
    """The mutation gate: one row per mutant (killed, killed_by, length, ...)."""
    summary = header(f"{engine}-mutants", cfg, run_id, command)
    result = {EXIT_OK: "ok", EXIT_VIOLATION: "violation"}.get(exit_code_, "stopped")
    survived = [r["mutant"] for r in rows_ if r["status"] == "survived"]
    summary.update({"result": result, "exit_code": exit_code_,
                    "stop_reason": "" if result != "stopped" else "a mutant was neither killed nor exhausted",
                    "invariants": [], "violated": [], "mutants": rows_,
                    "counts": {"mutants": len(rows_), "killed": sum(r["status"] == "killed" for r in rows_),
                               "seconds": round(sum(r.get("seconds") or 0 for r in rows_), 3)},
                    "warnings": [f"mutant {m} survived: no invariant watches its rule" for m in survived],
                    "counterexamples": {}, "counterexample": None, "details": details or {}})
    return summary
