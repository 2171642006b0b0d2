"""The variant matrix's views (verifier/studies/matrix.py builds it): matrix.md and
matrix.html, a property per line and a row of the study per column, each violated cell
linked to its replay scenario and the row's report."""
from __future__ import annotations

from html import escape

from verifier.core.result import VIOLATED
from verifier.reports.page import page, table

LEGEND = ("holds: no reachable state of the row's config breaks it (an exhaustive search at those bounds, not a "
          "proof for all sizes); violated (n): the shortest counterexample has n steps, linked to its replay "
          "scenario and the row's report; not reached: the search did not finish within the row budget and "
          "fuzzing did not break it.")
CSS = ".violated{background:#f8d0d0}.holds{background:#d9f2d9}.not-reached{background:#fbeec0}"


def cell_text(cell) -> str:
    if cell is None:
        return "-"
    if cell["status"] == VIOLATED:
        by = " by fuzz" if cell.get("engine") == "fuzz" else ""
        return f"violated ({cell['length']}{by})"
    return cell["status"]


def row_shape(r: dict) -> str:
    """What the row checked beyond its preset: replicas, spare brokers, min ISR, bounds."""
    shape = r.get("shape") or {}
    parts = [f"replicas {shape['replicas']}"] if "replicas" in shape else []
    if shape.get("spare_brokers"):
        parts.append(f"spare {shape['spare_brokers']}")
    if "min_isr" in shape:
        parts.append(f"min ISR {shape['min_isr']}")
    if r["bounds"] == "recovery":
        parts.append("the recovery profile's rules and bounds (kraft-verify list)")
    parts += [f"{k}={v}" for k, v in r["bound_values"].items()]
    return ", ".join(parts) or "-"


def _exhausted(r: dict, esc=str) -> str:
    return "yes" if r["complete"] else "no: " + esc(r["stop_reason"] or "")


def missing_note(matrix: dict) -> str:
    """An interrupted matrix says so, and which rows it lacks ("" for a whole one)."""
    missing = matrix.get("missing") or []
    return (f"INTERRUPTED: {len(missing)} row(s) were not computed ({', '.join(missing)}); this matrix is "
            "partial and no cell of those rows is known") if missing else ""


def render_md(matrix: dict, names: list[str]) -> str:
    def cell(r, c):
        text = cell_text(c)
        return f"[{text}]({c['scenario']}) ([report]({c['report']}))" if c and c["status"] == VIOLATED else text
    rows = matrix["rows"]
    note = missing_note(matrix)
    lines = ["# Variant matrix", ""] + ([f"**{note}**", ""] if note else []) + [
             f"Command: `{matrix['command']}`; model `{matrix['model']}`; {matrix['budget_seconds']:g} s per row.", "",
             "| property | " + " | ".join(f"{r['preset']} @ {r['bounds']}" for r in rows) + " |",
             "|---|" + "---|" * len(rows)]
    lines += [f"| {name} | " + " | ".join(cell(r, r["cells"].get(name)) for r in rows) + " |" for name in names]
    lines += ["", "| row | config | states | complete |", "|---|---|---|---|"]
    lines += [f"| {r['preset']} @ {r['bounds']} | {row_shape(r)} | {r['states']:,} | {_exhausted(r)} |" for r in rows]
    return "\n".join(lines) + "\n"


def _html_cell(name: str, r: dict, c) -> str:
    status, text = (c["status"] if c else "absent"), escape(cell_text(c))
    if c and c["status"] == VIOLATED:
        text = f'<a href="{escape(c["scenario"])}">{text}</a> <a href="{escape(c["report"])}">report</a>'
    return (f'<td class="cell {status.replace(" ", "-")}" data-preset="{escape(r["preset"])}" '
            f'data-bounds="{escape(r["bounds"])}" data-property="{escape(name)}">{text}</td>')


def render_html(matrix: dict, names: list[str]) -> str:
    rows = matrix["rows"]
    head = "".join(f"<th>{escape(r['preset'])}<br>{escape(r['bounds'])}</th>" for r in rows)
    body = "".join(f"<tr><th>{escape(name)}</th>" + "".join(_html_cell(name, r, r["cells"].get(name)) for r in rows)
                   + "</tr>" for name in names)
    info = [(f"{r['preset']} @ {r['bounds']}", row_shape(r), f"{r['states']:,}", f"{r['seconds']:g} s",
             _exhausted(r)) for r in rows]
    note = missing_note(matrix)
    return page("Variant matrix", [
        f'<p class="partial"><b>{escape(note)}</b></p>' if note else "",
        f"<p>{escape(matrix['command'])}</p><p>{escape(LEGEND)}</p>",
        f'<table id="matrix"><tr><th>property</th>{head}</tr>{body}</table>',
        "<h2>Rows</h2>" + table(("row", "bounds over the preset", "distinct states", "time", "exhausted"), info,
                                ident="rows", row_heads=True)], CSS)
