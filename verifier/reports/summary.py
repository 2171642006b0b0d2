"""summary.json: one schema for every engine and study (docs/summary.md), built by one function.

`summarize` turns any engine's result (verifier/core/result.py) into the dict every writer
reads: the same top-level keys for all (schema_version, engine, config, result, exit_code,
invariants, counts, warnings, counterexamples), engine-specific facts in `counts` and the
result's own sections. report.md, report.html, JUnit and CI gates read only this.
"""
from __future__ import annotations

from typing import Any, Optional

from specs import config_summary
from verifier.core.exitcodes import EXIT_OK, EXIT_STOPPED, EXIT_VIOLATION
from verifier.core.fingerprint import BITS
from verifier.core.result import (COMPLETE, DEADLOCK, EXCEPTED, HOLDS, INCONCLUSIVE, SAMPLED_STATUS,  # noqa: F401
                                  STOPPED, STOPPED_STATUS, UNKNOWN_STATUS, VIOLATED, VIOLATION, Result,
                                  SearchResult)
from verifier.reports.story import rows, timeline, why

SCHEMA_VERSION = 1


def exit_code(result: Result) -> int:
    if result.exit_code is not None:
        return result.exit_code
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
    """One property's counterexample: its length, the table, and the files that hold it."""
    return {"length": len(trace), "violated": list(trace.violated), "rows": [list(r) for r in rows(trace)],
            "why": why(trace), "timeline": timeline(trace), "scenario": scenario, "itf": itf}


def summarize(result: Result, model, run_id: str, command: str, files: dict[str, dict],
              engine: Optional[str] = None) -> dict[str, Any]:
    """The summary of any run. `files`: property -> its counterexample's JSON (what the run
    writer saved, verifier/reports/writer.py); `model` gives the config (and, for a search,
    the coverage and symmetry facts)."""
    code = exit_code(result)
    summary = header(engine or result.engine, model.cfg, run_id, command)
    invariants = []
    for v in result.verdicts:
        row = {"name": v.name, "kind": v.kind, "status": v.status, "quote": v.quote, "assumes": v.assumes,
               "counterexample": files.get(v.name)}
        if v.detail:
            row["detail"] = v.detail
        row.update(v.extra)
        invariants.append(row)
    violated = sorted(set(result.counterexamples) | {v.name for v in result.verdicts if v.status == VIOLATED})
    summary.update({"result": {EXIT_OK: "ok", EXIT_VIOLATION: "violation"}.get(code, "stopped"),
                    "exit_code": code, "stop_reason": result.stop_reason,
                    "invariants": invariants, "violated": violated, "counts": dict(result.counts),
                    "warnings": list(result.warnings)})
    if isinstance(result, SearchResult):
        _search_sections(summary, model, result)
    summary.update(result.sections)
    summary["counterexamples"] = files
    first = result.counterexample
    main = next((c for name, c in files.items() if first is not None and name in first.violated), None)
    summary["counterexample"] = main or next((files[name] for name in violated if name in files), None)
    return summary


def coverage(model, result: SearchResult) -> tuple[list[dict], list[str]]:
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


def _search_sections(summary: dict, model, result: SearchResult) -> None:
    """BFS, random walks and Spark: counts, memory, deadlock, symmetry, fingerprint, coverage."""
    cov, warnings = coverage(model, result)
    sampled = result.sampled and result.status == COMPLETE
    if sampled:
        warnings.append("simulation samples runs: no violation found is not a proof")
    if result.graph_note:
        warnings.append(result.graph_note)
    summary["counts"] = {"distinct_states": result.distinct_states, "transitions": result.transitions,
                         "depth": result.depth, "states_per_level": list(result.states_per_level),
                         "seconds": round(result.seconds, 3), "states_per_second": round(result.states_per_second, 1),
                         "terminal_states": result.terminal_states, **result.counts}
    summary.update({
        "memory": {"visited_store_bytes": result.store_bytes,
                   "visited_store_bytes_per_state": round(result.store_bytes / max(result.distinct_states, 1), 1),
                   "peak_resident_bytes": result.peak_resident_bytes,
                   "peak_resident_bytes_per_state": round(result.peak_resident_bytes / max(result.distinct_states, 1), 1),
                   "peak_resident_of": ("driver" if summary.get("engine") == "spark" else
                                        "run" if result.peak_resident_own else "process"),
                   "disk_bytes": result.disk_bytes,
                   "disk_bytes_per_state": round(result.disk_bytes / max(result.distinct_states, 1), 1),
                   "disk_of": result.disk_of,
                   "disk_peak_bytes": result.disk_peak_bytes,
                   "disk_peak_bytes_per_state": round(result.disk_peak_bytes / max(result.distinct_states, 1), 1)},
        "deadlock": {"checked": result.deadlock_checked, "found": DEADLOCK in result.counterexamples,
                     "complete": result.explored_all or sampled},
        "symmetry": {"enabled": model.symmetric, "group_size": model.group_size,
                     "note": model.symmetry_note or f"orbits of {model.group_size} renamings of the replicas",
                     **result.extra.get("symmetry", {})},
        "fingerprint": {"bits": BITS, "collision_probability": result.collision_probability},
        "coverage": cov})
    summary["warnings"] = warnings + summary["warnings"]


WHOSE = {"run": "this run's own", "process": "the process's since it started", "driver": "Spark's driver alone"}


def memory_line(m: dict) -> str:
    """Bytes a state: resident at the peak, and on disk (the checkpoint, or the visited runs and
    links of --visited disk) where the run kept any."""
    line = (f"memory: {m['peak_resident_bytes_per_state']:,.0f} B a state resident at the peak "
            f"({m['peak_resident_bytes'] / 2**20:,.0f} MB, {WHOSE[m['peak_resident_of']]})")
    if m["disk_bytes"]:
        line += f"; {m['disk_bytes_per_state']:,.1f} B a state on disk ({m['disk_bytes'] / 2**20:,.1f} MB of {m.get('disk_of', 'checkpoint')})"
    if m.get("disk_peak_bytes"):
        line += (f", {m['disk_peak_bytes_per_state']:,.1f} B at the peak ({m['disk_peak_bytes'] / 2**20:,.1f} MB, "
                 "with a level's rows and candidates)")
    return line
