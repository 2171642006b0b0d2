"""The mutation gate, one for every engine: run each mutant of the catalogue, say which invariant
killed it and how long its counterexample was, and fail if one survives.

Each engine gives `run_one(cfg) -> Row`; the gate does the rest the same way for all of them:
the live lines, the table, summary.json (engine `<engine>-mutants`), report.md, JUnit, and the
exit code (1 if a mutant survived, 3 if one was neither killed nor exhausted, else 0).
"""
from __future__ import annotations

from typing import Callable, Optional

from specs import MUTANTS, mutant_config
from verifier.exitcodes import EXIT_OK, EXIT_STOPPED, EXIT_VIOLATION

KILLED, SURVIVED, STOPPED, OUTSIDE = "killed", "survived", "stopped", "outside"


def row(name: str, status: str, killed_by=(), length: Optional[int] = None, seconds: float = 0.0,
        reason: str = "", **extra) -> dict:
    return {"mutant": name, "rule": MUTANTS[name].description, "status": status, "killed_by": list(killed_by),
            "length": length, "seconds": round(seconds, 2), "reason": reason, **extra}


def gate_exit(rows: list[dict]) -> int:
    if any(r["status"] == SURVIVED for r in rows):
        return EXIT_VIOLATION
    if any(r["status"] == STOPPED for r in rows):
        return EXIT_STOPPED
    return EXIT_OK


def run_gate(engine: str, base, names: list[str], run_one: Callable[[object], dict], console, title: str,
             columns: tuple[str, ...] = (), run_liveness: Optional[Callable[[object], dict]] = None
             ) -> tuple[list[dict], int]:
    """Run every named mutant on `base` (which names none), or on the preset the mutant needs
    (specs.mutant_config); print each verdict as it comes and the table at the end. A mutant
    only a liveness check can see goes to `run_liveness`, or is outside an engine without one.
    `columns`: engine-specific row keys to show."""
    from rich.table import Table
    rows = []
    for name in names:
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
