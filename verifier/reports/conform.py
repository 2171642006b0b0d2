"""report.md and report.html of a conform run: its own figures, not a search's.

A conform run searches no state space, so the search report's tables (distinct states, BFS
levels, action coverage by new states) would be empty. Its reader wants the release compared
with, what was compared (per action: steps compared, of them in walks and answered with an
error, or why none was), the errors Kafka and the model answered, the scenario files, and the
divergence with the model's and Kafka's values side by side. Both views read only the summary
(`details`, docs/summary.md), like every report.
"""
from __future__ import annotations

from html import escape

from verifier.reports.page import table
from verifier.reports.text import kv, scalar


def verdict(summary: dict) -> str:
    """One line: agrees, diverges, not complete (an action some state enables that the walks
    never compared) or stopped."""
    d = summary.get("details") or {}
    release = f"Kafka {d.get('kafka', '?')}"
    if d.get("divergence"):
        return f"DIVERGES from {release}"
    coverage = next((v for v in summary.get("invariants") or [] if v.get("kind") == "coverage"), None)
    if coverage and coverage.get("detail"):
        return f"NOT COMPLETE against {release} (exit 3, not a pass): {coverage['detail']}"
    if summary.get("result") == "stopped":
        return f"STOPPED ({summary.get('stop_reason') or 'no reason given'})"
    return f"agrees with {release}"


def figures(summary: dict) -> list[tuple[str, str]]:
    """The run's own figures, as (what, value) rows."""
    d, c = summary.get("details") or {}, summary.get("counts") or {}
    w = d.get("walks") or {}
    rows = [("Kafka release", d.get("kafka", "-")), ("rules read from", d.get("read", "-")),
            ("model preset", d.get("model_preset", "-")),
            ("traces compared", f"{c.get('samples', 0):,} ({c.get('scenario_files', 0)} scenario files, "
                                f"{c.get('walks', 0):,} walks)"),
            ("steps compared", f"{c.get('steps_compared', 0):,} ({c.get('walk_steps', 0):,} in walks)"),
            ("seconds", f"{c.get('seconds', 0):.1f} ({c.get('steps_per_second', 0):,} steps/s)")]
    if w.get("walks"):
        rows += [("walk set", w.get("bound_set") or "(the config given)"),
                 ("walks", f"depth {w.get('depth')}, seed {w.get('seed')}, refused requests per walk "
                           f"{w.get('refusals_per_walk', 0)}, weights {kv(w.get('weights'))}")]
    return rows


def action_rows(summary: dict) -> list[list[str]]:
    return [[r["action"], f"{r['compared']:,}", f"{r['walks']:,}", f"{r['with_error']:,}",
             r["status"] + (f" ({r['why']})" if r.get("why") else "")]
            for r in (summary.get("details") or {}).get("actions") or []]


ACTION_HEAD = ["action", "steps compared", "in walks", "answered with an error", "status"]


def error_rows(summary: dict) -> list[list[str]]:
    return [[e, f"{n:,}"] for e, n in ((summary.get("details") or {}).get("errors_seen") or {}).items()]


def file_rows(summary: dict) -> list[list[str]]:
    d = summary.get("details") or {}
    rows = [[f["path"], str(f["steps"]), f.get("cut_short") or "-", ", ".join(f["model_violates"] or []) or "-"]
            for f in d.get("files") or []]
    return rows + [[n["path"], "not applicable", n["why"], "-"] for n in d.get("not_applicable") or []]


FILE_HEAD = ["scenario file", "steps", "model stops early / why not", "model violates"]


def divergence_rows(summary: dict) -> list[list[str]]:
    div = (summary.get("details") or {}).get("divergence") or {}
    return [[f["field"], scalar(f["model"]), scalar(f["kafka"])] for f in div.get("fields") or []]


CODE_HEAD = ["method", "first line", "lines reached", "branches reached"]
MISSED_HEAD = ["line", "method", "branches never taken", "source", "why never taken"]


def _pct(pair) -> str:
    covered, total = pair
    return f"{covered:,} of {total:,} ({100 * covered / total:.0f}%)" if total else "none"


def code_rows(summary: dict) -> list[list[str]]:
    """Per method in scope of Kafka's controller code: what the comparisons reached (JaCoCo)."""
    c = (summary.get("details") or {}).get("kafka_coverage") or {}
    return [[f"{m['class']}.{m['method']}", str(m["line"]), _pct(m["lines"]), _pct(m["branches"])]
            for m in c.get("methods") or []]


def missed_rows(summary: dict) -> list[list[str]]:
    c = (summary.get("details") or {}).get("kafka_coverage") or {}
    return [[f"{x['file']}:{x['line']}", x["method"], f"{x['missed']} of {x['branches']}",
             x.get("text") or "(no source text: no -sources jar, and the method differs from the reference's)",
             f"{x['kind']}: {x['why']}" if x.get("why") else "no reason yet (a walk set to add, or one to write)"]
            for x in c.get("missed") or []]


