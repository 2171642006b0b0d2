"""`kraft-verify matrix`: every preset against every property under several bound sets
(verifier/studies/matrix.py), as a terminal table, matrix.md, matrix.json and matrix.html."""
from __future__ import annotations

import argparse
from html import escape
from pathlib import Path

from verifier.cli.common import UsageError, console
from verifier.core.exitcodes import EXIT_OK, EXIT_STOPPED, EXIT_VIOLATION
from verifier.core.files import write_atomic


def _rows(args):
    from specs import PRESETS
    from verifier.studies.matrix import BOUND_SETS, Row
    # a name given twice is one row, as a repeated --invariant is checked once elsewhere
    presets = list(dict.fromkeys(p.strip() for p in args.presets.split(",")))
    sets = list(dict.fromkeys(b.strip() for b in args.bound_sets.split(",")))
    for p in presets:
        if p not in PRESETS:
            from specs import unknown
            raise unknown("preset", p, list(PRESETS))
    for b in sets:
        if b not in BOUND_SETS:
            from specs import unknown
            raise unknown("bound set", b, list(BOUND_SETS))
    if args.brokers is not None and not 1 <= args.brokers <= 7:
        raise UsageError(f"--brokers must be between 1 and 7, got {args.brokers}")
    if not 0 < args.row_budget < float("inf"):
        raise UsageError(f"--row-budget must be a positive finite number, got {args.row_budget}")
    return [Row(p, b) for p in presets for b in sets]


def run(args: argparse.Namespace) -> int:
    from rich.table import Table
    from verifier.studies.matrix import Engines, build, cell_text, properties
    rows = _rows(args)
    out, out_dir = console(), Path(args.out)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out {args.out}: not a directory")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {args.out}: cannot create it ({exc.strerror})") from None
    cache = out_dir / "matrix.json"
    if (cache.exists() or cache.is_symlink()) and not cache.is_file():
        raise UsageError(f"--out {args.out}: matrix.json there is not a file (it is rewritten after every row)")
    command = " ".join(["kraft-verify"] + args.argv)

    def on_row(entry, reused):
        how = "reused (config and model unchanged)" if reused else f"{entry['seconds']}s"
        done = "complete" if entry["complete"] else "NOT complete: " + entry["stop_reason"]
        out.print(f"{entry['preset']} @ {entry['bounds']}: {entry['states']:,} states, {done}, {how}", markup=False)
    from verifier.cli import binding
    matrix = build(rows, out_dir, args.row_budget, command,
                   Engines(binding.engine("bfs"), binding.engine("fuzz"), binding.properties()),
                   args.brokers, on_row)
    names = properties(matrix)
    table = Table(title="variant matrix (violated: steps of the shortest counterexample)")
    table.add_column("property")
    for r in matrix["rows"]:
        table.add_column(f"{r['preset']}\n{r['bounds']}")
    for name in names:
        table.add_row(name, *(cell_text(r["cells"].get(name)) for r in matrix["rows"]))
    out.print(table)
    write_atomic(out_dir / "matrix.md", render_md(matrix, names))
    write_atomic(out_dir / "matrix.html", render_html(matrix, names))
    out.print(f"matrix: {out_dir}/matrix.md, matrix.json, matrix.html", markup=False)
    return exit_code(matrix)


def exit_code(matrix: dict) -> int:
    """The house codes: 1 if any cell is violated (the older variants' are expected: that is
    what the matrix shows), else 3 if a row was not exhausted, else 0."""
    from verifier.studies.matrix import VIOLATED
    if any(c["status"] == VIOLATED for r in matrix["rows"] for c in r["cells"].values()):
        return EXIT_VIOLATION
    return EXIT_OK if all(r["complete"] for r in matrix["rows"]) else EXIT_STOPPED


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


def render_md(matrix: dict, names: list[str]) -> str:
    from verifier.studies.matrix import VIOLATED, cell_text
    rows = matrix["rows"]
    lines = ["# Variant matrix", "", f"Command: `{matrix['command']}`; model `{matrix['model']}`; "
             f"{matrix['budget_seconds']:g} s per row.", "",
             "| property | " + " | ".join(f"{r['preset']} @ {r['bounds']}" for r in rows) + " |",
             "|---|" + "---|" * len(rows)]
    for name in names:
        cells = []
        for r in rows:
            c = r["cells"].get(name)
            text = cell_text(c)
            if c and c["status"] == VIOLATED:
                text = f"[{text}]({c['scenario']}) ([report]({c['report']}))"
            cells.append(text)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "| row | config | states | complete |", "|---|---|---|---|"]
    lines += [f"| {r['preset']} @ {r['bounds']} | {row_shape(r)} | {r['states']:,} | "
              f"{'yes' if r['complete'] else 'no: ' + r['stop_reason']} |" for r in rows]
    return "\n".join(lines) + "\n"


def render_html(matrix: dict, names: list[str]) -> str:
    from verifier.studies.matrix import VIOLATED, cell_text
    rows = matrix["rows"]
    head = "".join(f"<th>{escape(r['preset'])}<br>{escape(r['bounds'])}</th>" for r in rows)
    body = []
    for name in names:
        cells = []
        for r in rows:
            c = r["cells"].get(name)
            status = c["status"] if c else "absent"
            text = escape(cell_text(c))
            if c and c["status"] == VIOLATED:
                text = (f'<a href="{escape(c["scenario"])}">{text}</a> '
                        f'<a href="{escape(c["report"])}">report</a>')
            cells.append(f'<td class="cell {status.replace(" ", "-")}" data-preset="{escape(r["preset"])}" '
                         f'data-bounds="{escape(r["bounds"])}" data-property="{escape(name)}">{text}</td>')
        body.append(f"<tr><th>{escape(name)}</th>{''.join(cells)}</tr>")
    info = "".join(f"<tr><th>{escape(r['preset'])} @ {escape(r['bounds'])}</th>"
                   f"<td>{escape(row_shape(r))}</td>"
                   f"<td class=\"num\">{r['states']:,}</td><td class=\"num\">{r['seconds']:g} s</td>"
                   f"<td>{'yes' if r['complete'] else 'no: ' + escape(r['stop_reason'] or '')}</td></tr>"
                   for r in rows)
    legend = ("<p>holds: no reachable state of the row's config breaks it (an exhaustive search at those "
              "bounds, not a proof for all sizes); violated (n): the shortest counterexample has n steps, "
              "linked to its replay scenario and the row's report; not reached: the search did not finish "
              "within the row budget and fuzzing did not break it.</p>")
    css = ("body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1.5em}"
           ".num{text-align:right}"
           "td,th{border:1px solid #ccc;padding:.2em .5em;font-size:.85em}.violated{background:#f8d0d0}"
           ".holds{background:#d9f2d9}.not-reached{background:#fbeec0}")
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>kraft-verify matrix</title>"
            f"<style>{css}</style></head><body><h1>Variant matrix</h1><p>{escape(matrix['command'])}</p>"
            f"{legend}<table id=\"matrix\"><tr><th>property</th>{head}</tr>{''.join(body)}</table>"
            f"<h2>Rows</h2><table id=\"rows\"><tr><th>row</th><th>bounds over the preset</th><th>distinct states</th>"
            f"<th>time</th><th>exhausted</th></tr>{info}</table></body></html>\n")
