"""A run of the model (specs.Trace) as a story a person can read: one row per step, the action
and the fields that changed, and why the property fails at the last step. What a field is and
how a step is named come from the model's display hooks, why a property fails from the
property itself; this module knows no protocol."""
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
    if trace.violated and len(out) > 1:
        n, action, diff = out[-1]
        out[-1] = (n, f"{action}  << {', '.join(trace.violated)} breaks here", diff)
    return out


def why(trace) -> dict[str, str]:
    """Per violated property, why it fails at the last step: the property's own words
    (invariants/explain.py, reached through the property the engine checked), else the step
    and the partition as the model shows it."""
    by_name = {p.name: p for p in trace.properties}
    out = {}
    for name in trace.violated:
        prop = by_name.get(name)
        text = prop.why(trace) if prop is not None and hasattr(prop, "why") else None
        if not text:
            model, labels = trace.model, [label for label, _ in trace.steps]
            text = (f"{name} fails after step {len(trace.steps)} "
                    f"({model.describe(labels[-1]) if labels else 'the initial state'}): {model.headline(trace.final)}")
        out[name] = text
    return out


def timeline(trace) -> list[dict]:
    """One entry per step: the action, the partition's cells, every broker's, and which changed
    (`partition.isr`, `b2.log`)."""
    model = trace.model

    def entry(step: int, action: str, s, prev: dict) -> dict:
        now = {"partition": model.partition_cells(s), **model.timeline(s)}
        changed = [f"{g}.{k}" for g, group in now.items() for k, v in group.items()
                   if prev and prev.get(g, {}).get(k) != v]
        return {"step": step, "action": action, "partition": now.pop("partition"), "brokers": now,
                "changed": changed}
    out = [entry(0, "initial", trace.initial, {})]
    for i, (label, s) in enumerate(trace.steps, 1):
        prev = out[-1]
        out.append(entry(i, model.describe(label), s, {"partition": prev["partition"], **prev["brokers"]}))
    return out


def full_rows(trace) -> list[tuple[int, str, str]]:
    """TLC's view: every field at every step."""
    model = trace.model
    states = [("initial", trace.initial)] + [(model.describe(label), s) for label, s in trace.steps]
    return [(i, action, "; ".join(f"{k}={v}" for k, v in model.view(s).items()))
            for i, (action, s) in enumerate(states)]


def render(trace, console=None, title: Optional[str] = None, full: bool = False) -> None:
    """The table (what changed per step, or with `full` every field), then why it fails."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    console = console or Console()
    table = Table(title=title or f"counterexample: {', '.join(trace.violated)} ({len(trace)} steps)")
    table.add_column("#", justify="right")
    table.add_column("action")
    table.add_column("state" if full else "what changed")
    shown = rows(trace)
    if full:
        marked = {n: action for n, action, _ in shown}
        shown = [(n, marked[n], fields) for n, _, fields in full_rows(trace)]
    for n, action, diff in shown:
        table.add_row(str(n), escape(action), escape(diff))
    console.print(table)
    for name, text in why(trace).items():
        console.print(f"why {escape(name)} fails: {escape(text)}")
