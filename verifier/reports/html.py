"""report.html: one self-contained page per run (no scripts, fonts or images from the network),
read only from the summary, like report.md: the verdict, the config, every property with its
fault assumption, the run's figures, coverage, states per BFS level as a bar chart, and each
counterexample as a timeline (rows are steps; the partition's leader, epochs, ISR, ELR, last known
ELR, min ISR, request in flight and recovery state, then per broker its role, ISR/ELR membership,
status, log and HWM; changed cells and the breaking step highlighted)."""
from __future__ import annotations

from html import escape
from typing import Any

from verifier.core.files import PathLike, write_atomic
from verifier.reports.page import page, table
from verifier.reports.text import scalar

CSS = """
.verdict{font-size:1.3em;padding:.5em 1em;display:inline-block;border-radius:4px}
.ok{background:#d9f2d9}.violation{background:#f8d0d0}.stopped{background:#fbeec0}.sampled{background:#e4ecf7}
.violated{color:#b00;font-weight:bold}.holds{color:#070}
td.changed{background:#fff3b0}
tr.breaking td{border-top:2px solid #b00;border-bottom:2px solid #b00}
tr.breaking td.changed{background:#f8c0c0}
.why{background:#fdf1f1;border-left:4px solid #b00;padding:.5em 1em}
.loss{color:#b00;font-weight:bold}
svg text{font-size:10px}
"""
COLUMNS = ("role", "member", "status", "log", "hwm")


def _table(head: list[str], rows: list[list[Any]], cls: str = "") -> str:
    return table(head, ([scalar(v) for v in row] for row in rows), cls)


def _verdict(summary: dict) -> str:
    """The banner: green only for a complete check that every property holds; a sample that
    found nothing says it is a sample, never "all hold"."""
    from verifier.reports.figures import sampled
    result = summary.get("result", "?")
    sample = sampled(summary)
    word = {"ok": sample or "all checked properties hold", "violation": "a property is violated",
            "stopped": "NOT COMPLETE: " + (summary.get("stop_reason") or "stopped before completion")
            }.get(result, result)
    cls = "sampled" if sample else result
    return (f'<p id="verdict" class="verdict {escape(cls)}">{escape(word)} '
            f'(exit code {escape(str(summary.get("exit_code", "?")))})</p>')


def _run(summary: dict) -> str:
    from verifier.reports.figures import run_rows
    return "<h2>Run</h2>" + _table(["figure", "value"], [list(r) for r in run_rows(summary)], "figures")


def _config(summary: dict) -> str:
    from verifier.reports.figures import config_rows
    rows = [list(r) for r in config_rows(summary)] + [["command", summary.get("command", "-")],
                                                      ["run id", summary.get("run_id", "-")]]
    return "<h2>Config</h2>" + _table(["setting", "value"], rows, "config")


def _properties(summary: dict) -> str:
    """Every property and its verdict; a fault assumption several rows share is said once, below."""
    rows, notes = [], []
    invariants = summary.get("invariants") or []
    detail = any(inv.get("detail") for inv in invariants)
    for inv in invariants:
        status = inv.get("status", "-")
        cls = "violated" if status == "violated" else ("holds" if status == "holds" else "")
        cex = inv.get("counterexample") or {}
        assumes = inv.get("assumes") or ""
        if assumes and assumes not in notes:
            notes.append(assumes)
        rows.append(f'<tr><td>{escape(inv["name"])}</td><td>{escape(inv.get("kind", "-"))}</td>'
                    f'<td class="{cls}">{escape(status)}</td><td>{escape(str(cex.get("length", "-")))}</td>'
                    f'<td>{f"[{notes.index(assumes) + 1}]" if assumes else "-"}</td>'
                    + (f'<td>{escape(inv.get("detail") or "-")}</td>' if detail else "") + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("property", "kind", "result", "steps", "fault assumption")
                   + (("detail",) if detail else ()))
    foot = "".join(f'<p class="note">[{i}] {escape(n)}</p>' for i, n in enumerate(notes, 1))
    return f'<h2>Properties</h2><table id="properties"><tr>{head}</tr>' + "\n".join(rows) + "</table>" + foot


def _sizes(summary: dict) -> str:
    """prove's verdicts per cluster size and min ISR."""
    from verifier.reports import prove
    if not prove.is_prove(summary):
        return ""
    return "<h2>Per cluster size</h2>" + _table(prove.SIZE_HEAD, prove.size_rows(summary), "sizes")


