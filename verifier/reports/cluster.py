"""report.html and report.md of a cluster-conform run: what the real cluster did, first.

A cluster-conform page headed by a green "all checked properties hold" told a Kafka engineer
nothing of the acknowledged record a real 4.0.2 cluster had just lost. Its reader wants, in
this order: whether the cluster agreed with the model at every driven step (or where it
diverged), whether Kafka lost acknowledged data (which records, what a consumer reads), which
property the run breaks and after which step, then each driven step beside the state the
cluster and the model reached (they agree, or the divergence says where not). Agreement and
data loss are separate lines, and a run that loses acknowledged data is never under a green
banner: agreeing with a model that predicts the loss shows the loss is real. Both views read
only the summary (`details.cases`, docs/summary.md).
"""
from __future__ import annotations

from html import escape

from verifier.reports.page import table

PARTITION = ("leader", "leader_epoch", "partition_epoch", "isr", "elr", "last_known_elr", "min_isr", "in_flight",
             "recovery")


def _cases(summary: dict) -> list[dict]:
    return (summary.get("details") or {}).get("cases") or []


def lines(summary: dict) -> tuple[str, list[tuple[str, str]]]:
    """(the banner's class, [(id, sentence)]): agreement, data, properties."""
    d = summary.get("details") or {}
    release = f"a real Kafka {d.get('kafka', '?')} cluster"
    cases = _cases(summary)
    steps = sum(len(c["steps"]) for c in cases)
    diverged = [c for c in cases if c.get("divergence")]
    lost = [(c["name"], c["acknowledged_lost"], c.get("consumer_reads")) for c in cases if c.get("acknowledged_lost")]
    broken = [(c["name"], c["model_violates"]) for c in cases if c.get("model_violates")]
    if diverged:
        dv = diverged[0]["divergence"]
        agreement = f"DIVERGES from {release} at step {dv.get('step')} ({dv.get('label')}) of {diverged[0]['name']}"
    elif summary.get("result") == "stopped":
        agreement = f"NOT COMPLETE: {summary.get('stop_reason') or 'stopped'}; {steps} driven steps agreed before"
    elif not steps:
        agreement = "nothing was driven: " + "; ".join(c.get("not_drivable") or "no step" for c in cases)
    else:
        agreement = f"agrees with the model at every one of its {steps} driven steps on {release}"
    data = ("; ".join(f"Kafka LOST acknowledged {', '.join(recs)} on {release} ({name}): no replica holds "
                      f"{'it' if len(recs) == 1 else 'them'}; a consumer reads "
                      f"{', '.join(reads) if reads else 'nothing'}" for name, recs, reads in lost)
            if lost else "no acknowledged record was lost" + (
                f" (kept: {', '.join(r for c in cases for r in c.get('acknowledged_kept') or [])})"
                if any(c.get("acknowledged_kept") for c in cases) else ""))
    props = ("; ".join(f"the model breaks " + ", ".join(f"{p} after step {k}" for p, k in
                                                        sorted(v.items(), key=lambda kv: (kv[1], kv[0])))
                       + (f" ({name})" if len(cases) > 1 else "") for name, v in broken)
             if broken else "the model breaks no property on the way")
    cls = "violation" if diverged or lost else "stopped" if summary.get("result") == "stopped" or broken else "ok"
    return cls, [("agreement", agreement), ("data", data), ("properties", props)]


def _prefixes(case: dict) -> list[str]:
    """How the step cells name a partition's fields: "" with one partition, "p0.", "p1."... with
    several (the lifted model's cells, specs/partitions_view.py)."""
    cells = (case["steps"][0].get("partition") or {}) if case["steps"] else {}
    return sorted({k.split(".", 1)[0] + "." for k in cells if k[:1] == "p" and k[1:2].isdigit() and "." in k}) or [""]


def step_rows(case: dict) -> tuple[list[str], list[list[str]]]:
    """One row per driven step: what was driven, what the cluster did on its own, the records
    Kafka wrote, and the state the cluster and the model reached (each partition's, with several)."""
    brokers = list((case["steps"][0].get("brokers") or {}) if case["steps"] else [])
    pre = _prefixes(case)
    fields = [x + f for x in pre for f in PARTITION]
    head = (["#", "driven step", "taken by the cluster on its own", "Kafka wrote"]
            + [f.replace("_", " ") for f in fields]
            + [f"{b}: status, log, HWM" + (" (per partition)" if pre != [""] else "") for b in brokers]
            + ["acknowledged"])
    rows = []
    for s in case["steps"]:
        p, bs = s.get("partition") or {}, s.get("brokers") or {}
        rows.append([str(s["index"]), s["step"] + ("" if s.get("taken", True) else " (not taken: the cluster's "
                                                                                      "own steps did it)"),
                     ", ".join(s.get("taken_by_the_cluster") or []) or "-",
                     "; ".join(", ".join(batch) for batch in s.get("kafka_records") or []) or "nothing",
                     *[p.get(f, "-") for f in fields],
                     *[_broker(bs[b], pre) if b in bs else "-" for b in brokers],
                     ", ".join(s.get("acknowledged") or []) or "none"])
    return head, rows


