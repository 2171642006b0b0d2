"""`kraft-verify check --liveness`: the liveness properties under weak fairness, on the whole
state graph (verifier/engines/liveness.py). A violation is a lasso: printed as a table that marks where
the cycle starts, written as a replay scenario and as ITF with its `loop` (the run writer).

Exit codes: 1 if a property is violated, 3 if the search stopped early or a bound kept a fair
action from a cycle (inconclusive), else 0. A documented exception (strategy None waiting for an
operator) is reported with its lasso and its reason, as `excepted`, never as `holds`.
"""
from __future__ import annotations

import argparse

from specs import Model
from verifier.cli.binding import engine, liveness_properties
from verifier.cli.common import UsageError, console, header_line, run_dir, write_result
from verifier.cli.progress import ProgressLine
from verifier.core.settings import Limits, Settings


def run(args: argparse.Namespace, inputs) -> int:
    cfg = inputs.cfg
    model = Model(cfg, symmetry=False)
    names = set(args.invariant or ())
    known = {p.name for p in liveness_properties()}
    unknown = sorted(names - known)
    if unknown:
        raise UsageError(f"--liveness: unknown liveness property {unknown[0]} (known: {', '.join(sorted(known))})")
    props = [p for p in liveness_properties() if not names or p.name in names]
    out = console()
    run_id, out_dir = run_dir(args.out, "liveness", cfg)
    out.print(header_line("check --liveness", cfg), markup=False)
    out.print("fair (weakly): " + ", ".join(model.fair_actions), markup=False)
    out.print("engine: liveness, the graph explored on the compiled kernel", markup=False)
    settings = Settings(limits=Limits(max_states=inputs.limits.max_states, time_budget=inputs.limits.time_budget))
    with ProgressLine(out, not args.quiet) as progress:
        res = engine("liveness")(model, props, settings, progress)
    summary = write_result(res, model, out_dir, run_id, args, cfg.preset, None)
    _print(out, res, summary["invariants"])
    out.print(f"report: {out_dir}", markup=False)
    return summary["exit_code"]


def _print(out, res, invariants: list[dict]) -> None:
    from rich.markup import escape
    from rich.table import Table
    table = Table(title="liveness (weak fairness)")
    for col in ("property", "result", "lasso", "note"):
        table.add_column(col)
    for i in invariants:
        cex = i["counterexample"]
        lasso = "-" if cex is None else f"{cex['length']} steps, cycle from {cex['loop']}" + (
            " (stutter)" if cex["stutter"] else "")
        table.add_row(i["name"], i["status"], lasso, escape(i.get("detail", "")))
    out.print(table)
    done = "complete" if res.complete else f"stopped: {res.stop_reason}"
    compiled = res.counts.get("compile_seconds") or 0
    out.print(f"{done}: {res.distinct_states:,} distinct states, {res.edges:,} transitions, {res.seconds:.1f}s"
              + (f" (compiling the kernel took {compiled:.1f}s more)" if compiled else ""), markup=False)
    for i in invariants:
        cex = i["counterexample"]
        if cex is None:
            continue
        t = Table(title=f"lasso: {i['name']} ({i['status']})")
        for col in ("#", "action", "what changed"):
            t.add_column(col)
        for n, action, diff in cex["rows"]:
            t.add_row(str(n), escape(str(action)), escape(str(diff)))
        out.print(t)
        out.print(f"lasso: {cex['scenario']} (replay it with `kraft-verify replay`), ITF: {cex['itf']}", markup=False)
