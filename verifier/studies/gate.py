"""The mutation gate, one for every engine: run each mutant of the catalogue, say which invariant
killed it and how long its counterexample was, and fail if one survives.

Any engine's result says what became of a mutant (`outcome_row`); an engine with more to say
gives its own `run_one(cfg) -> row` (z3's scenario of the refutation). The gate does the rest
the same way for all of them: the live lines, the table, the result (engine `<engine>-mutants`,
written by the one run writer), and the exit code (1 if a mutant survived, 3 if one was neither
killed nor exhausted, else 0).
"""
from __future__ import annotations

from typing import Callable, Optional

from specs import MUTANTS, mutant_config
from verifier.core.exitcodes import EXIT_OK, EXIT_STOPPED, EXIT_VIOLATION
from verifier.core.result import COMPLETE, VIOLATED, VIOLATION, Result

KILLED, SURVIVED, STOPPED, OUTSIDE = "killed", "survived", "stopped", "outside"


def row(name: str, status: str, killed_by=(), length: Optional[int] = None, seconds: float = 0.0,
        reason: str = "", **extra) -> dict:
    return {"mutant": name, "rule": MUTANTS[name].description, "status": status, "killed_by": list(killed_by),
            "length": length, "seconds": round(seconds, 2), "reason": reason, **extra}


def outcome_row(name: str, result: Result, survived_reason: str = "", **extra) -> dict:
    """What an engine's result says of a mutant: killed (by the properties its first trace
    breaks), survived (the engine finished without a violation) or stopped (a budget first)."""
    bad = [v for v in result.verdicts if v.status == VIOLATED]
    trace = result.counterexample or next((v.trace for v in bad if v.trace is not None), None)
    if trace is not None or bad:
        killed_by = trace.violated if result.counterexample is not None else [v.name for v in bad]
        return row(name, KILLED, killed_by, len(trace) if trace is not None else None, result.seconds, **extra)
    if result.status == COMPLETE:
        return row(name, SURVIVED, seconds=result.seconds, reason=survived_reason, **extra)
    return row(name, STOPPED, seconds=result.seconds, reason=result.stop_reason, **extra)


def gate_result(engine: str, rows: list[dict], code: int, details: Optional[dict] = None) -> Result:
    """The gate as a result for the run writer: one row per mutant (no property verdicts)."""
    survived = [r["mutant"] for r in rows if r["status"] == SURVIVED]
    status = {EXIT_OK: COMPLETE, EXIT_VIOLATION: VIOLATION}.get(code, "stopped")
    return Result(status, round(sum(r.get("seconds") or 0 for r in rows), 3),
                  "" if status != "stopped" else "a mutant was neither killed nor exhausted", f"{engine}-mutants",
                  exit_code=code, warnings=[f"mutant {m} survived: no invariant watches its rule" for m in survived],
                  counts={"mutants": len(rows), "killed": sum(r["status"] == KILLED for r in rows),
                          "seconds": round(sum(r.get("seconds") or 0 for r in rows), 3)},
                  sections={"mutants": rows, "details": details or {}})


def gate_exit(rows: list[dict]) -> int:
    if any(r["status"] == SURVIVED for r in rows):
        return EXIT_VIOLATION
    if any(r["status"] == STOPPED for r in rows):
        return EXIT_STOPPED
    return EXIT_OK


def run_gate(engine: str, base, names: list[str], run_one: Callable[[object], dict], console, title: str,
             columns: tuple[str, ...] = (), run_liveness: Optional[Callable[[object], dict]] = None,
             starting: Optional[Callable[[int, str], None]] = None) -> tuple[list[dict], int]:
    """Run every named mutant on `base` (which names none), or on the preset the mutant needs
    (specs.mutant_config); print each verdict as it comes and the table at the end. A mutant
    only a liveness check can see goes to `run_liveness`, or is outside an engine without one.
    `columns`: engine-specific row keys to show; `starting(i, name)` hears each mutant begin."""
    from rich.table import Table
    rows = []
    for i, name in enumerate(names):
        if starting is not None:          # the progress line's phase
            starting(i, name)
        cfg = mutant_config(base, name)
        if not MUTANTS[name].liveness:
            r = run_one(cfg)
        elif run_liveness is not None:
            r = run_liveness(cfg)
        else:
            r = row(name, OUTSIDE, reason="a liveness mutant: only check --liveness sees it")
        rows.append(r)
        console.print(f"{name}: {_verdict(r)}", markup=False)
    code = gate_exit(rows)
    table = Table(title=f"{title}: {sum(r['status'] == KILLED for r in rows)}/{len(rows)} killed")
    for col in ("mutant", "killed by", "steps") + columns + ("seconds",):
        table.add_column(col)
    for r in rows:
        killed = ", ".join(r["killed_by"]) if r["status"] == KILLED else {
            SURVIVED: "[bold red]SURVIVED[/]", STOPPED: "[yellow]not killed (stopped)[/]",
            OUTSIDE: "outside this engine"}[r["status"]]
        table.add_row(r["mutant"], killed, str(r["length"] if r["length"] is not None else "-"),
                      *(_cell(r.get(c)) for c in columns), f"{r['seconds']:.1f}")
    console.print(table)
    return rows, code


def _cell(value) -> str:
    return "-" if value is None else (f"{value:,}" if isinstance(value, int) else str(value))


def _verdict(r: dict) -> str:
    if r["status"] == KILLED:
        return f"killed by {', '.join(r['killed_by'])} in {r['length']} steps ({r['seconds']:.1f}s)"
    if r["status"] == SURVIVED:
        return f"SURVIVED{': ' + r['reason'] if r['reason'] else ''} ({r['seconds']:.1f}s)"
    if r["status"] == OUTSIDE:
        return f"outside this engine ({r['reason']})"
    return f"not killed before: {r['reason']} ({r['seconds']:.1f}s)"