def _broker(cells: dict, pre: list[str]) -> str:
    """A broker's process, then its role, log and HWM in each partition."""
    each = [f"{cells.get(x + 'role', '')}, {cells.get(x + 'log', '')}, hwm {cells.get(x + 'hwm', '')}" for x in pre]
    if pre == [""]:
        return f"{cells.get('status', '')}, {each[0]}"
    return "; ".join([cells.get("status", "")] + [f"{x[:-1]}: {e}" for x, e in zip(pre, each)])


def html_parts(summary: dict) -> list[str]:
    """The cluster-conform sections of report.html, before its properties and config."""
    cls, said = lines(summary)
    d, c = summary.get("details") or {}, summary.get("counts") or {}
    lost = "LOST" in said[1][1]
    parts = [f'<p id="verdict" class="verdict {cls}">{escape(said[0][1])}'
             + ("; and Kafka LOST acknowledged data (below)" if lost else "")
             + f' (exit code {escape(str(summary.get("exit_code", "?")))})</p>']
    parts += [f'<p id="{ident}" class="{"loss" if ident == "data" and "LOST" in text else "line"}">'
              f'{escape(text)}</p>' for ident, text in said[1:]]
    figures = [("Kafka release", d.get("kafka", "-")), ("model preset", d.get("model_preset", "-")),
               ("cases", str(len(_cases(summary)))),
               ("steps compared", f"{c.get('steps_compared', sum(len(x['steps']) for x in _cases(summary))):,}"),
               ("seconds", f"{c.get('seconds', 0):.1f}")]
    parts.append("<h2>Release and run</h2>" + table(["", "value"], figures, "figures", row_heads=True))
    driven, own = d.get("steps_per_action") or {}, d.get("taken_by_the_cluster_per_action") or {}
    if driven or own:
        parts.append("<h2>Steps compared per action</h2>" + table(
            ["action", "driven by the harness", "taken by the cluster on its own"],
            [[a, f"{driven.get(a, 0):,}", f"{own.get(a, 0):,}"] for a in sorted(set(driven) | set(own))], "actions"))
    for i, case in enumerate(_cases(summary)):
        facts = [f"not drivable: {case['not_drivable']}"] if case.get("not_drivable") else []
        facts += [f"skipped (the cluster took them on its own): {', '.join(case['skipped'])}"] if case.get("skipped") else []
        facts += [f"the model stops at {case['model_stops_at']}"] if case.get("model_stops_at") else []
        facts += [f"cluster start {case.get('setup_seconds', 0):.0f} s, the case {case.get('seconds', 0):.0f} s"]
        head, rows = step_rows(case)
        body = (table(head, rows, "steps", f"steps-{i}") if rows else
                "<p>No step was driven: " + escape(case.get("not_drivable") or "the case has none") + ".</p>")
        parts.append(f'<section class="case"><h2>{escape(case["name"])}</h2><ul>'
                     + "".join(f"<li>{escape(f)}</li>" for f in facts) + "</ul>" + body + "</section>")
    if d.get("error"):
        parts.append(f'<p class="why">error: {escape(d["error"])}</p>')
    warnings = "".join(f"<li>{escape(w)}</li>" for w in summary.get("warnings") or [])
    return parts + ([f"<h2>Warnings</h2><ul>{warnings}</ul>"] if warnings else [])


def markdown(summary: dict, md_table) -> list[str]:
    """The same, as report.md's first sections."""
    cls, said = lines(summary)
    out = [f"# kraft-verify cluster-conform: {said[0][1]}", ""] + [f"- {text}" for _, text in said[1:]] + [""]
    for case in _cases(summary):
        head, rows = step_rows(case)
        out += [f"## {case['name']}", ""] + (md_table(head, rows) if rows else
                                            [f"No step was driven: {case.get('not_drivable') or 'none'}."]) + [""]
    return out
