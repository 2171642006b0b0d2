"""A run of the model (specs.Trace) as a story a person can read: one row per step, the action
and the fields that changed. What a field is and how a step is named come from the model's
display hooks; this module knows no protocol."""
from __future__ import annotations

from typing import Optional

Row = tuple[int, str, str]


def rows(trace) -> list[Row]:
    """(step number, action, 'field=value; ...') per step; step 0 is the start state."""
    model = trace.model
    prev = model.view(trace.initial)
    start = ", ".join(f"{k}={v}" for k, v in prev.items() if k in model.start_fields)
    out: list[Row] = [(0, "initial", start)]
    for i, (label, s) in enumerate(trace.steps, 1):
        now = model.view(s)
        diff = "; ".join(f"{k}={v}" for k, v in now.items() if prev.get(k) != v)
        out.append((i, model.describe(label), diff or "(no change)"))
        prev = now
    return out


def render(trace, console=None, title: Optional[str] = None) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    console = console or Console()
    table = Table(title=title or f"counterexample: {', '.join(trace.violated)} ({len(trace)} steps)")
    table.add_column("#", justify="right")
    table.add_column("action")
    table.add_column("what changed")
    for n, action, diff in rows(trace):
        table.add_row(str(n), escape(action), escape(diff))
    console.print(table)
