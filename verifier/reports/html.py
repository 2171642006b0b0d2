"""report.html: one self-contained page per run (no scripts, fonts or images from the network),
read only from the summary, like report.md: the verdict, the config, every property with its
fault assumption, coverage, states per BFS level as a bar chart, and each counterexample as a
per-broker timeline (rows are steps; per broker its role, ISR/ELR membership, status, log and
HWM; changed cells and the breaking step highlighted)."""
from __future__ import annotations

from html import escape
from typing import Any

from verifier.core.files import PathLike, write_atomic
from verifier.reports.page import page, table
from verifier.reports.text import scalar

CSS = """
.verdict{font-size:1.3em;padding:.5em 1em;display:inline-block;border-radius:4px}
.ok{background:#d9f2d9}.violation{background:#f8d0d0}.stopped{background:#fbeec0}
.violated{color:#b00;font-weight:bold}.holds{color:#070}
td.changed{background:#fff3b0}
tr.breaking td{border-top:2px solid #b00;border-bottom:2px solid #b00}
tr.breaking td.changed{background:#f8c0c0}
.why{background:#fdf1f1;border-left:4px solid #b00;padding:.5em 1em}
svg text{font-size:10px}
"""
COLUMNS = ("role", "member", "status", "log", "hwm")


def _table(head: list[str], rows: list[list[Any]], cls: str = "") -> str:
    return table(head, ([scalar(v) for v in row] for row in rows), cls)


def _verdict(summary: dict) -> str:
    result = summary.get("result", "?")
    word = {"ok": "all checked properties hold", "violation": "a property is violated",
            "stopped": "NOT COMPLETE: " + (summary.get("stop_reason") or "stopped before completion")
            }.get(result, result)
    return (f'<p id="verdict" class="verdict {escape(result)}">{escape(word)} '
            f'(exit code {escape(str(summary.get("exit_code", "?")))})</p>')


def _config(summary: dict) -> str:
    from verifier.reports import prove
    cfg = dict(summary.get("config") or {})
    if prove.is_prove(summary):          # what prove covered, in place of the bounds it does not use
        cfg.pop("bounds", None)
        cfg.update(prove.scope(summary))
    rows = [[k, v] for k, v in cfg.items()] + [["command", summary.get("command", "-")],
                                               ["run id", summary.get("run_id", "-")]]
    return "<h2>Config</h2>" + _table(["setting", "value"], rows, "config")


def _properties(summary: dict) -> str:
    rows = []
    invariants = summary.get("invariants") or []
    detail = any(inv.get("detail") for inv in invariants)
    for inv in invariants:
        status = inv.get("status", "-")
        cls = "violated" if status == "violated" else ("holds" if status == "holds" else "")
        cex = inv.get("counterexample") or {}
        rows.append(f'<tr><td>{escape(inv["name"])}</td><td>{escape(inv.get("kind", "-"))}</td>'
                    f'<td class="{cls}">{escape(status)}</td><td>{escape(str(cex.get("length", "-")))}</td>'
                    f'<td>{escape(inv.get("assumes") or "-")}</td>'
                    + (f'<td>{escape(inv.get("detail") or "-")}</td>' if detail else "") + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("property", "kind", "result", "steps", "fault assumption")
                   + (("detail",) if detail else ()))
    return f'<h2>Properties</h2><table id="properties"><tr>{head}</tr>' + "\n".join(rows) + "</table>"


def _sizes(summary: dict) -> str:
    """prove's verdicts per cluster size and min ISR."""
    from verifier.reports import prove
    if not prove.is_prove(summary):
        return ""
    return "<h2>Per cluster size</h2>" + _table(prove.SIZE_HEAD, prove.size_rows(summary), "sizes")


def _coverage(summary: dict) -> str:
    rows = [[c["action"], c.get("enabled", "-"), c.get("new_states", "-"),
             c.get("status", "-") + (f" ({c['reason']})" if c.get("reason") else "")]
            for c in summary.get("coverage") or []]
    from verifier.reports.markdown import _NO_COVERAGE, NO_COVERAGE
    warnings = "".join(f"<li>{escape(w)}</li>" for w in summary.get("warnings") or [])
    body = (_table(["action", "enabled", "new states", "status"], rows, "coverage") if rows else
            f"<p>None: {escape(NO_COVERAGE.get(summary.get('engine', ''), _NO_COVERAGE))}</p>")
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
    steps = cex.get("timeline") or []
    if not steps:
        return ""
    brokers = list(steps[0]["brokers"])
    head = ("<tr><th rowspan=2>#</th><th rowspan=2>action</th>"
            + "".join(f'<th colspan="{len(COLUMNS)}">{escape(b)}</th>' for b in brokers) + "</tr><tr>"
            + "".join(f"<th>{c}</th>" for _ in brokers for c in COLUMNS) + "</tr>")
    rows = []
    for k, step in enumerate(steps):
        breaking = k == len(steps) - 1 and k > 0
        cells = []
        for b in brokers:
            for c in COLUMNS:
                changed = f"{b}.{c}" in step.get("changed", [])
                cells.append(f'<td class="{"changed" if changed else ""}">{escape(step["brokers"][b].get(c, ""))}</td>')
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
    return page(title, [_verdict(summary), _properties(summary), _sizes(summary), _counterexamples(summary),
                        _levels(summary), _coverage(summary), _config(summary)], CSS)


def write_report_html(summary: dict, path: PathLike) -> None:
    write_atomic(path, render_report_html(summary))