def code_caption(summary: dict) -> str:
    c = (summary.get("details") or {}).get("kafka_coverage") or {}
    said = c.get("unreached") or {}
    borrowed = (f" Kafka {c.get('release')} has no -sources jar: a line's text is {c['text_from']}'s, where the "
                f"method is the same." if c.get("text_from") else "")
    return (f"Kafka {c.get('release')}'s controller methods in scope, run under JaCoCo {c.get('jacoco')} while "
            f"this run compared: lines {_pct(c.get('lines') or [0, 0])}, branches {_pct(c.get('branches') or [0, 0])}. "
            f"A branch never taken is one no compared step drove Kafka's code through: "
            f"{said.get('with_a_reason', 0):,} of them have a reason (verifier/engines/conform/unreached.toml), "
            f"{said.get('without', 0):,} none yet.{borrowed}")


def markdown(summary: dict, md_table, config_lines, invariant_lines) -> list[str]:
    """The whole report.md of a conform run (the table, config and property helpers are
    markdown.py's)."""
    out = [f"# kraft-verify conform: {verdict(summary)}", ""]
    out += ["## Release and run", ""] + md_table(["", "value"], figures(summary)) + [""]
    out += ["## Steps compared per action", ""] + md_table(ACTION_HEAD, action_rows(summary)) + [""]
    out += ["## Errors answered", ""] + (md_table(["error", "steps"], error_rows(summary)) if error_rows(summary)
                                         else ["No error: every step compared was accepted."]) + [""]
    if file_rows(summary):
        out += ["## Scenario files", ""] + md_table(FILE_HEAD, file_rows(summary)) + [""]
    div = (summary.get("details") or {}).get("divergence")
    if div:
        out += ["## Divergence", "", div["summary"], ""]
        out += md_table(["field", "model", "Kafka"], divergence_rows(summary))
        out += ["", f"Kafka wrote: {', '.join(div.get('kafka_records') or []) or 'nothing'}.", "",
                "Shrunk steps: " + "; ".join(f"{i}. {s}" for i, s in enumerate(div.get("steps") or [], 1)), "",
                f"Replay scenario: `{div.get('scenario')}` (found from {div.get('found_from')}).", ""]
    if code_rows(summary):
        out += ["## Kafka's controller code reached", "", code_caption(summary), ""]
        out += md_table(CODE_HEAD, code_rows(summary)) + [""]
        out += ["### Branches never taken", ""] + (md_table(MISSED_HEAD, missed_rows(summary)) if missed_rows(summary)
                                                   else ["None."]) + [""]
    out += invariant_lines(summary)
    out += ["## Warnings", ""] + ([f"- {w}" for w in summary.get("warnings") or []] or ["None."]) + [""]
    return out + config_lines(summary)


def html_parts(summary: dict) -> list[str]:
    """The conform sections of report.html, after its verdict and before its config."""
    result = summary.get("result", "?")
    errors = (table(["error", "steps"], error_rows(summary), "errors", "errors") if error_rows(summary)
              else "<p>No error: every step compared was accepted.</p>")
    parts = [f'<p id="verdict" class="verdict {escape(result)}">{escape(verdict(summary))} '
             f'(exit code {escape(str(summary.get("exit_code", "?")))})</p>',
             "<h2>Release and run</h2>" + table(["", "value"], figures(summary), "figures", row_heads=True),
             "<h2>Steps compared per action</h2>" + table(ACTION_HEAD, action_rows(summary), "actions", "actions"),
             "<h2>Errors answered</h2>" + errors]
    if file_rows(summary):
        parts.append("<h2>Scenario files</h2>" + table(FILE_HEAD, file_rows(summary), "files"))
    div = (summary.get("details") or {}).get("divergence")
    if div:
        parts.append(f'<h2>Divergence</h2><p class="why">{escape(div["summary"])}</p>'
                     + table(["field", "model", "Kafka"], divergence_rows(summary), "divergence", "divergence")
                     + f"<p>Kafka wrote: {escape(', '.join(div.get('kafka_records') or []) or 'nothing')}</p>"
                     + "<ol>" + "".join(f"<li>{escape(s)}</li>" for s in div.get("steps") or []) + "</ol>")
    if code_rows(summary):
        parts.append(f"<h2>Kafka's controller code reached</h2><p>{escape(code_caption(summary))}</p>"
                     + table(CODE_HEAD, code_rows(summary), "kafka-code", "kafka-code")
                     + "<h3>Branches never taken</h3>" + table(MISSED_HEAD, missed_rows(summary), "kafka-missed", "kafka-missed"))
    warnings = "".join(f"<li>{escape(w)}</li>" for w in summary.get("warnings") or [])
    return parts + ([f"<h2>Warnings</h2><ul>{warnings}</ul>"] if warnings else [])