def _coverage(summary: dict) -> str:
    from verifier.reports.figures import coverage_table
    from verifier.reports.markdown import _NO_COVERAGE, NO_COVERAGE
    head, rows = coverage_table(summary)
    warnings = "".join(f"<li>{escape(w)}</li>" for w in summary.get("warnings") or [])
    body = (_table(head, rows, "coverage") if rows else
            f"<p>No action coverage: {escape(NO_COVERAGE.get(summary.get('engine', ''), _NO_COVERAGE))}</p>")
    return "<h2>Coverage</h2>" + body + (f"<ul>{warnings}</ul>" if warnings else "")


def _levels(summary: dict) -> str:
    levels = (summary.get("counts") or {}).get("states_per_level") or []
    if not levels:
        return ""
    width, height, top = max(16 * len(levels), 200), 160, max(levels) or 1
    bars = []
    for i, n in enumerate(levels):
        h = max(1, round(130 * n / top)) if n else 0
        bars.append(f'<rect class="level" x="{i * 16 + 2}" y="{140 - h}" width="12" height="{h}" fill="#4a7ab5">'
                    f'<title>depth {i}: {n:,} states</title></rect>'
                    f'<text x="{i * 16 + 8}" y="154" text-anchor="middle">{i}</text>')
    return (f"<h2>States per BFS level</h2><svg id=\"levels\" width=\"{width}\" height=\"{height}\" "
            f"role=\"img\" aria-label=\"states per level\">{''.join(bars)}</svg>"
            f"<p>peak {top:,} states; {sum(levels):,} in all</p>")


def _timeline(cex: dict, index: int) -> str:
    """Rows are steps; the partition's columns (the controller's record and the request in
    flight), then each broker's; a changed cell marked, the breaking step outlined."""
    steps = cex.get("timeline") or []
    if not steps:
        return ""
    brokers = list(steps[0]["brokers"])
    fields = list(steps[0].get("partition") or {})
    groups = ([("partition", fields)] if fields else []) + [(b, list(COLUMNS)) for b in brokers]
    head = ("<tr><th rowspan=2>#</th><th rowspan=2>action</th>"
            + "".join(f'<th colspan="{len(cols)}">{escape(g)}</th>' for g, cols in groups) + "</tr><tr>"
            + "".join(f"<th>{escape(c.replace('_', ' '))}</th>" for _, cols in groups for c in cols) + "</tr>")
    rows = []
    for k, step in enumerate(steps):
        breaking = k == len(steps) - 1 and k > 0
        cells = []
        for g, cols in groups:
            values = step.get("partition", {}) if g == "partition" else step["brokers"][g]
            for c in cols:
                changed = f"{g}.{c}" in step.get("changed", [])
                cells.append(f'<td class="{"changed" if changed else ""}">{escape(values.get(c, ""))}</td>')
        rows.append(f'<tr class="step{" breaking" if breaking else ""}"><td>{step["step"]}</td>'
                    f'<td>{escape(step["action"])}</td>{"".join(cells)}</tr>')
    return f'<table class="timeline" id="timeline-{index}">{head}' + "\n".join(rows) + "</table>"


def _counterexamples(summary: dict) -> str:
    out = []
    for i, (name, cex) in enumerate((summary.get("counterexamples") or {}).items()):
        why = "".join(f'<p class="why"><b>Why {escape(n)} fails:</b> {escape(t)}</p>'
                      for n, t in (cex.get("why") or {}).items() if t)
        where = f"{summary['report_dir']}/{cex['scenario']}" if summary.get("report_dir") else cex.get("scenario")
        files = f"<p>replay: <code>kraft-verify replay {escape(where)}</code></p>" if cex.get("scenario") else ""
        out.append(f'<section class="counterexample" data-invariant="{escape(name)}"><h3>{escape(name)}: '
                   f'{cex.get("length", "?")} steps</h3>{why}{_timeline(cex, i)}{files}</section>')
    return ("<h2>Counterexamples</h2>" + "".join(out)) if out else ""


def render_report_html(summary: dict) -> str:
    title = f"kraft-verify {summary.get('engine', '?')}: {summary.get('run_id', '')}"
    if summary.get("engine") == "conform":      # its own figures, not a search's (verifier/reports/conform.py)
        from verifier.reports.conform import html_parts
        return page(title, [*html_parts(summary), _properties(summary), _config(summary)], CSS)
    if summary.get("engine") == "cluster-conform":      # what the real cluster did, first (cluster.py)
        from verifier.reports.cluster import html_parts
        title = f"kraft-verify cluster-conform: a real Kafka {(summary.get('details') or {}).get('kafka', '?')} cluster"
        return page(title, [*html_parts(summary), _properties(summary), _config(summary)], CSS)
    return page(title, [_verdict(summary), _run(summary), _properties(summary), _sizes(summary),
                        _counterexamples(summary), _levels(summary), _coverage(summary), _config(summary)], CSS)


def write_report_html(summary: dict, path: PathLike) -> None:
    write_atomic(path, render_report_html(summary))
