"""What every report page says about its run, the same in report.md and report.html: the run's
figures (engine, states, transitions, depth, time, compile time, memory, samples), the config as
settings (presets, rules, bounds, brokers: never a Python dict), the coverage table in the
engine's own terms, and whether the run is a sample (no proof), read only from the summary."""
from __future__ import annotations

from typing import Optional

from verifier.reports.text import scalar, symmetry_text

SAMPLED = "not violated in sampled runs"
# what a sampled engine's samples are, in words
SAMPLES = {"fuzz": "examples (Hypothesis)", "simulate": "random walks", "kernel-simulate": "random walks",
           "cluster-conform": "traces on a real cluster", "conform": "traces through Kafka's controller"}


def sampled(summary: dict) -> Optional[str]:
    """'183 examples (Hypothesis) and no violation: a sample, not a proof', for a run that
    sampled and found nothing; else None."""
    if summary.get("result") != "ok" or not any(i.get("status") == SAMPLED for i in summary.get("invariants") or []):
        return None
    c = summary.get("counts") or {}
    n = c.get("samples", c.get("terminal_states"))
    what = SAMPLES.get(summary.get("engine", ""), "sampled runs")
    return f"{n:,} {what} and no violation: a sample, not a proof" if isinstance(n, int) else \
        f"no violation in {what}: a sample, not a proof"


def run_rows(summary: dict) -> list[tuple[str, str]]:
    """The run's figures, as (what, value), only those the engine measured."""
    c, m = summary.get("counts") or {}, summary.get("memory") or {}
    rows = [("engine", str(summary.get("engine", "-")) + (f", {c['workers']} thread{'s' if c['workers'] > 1 else ''}"
                                                         if c.get("workers") else ""))]
    for key, what in (("samples", SAMPLES.get(summary.get("engine", ""), "samples")), ("distinct_states",
                      "distinct states"), ("transitions", "transitions"), ("steps", "steps"),
                      ("steps_compared", "steps compared"), ("depth", "depth"), ("terminal_states", "terminal states"),
                      ("sizes", "cluster sizes"), ("records", "metadata records"), ("batches", "record batches"),
                      ("partitions", "partitions")):
        if isinstance(c.get(key), int):
            rows.append((what, f"{c[key]:,}"))
    if "seconds" in c:
        rows.append(("seconds", f"{c['seconds']:.2f}"))
    for key, what in (("states_per_second", "states/s"), ("examples_per_second", "examples/s"),
                      ("steps_per_second", "steps/s"), ("records_per_second", "records/s")):
        if c.get(key):
            rows.append((what, f"{c[key]:,.0f}"))
    if c.get("compile_seconds"):
        rows.append(("compiling the kernel (s, not in seconds or states/s)", f"{c['compile_seconds']:.1f}"))
    rows += memory_rows(m)
    fp = summary.get("fingerprint") or {}
    if "collision_probability" in fp:
        rows.append((f"fingerprint collision probability ({fp.get('bits', '?')}-bit)",
                     f"{fp['collision_probability']:.3g}"))
    if summary.get("symmetry"):
        rows.append(("symmetry", symmetry_text(summary["symmetry"])))
    dl = summary.get("deadlock") or {}
    if dl:
        rows.append(("deadlock", "not checked" if not dl.get("checked") else "found" if dl.get("found") else
                     "none" if dl.get("complete", summary.get("result") == "ok") else "not checked to completion"))
    return rows


def memory_rows(m: dict) -> list[tuple[str, str]]:
    """Bytes a state, resident at the peak and on disk (checkpoint), where the run measured them."""
    if not m.get("peak_resident_bytes"):
        return []
    from verifier.reports.summary import WHOSE
    rows = [("bytes a state, resident at the peak", f"{m['peak_resident_bytes_per_state']:,.0f} "
             f"({m['peak_resident_bytes'] / 2**20:,.0f} MB, {WHOSE[m['peak_resident_of']]})")]
    if m.get("disk_bytes"):
        rows.append((f"bytes a state on disk ({m.get('disk_of', 'checkpoint')})", f"{m['disk_bytes_per_state']:,.1f} "
                     f"({m['disk_bytes'] / 2**20:,.1f} MB)"))
    if m.get("disk_peak_bytes"):
        rows.append(("bytes a state on disk at the peak (with a level's rows and candidates)",
                     f"{m['disk_peak_bytes_per_state']:,.1f} ({m['disk_peak_bytes'] / 2**20:,.1f} MB)"))
    return rows


CONFIG_NAMES = {"preset": "preset", "mutant": "mutant", "replicas": "replicas", "extra_brokers": "spare brokers",
                "min_isr": "min.insync.replicas", "unclean_leader_election": "unclean.leader.election.enable",
                "flags": "rules set on the command line", "rules": "rules (every switch)", "bounds": "bounds"}


def config_rows(summary: dict) -> list[tuple[str, str]]:
    """The config as settings: a list as its members, a mapping as name=value pairs; for prove,
    what it covered in place of the search bounds it does not use."""
    from verifier.reports import prove
    cfg = dict(summary.get("config") or {})
    if prove.is_prove(summary):
        cfg.pop("bounds", None)
        cfg.update(prove.scope(summary))
    rows = []
    for key, value in cfg.items():
        if key == "mutant" and value is None:
            continue
        if isinstance(value, dict):         # an unset switch is "unset": "none" is a recovery strategy's name
            text = (", ".join(f"{k}={'unset' if v is None else scalar(v)}" for k, v in sorted(value.items()))
                    if value else "(none)" if key == "flags" else "(defaults)")
        elif isinstance(value, (list, tuple)):
            text = ", ".join(scalar(v) for v in value) or "(none)"
        else:
            text = scalar(value)
        rows.append((CONFIG_NAMES.get(key, key.replace("_", " ")), text))
    return rows


def coverage_table(summary: dict) -> tuple[list[str], list[list[str]]]:
    """(head, rows) of the action coverage in the engine's own terms: a search's enabled steps and
    new states, fuzz's rule runs."""
    cov = summary.get("coverage") or []
    if any("runs" in c for c in cov):
        return (["action", "rule runs (steps of the examples)", "status"],
                [[c["action"], f"{c['runs']:,}", c.get("status", "-")] for c in cov])
    return (["action", "enabled", "new states", "status"],
            [[c["action"], scalar(c.get("enabled", "-")), scalar(c.get("new_states", "-")),
              c.get("status", "-") + (f" ({c['reason']})" if c.get("reason") else "")] for c in cov])
