"""The availability measurement as a reader sees it: the table (terminal, report.md) and one
self-contained HTML page with inline SVG charts (no script, no network) that a design document
can embed. Everything here reads the JSON that verifier/studies/availability.py builds."""
from __future__ import annotations

from html import escape
from typing import Optional

from verifier.reports.page import page, table

COLUMNS = ("variant", "runs", "faults", "leaderless", "outages", "recover median", "p90", "max",
           "never (stuck)", "data loss", "loss in tolerance", "unclean elections")

DEFINITIONS = (
    ("run", "a warm-up in which the healthy cluster runs until a record is acknowledged (not measured), then "
            "a fault phase (every enabled step equally likely, faults included, until the fault budgets are "
            "spent or the fault steps run out), then a healing phase of exactly the heal steps in which no "
            "fault, lagging follower or operator action happens"),
    ("fault", "a fence of a running broker (network partition), a controlled shutdown, a crash keeping the "
              "page cache or a crash losing the unflushed suffix; a stopped broker's session timeout is not one"),
    ("faults", "per variant, the mean number of faults per run"),
    ("leaderless step", "a measured step (fault phase and healing phase) after which the partition has no "
                        "live leader: no leader in the controller's record, or a leader whose process is down"),
    ("leaderless", "per variant, the mean over runs of (leaderless steps / measured steps)"),
    ("outage", "a run whose partition has no live leader right after its last fault"),
    ("recover median, p90, max", "for an outage, the steps from the last fault until the partition has a "
                                 "live leader again, nearest-rank statistics over the outages that recovered"),
    ("never (stuck)", "outages with no live leader until the end of the run; stuck: of those, the runs in which "
                      "no healing step was enabled any more, so that only an operator could elect a leader"),
    ("data loss", "a run in which, after some step, an acknowledged record was missing from the live leader's "
                  "log, or (no live leader) from every replica's log"),
    ("within tolerance", "fewer crashes that lost data of the partition's replicas than the min ISR the "
                         "committed records were promised, and no unclean election an operator chose (the "
                         "controller's own election of its last known leader is none): where KIP-966 promises "
                         "no loss"),
    ("loss in tolerance", "data-loss runs that stayed within tolerance"),
    ("unclean elections", "runs with at least one leader elected from outside the ISR and ELR (unclean "
                          "election, last-known-leader election or recovery round)"),
)


def _pct(part, whole) -> str:
    return "-" if not whole else f"{100 * part / whole:.1f}%"


def _num(x) -> str:
    return "-" if x is None else str(x)


def row(v: dict) -> tuple:
    s = v["summary"]
    r = s["recovery"]
    leaderless = "-" if s["leaderless_fraction"] is None else f"{100 * s['leaderless_fraction']:.1f}%"
    faults = "-" if s["mean_faults"] is None else f"{s['mean_faults']:.2f}"
    return (v["name"] + ("" if v["complete"] else " (partial)"), str(s["runs"]), faults,
            leaderless, str(r["outages"]), _num(r["median"]), _num(r["p90"]), _num(r["max"]),
            f"{r['never']} ({r['never_stuck']})", f"{s['data_loss_runs']} ({_pct(s['data_loss_runs'], s['runs'])})",
            str(s["data_loss_runs_within_tolerance"]), str(s["runs_with_unclean_election"]))


def parameters(rep: dict) -> str:
    bounds = ", ".join(f"{k}={v}" for k, v in rep["bounds"].items())
    return (f"{rep['runs']} runs per variant, seed {rep['seed']}, fault steps {rep['fault_steps']}, "
            f"heal steps {rep['heal_steps']}, replicas {rep['replicas']}, min ISR {rep['min_isr']}; bounds: {bounds}")


def partial_note(rep: dict) -> Optional[str]:
    if not rep["partial"]:
        return None
    done = ", ".join(f"{v['name']} {v['summary']['runs']}" for v in rep["variants"])
    return f"PARTIAL: interrupted before every run finished (runs done: {done})"


