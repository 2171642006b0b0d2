"""report.md: what a person opens first after a run, rendered from the summary alone (so a
saved summary.json renders the same report)."""
from __future__ import annotations

from typing import Any, Iterable

from verifier.core.files import PathLike, write_atomic
from verifier.reports.text import kv, scalar


def _md_cell(value: Any) -> str:
    """A table cell: `|` would split the cell and a newline would end the row."""
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _md_table(header: list[str], body: Iterable[Iterable[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in body]
    return out


def _md_title(summary: dict) -> str:
    result = summary.get("result")
    from verifier.reports.figures import sampled
    if result == "ok" and sampled(summary):
        text = sampled(summary)
    elif result == "ok":
        text = "all invariants hold"
    elif result == "violation":
        text = "VIOLATION of " + (", ".join(summary.get("violated") or []) or "an invariant")
    else:
        text = f"STOPPED before completion ({summary.get('stop_reason') or 'no reason given'})"
    return f"# kraft-verify {summary.get('engine', '?')}: {text}"


def _md_config(summary: dict) -> list[str]:
    """Every config key as the model recorded it (the full rule set is in summary.json); for
    prove, what it covered in place of the search bounds it does not use."""
    from verifier.reports import prove
    lines = ["## Configuration", ""]
    config = dict(summary.get("config", {}))
    if prove.is_prove(summary):
        config.pop("bounds", None)
        config.update(prove.scope(summary))
    for key, value in config.items():
        if key != "rules":
            if isinstance(value, dict):
                value = kv(value)
            lines.append(f"- {key}: " + (f"`{value}`" if isinstance(value, str) and key in ("preset", "mutant")
                                        else value if isinstance(value, str) else scalar(value)))
    return lines + [
            f"- command: `{summary['command']}`" if summary.get("command") else "- command: -",
            f"- run id: `{summary.get('run_id', '-')}`",
            f"- exit code: {summary.get('exit_code', '-')}", ""]


def _md_counts(summary: dict) -> list[str]:
    """The run's figures (verifier/reports/figures.py: the same as report.html's)."""
    from verifier.reports.figures import run_rows
    return ["## Counts", ""] + _md_table(["metric", "value"], run_rows(summary)) + [""]


def _md_invariants(summary: dict) -> list[str]:
    rows = summary.get("invariants", [])
    detail = any(i.get("detail") for i in rows)
    body = [(i["name"], i.get("kind", "-"), i.get("status", "-"), i.get("assumes") or "-")
            + ((i.get("detail") or "-",) if detail else ()) for i in rows]
    head = ["invariant", "kind", "result", "fault assumption"] + (["detail"] if detail else [])
    return ["## Invariants", ""] + _md_table(head, body) + [""]


def _md_sizes(summary: dict) -> list[str]:
    """prove's verdicts per cluster size and min ISR."""
    from verifier.reports import prove
    if not prove.is_prove(summary):
        return []
    return ["## Per cluster size", ""] + _md_table(prove.SIZE_HEAD, prove.size_rows(summary)) + [""]


def _md_levels(summary: dict) -> list[str]:
    levels = summary.get("counts", {}).get("states_per_level") or []
    if not levels:
        return []
    line = ", ".join(f"{d}:{n}" for d, n in enumerate(levels))
    return ["## States per BFS level", "", f"`{line}` (depth:new states)", ""]


def _md_coverage(summary: dict) -> list[str]:
    from verifier.reports.figures import coverage_table
    head, body = coverage_table(summary)
    out = ["## Action coverage", ""] + (_md_table(head, body) if body else
                                        [f"No action coverage: {NO_COVERAGE.get(summary.get('engine', ''), _NO_COVERAGE)}"])
    warnings = summary.get("warnings") or []
    out += ["", "### Warnings", ""] + ([f"- {w}" for w in warnings] or ["None."]) + [""]
    return out


_NO_COVERAGE = "this engine does not count the actions it takes"
NO_COVERAGE = {"z3": "z3 enumerates no states: induction covers every state of each size, every action at once "
                     "(the self-check compared each controller action with the concrete model first)"}


def _md_counterexamples(summary: dict) -> list[str]:
    """Every violated invariant's own counterexample, first found first."""
    out: list[str] = []
    seen = set()
    for cex in [summary.get("counterexample")] + list((summary.get("counterexamples") or {}).values()):
        if not cex or id(cex) in seen or not cex.get("rows"):
            continue
        seen.add(id(cex))
        out += [f"## Counterexample: {', '.join(cex.get('violated') or []) or '(nothing recorded)'}", "",
                f"{cex['length']} steps.", ""]
        out += _md_table(["#", "action", "what changed"], [tuple(r) for r in cex["rows"]])
        out += [""] + [f"Why {name} fails: {text}" for name, text in (cex.get("why") or {}).items() if text]
        files = [f"replay scenario `{cex['scenario']}`" if cex.get("scenario") else "",
                 f"ITF trace `{cex['itf']}`" if cex.get("itf") else ""]
        files = [f for f in files if f]
        out += (["", "Files: " + ", ".join(files) + "."] if files else []) + [""]
    return out


def _md_mutants(summary: dict) -> list[str]:
    if "mutants" not in summary:
        return []
    body = [(r["mutant"], r["rule"], r["status"], ", ".join(r.get("killed_by") or []) or "-",
             r.get("length") if r.get("length") is not None else "-") for r in summary["mutants"]]
    return ["## Mutants", ""] + _md_table(["mutant", "broken rule", "status", "killed by", "steps"], body) + [""]


def render_report_md(summary: dict) -> str:
    """The whole report as a string (write_report_md saves it); it reads only the summary. A
    conform run has its own figures instead of a search's (verifier/reports/conform.py)."""
    if summary.get("engine") == "conform":
        from verifier.reports.conform import markdown
        lines = markdown(summary, _md_table, _md_config, _md_invariants)
        return "\n".join(lines).rstrip("\n") + "\n"
    if summary.get("engine") == "cluster-conform":          # what the real cluster did, first
        from verifier.reports.cluster import markdown as cluster_md
        parts = [cluster_md(summary, _md_table), _md_invariants(summary), _md_config(summary)]
        return "\n".join(line for part in parts for line in part).rstrip("\n") + "\n"
    parts = [[_md_title(summary), ""], _md_config(summary), _md_counts(summary),
             _md_invariants(summary), _md_sizes(summary), _md_mutants(summary), _md_levels(summary),
             _md_coverage(summary),
             _md_counterexamples(summary)]
    return "\n".join(line for part in parts for line in part).rstrip("\n") + "\n"


def write_report_md(summary: dict, path: PathLike) -> None:
    """report.md: what a person opens first after a run."""
    write_atomic(path, render_report_md(summary))