def markdown(rep: dict) -> str:
    lines = ["# Availability under random fault schedules", ""]
    note = partial_note(rep)
    if note:
        lines += [f"**{note}**", ""]
    lines += ["```sh", rep["command"], "```", "", parameters(rep), "",
              "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row(v)) + " |" for v in rep["variants"]]
    buckets = list(rep["variants"][0]["summary"]["recovery"]["histogram"]) if rep["variants"] else []
    lines += ["", "## Steps to recover after the last fault (outages)", "",
              "| variant | " + " | ".join(buckets) + " |", "|" + "---|" * (len(buckets) + 1)]
    for v in rep["variants"]:
        hist = v["summary"]["recovery"]["histogram"]
        lines.append(f"| {v['name']} | " + " | ".join(str(hist[b]) for b in buckets) + " |")
    lines += ["", "## Variants", ""]
    lines += [f"- `{v['name']}`: {v['doc']} (config `{v['config']}`)" for v in rep["variants"]]
    lines += ["", "## Definitions", ""]
    lines += [f"- **{term}**: {text}." for term, text in DEFINITIONS]
    lines += ["", "A step is one step of the model, any action: a proxy for time in which every enabled "
              "event is equally likely, not seconds. Runs are seeded: the same command gives the same numbers.", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- HTML and SVG

LABEL_W, BAR_W, ROW_H, FONT = 270, 420, 26, 12
LEADERLESS = "#4c78a8"
BUCKET_COLOURS = ("#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b")
NEVER = "#d62728"
LOSS_BEYOND, LOSS_WITHIN = "#f58518", "#8b0000"


def _chart(title: str, rows: list, scale: float, legend: list, note: str) -> str:
    """Horizontal bars: rows of (label, [(value, colour, tooltip)], text after the bar); `scale` is
    the value that fills the bar width."""
    width = LABEL_W + BAR_W + 280
    items, x, y = [], LABEL_W, 26           # the legend, over the bars, wrapped to the width
    for colour, name in legend:
        w = 24 + int(6.5 * len(name))
        if x + w > width:
            x, y = LABEL_W, y + 20
        items.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{colour}"/>'
                     f'<text x="{x + 16}" y="{y + 10}">{escape(name)}</text>')
        x += w
    top = (y + 26) if legend else 30
    height = top + ROW_H * len(rows) + 30
    out = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="{escape(title)}" font-family="Helvetica, Arial, sans-serif" font-size="{FONT}">',
           f'<text x="0" y="16" font-size="14" font-weight="bold">{escape(title)}</text>'] + items
    for i, (label, segments, after) in enumerate(rows):
        y = top + i * ROW_H
        out.append(f'<text x="{LABEL_W - 8}" y="{y + 16}" text-anchor="end">{escape(label)}</text>')
        x = float(LABEL_W)
        for value, colour, tip in segments:
            w = BAR_W * value / scale if scale else 0.0
            if w > 0:
                out.append(f'<rect x="{x:.1f}" y="{y + 4}" width="{w:.1f}" height="{ROW_H - 8}" fill="{colour}">'
                           f'<title>{escape(tip)}</title></rect>')
            x += w
        out.append(f'<text x="{x + 6:.1f}" y="{y + 16}">{escape(after)}</text>')
    base = top + ROW_H * len(rows)
    out.append(f'<line x1="{LABEL_W}" y1="{top}" x2="{LABEL_W}" y2="{base}" stroke="#333"/>')
    out.append(f'<text x="{LABEL_W}" y="{base + 18}" fill="#555">{escape(note)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def leaderless_chart(rep: dict) -> str:
    rows = []
    for v in rep["variants"]:
        f = v["summary"]["leaderless_fraction"] or 0.0
        rows.append((v["name"], [(f, LEADERLESS, f"{100 * f:.1f}% of steps leaderless")], f"{100 * f:.1f}%"))
    top = max([v["summary"]["leaderless_fraction"] or 0.0 for v in rep["variants"]] + [0.01])
    scale = min(1.0, (int(top * 10) + 1) / 10)
    return _chart("Leaderless steps (mean share of the measured steps)", rows, scale, [],
                  f"bar width: 0 to {100 * scale:.0f}% of the steps")


def recovery_chart(rep: dict) -> str:
    rows, legend = [], []
    for v in rep["variants"]:
        r = v["summary"]["recovery"]
        n = r["outages"]
        segments = []
        for (bucket, count), colour in zip(r["histogram"].items(), BUCKET_COLOURS + (NEVER,)):
            share = count / n if n else 0.0
            segments.append((share, colour, f"{bucket} steps: {count} of {n} outages"))
        after = f"n={n}, median {_num(r['median'])}, p90 {_num(r['p90'])}, never {r['never']}"
        rows.append((v["name"], segments, after))
    if rep["variants"]:
        names = list(rep["variants"][0]["summary"]["recovery"]["histogram"])
        legend = [(c, b if b == "never" else f"{b} step{'' if b == '1' else 's'}")
                  for b, c in zip(names, BUCKET_COLOURS + (NEVER,))]
    return _chart("Steps from the last fault to a live leader (share of outages)", rows, 1.0, legend,
                  "each bar is 100% of the variant's outages; red: never recovered within the run")


def loss_chart(rep: dict) -> str:
    rows = []
    for v in rep["variants"]:
        s = v["summary"]
        n, lost, within = s["runs"], s["data_loss_runs"], s["data_loss_runs_within_tolerance"]
        segments = [(within / n if n else 0.0, LOSS_WITHIN, f"{within} runs lost data within tolerance"),
                    ((lost - within) / n if n else 0.0, LOSS_BEYOND, f"{lost - within} runs lost data beyond it")]
        rows.append((v["name"], segments, f"{_pct(lost, n)} ({lost} of {n})"))
    top = max([s["data_loss_fraction"] or 0.0 for s in (v["summary"] for v in rep["variants"])] + [0.01])
    scale = min(1.0, (int(top * 10) + 1) / 10)
    legend = [(LOSS_WITHIN, "within KIP-966's tolerance"), (LOSS_BEYOND, "beyond it")]
    return _chart("Runs that lost an acknowledged record", rows, scale, legend,
                  f"bar width: 0 to {100 * scale:.0f}% of the runs")


CSS = """
body{font-family:Helvetica,Arial,sans-serif;max-width:1000px}
table{font-size:12px}td,th{text-align:right}td:first-child,th:first-child{text-align:left}
.partial{color:#b00;font-weight:bold}figure{margin:1.5em 0}
"""


def html(rep: dict) -> str:
    note = partial_note(rep)
    defs = "\n".join(f"<li><b>{escape(t)}</b>: {escape(d)}.</li>" for t, d in DEFINITIONS)
    return page("KRaft partition availability under random fault schedules", [
        f'<p class="partial">{escape(note)}</p>' if note else "",
        f'<p><code>{escape(rep["command"])}</code></p>', f"<p>{escape(parameters(rep))}</p>",
        f"<figure>{leaderless_chart(rep)}</figure>", f"<figure>{recovery_chart(rep)}</figure>",
        f"<figure>{loss_chart(rep)}</figure>", table(COLUMNS, (row(v) for v in rep["variants"])),
        f"<h2>Definitions</h2><ul>{defs}<li>A step is one step of the model, any action: a proxy for time in "
        "which every enabled event is equally likely, not seconds.</li></ul>"], CSS)
