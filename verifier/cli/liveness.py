"""`kraft-verify check --liveness`: the liveness properties under weak fairness, on the whole
state graph (verifier/liveness.py). A violation is a lasso: printed as a table that marks where
the cycle starts, written as a replay scenario and as ITF with its `loop` index.

Exit codes: 1 if a property is violated, 3 if the search stopped early or a bound kept a fair
action from a cycle (inconclusive), else 0. A documented exception (strategy None waiting for an
operator) is reported with its lasso and its reason, as `excepted`, never as `holds`.
"""
from __future__ import annotations

import argparse
import json

from specs import Model
from verifier import liveness as L
from verifier.cli.common import ProgressLine, console, header_line, run_dir, write_run
from verifier.exitcodes import EXIT_OK, EXIT_STOPPED, EXIT_VIOLATION
from verifier.files import write_atomic
from verifier.summary import header
from verifier.trace import rows

def lasso_rows(lasso: L.Lasso) -> list[list]:
    """The trace's rows, the cycle's start marked; a stutter ends with the state repeated."""
    out = [list(r) for r in rows(lasso.trace)]
    out[lasso.loop][2] = "<< cycle starts here >> " + out[lasso.loop][2]
    if lasso.stutter:
        out.append([len(out), "(stutter)", "the run stays here forever: no fair action is enabled"])
    else:
        out.append([len(out), "(back to step " + str(lasso.loop) + ")", "the cycle repeats forever"])
    return out


def itf_lasso(lasso: L.Lasso) -> dict:
    from verifier.reports.itf import itf_trace
    out = itf_trace(lasso.trace)
    out["loop"] = lasso.loop
    out["#meta"]["description"] += f"; a lasso whose cycle starts at state {lasso.loop}" + (
        " (the last state, stuttering)" if lasso.stutter else "")
    return out


def scenario(lasso: L.Lasso, name: str, command: str) -> dict:
    """A replay scenario: the prefix and one turn of the cycle, expecting the loop state at the
    cycle's start and again at its end (the run is back where the cycle began)."""
    trace = lasso.trace
    data = trace.model.scenario(trace, name, command)
    states = [trace.initial] + [s for _, s in trace.steps]
    p = states[lasso.loop].ctrl.partition
    expect = {"leader": p.leader, "isr": list(p.isr), "elr": list(p.elr), "last_known_elr": list(p.last_known_elr),
              "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch}
    steps = [st for st in data["steps"] if "op" in st]
    steps.insert(lasso.loop, {"expect": expect, "notes": "the cycle starts here"})
    steps.append({"expect": expect, "notes": "the stutter state" if lasso.stutter else "back at the cycle's start"})
    data.update(kind="liveness counterexample (lasso)", check_invariants=False, steps=steps,
                notes=f"{', '.join(trace.violated)}: a lasso; the cycle starts after operation {lasso.loop}"
                      + (" and is the last state repeated (no fair action enabled)" if lasso.stutter else ""))
    return data


def run(args: argparse.Namespace, inputs) -> int:
    cfg = inputs.cfg
    model = Model(cfg, symmetry=False)
    names = set(args.invariant or ())
    known = {p.name for p in model.liveness}
    unknown = sorted(names - known)
    if unknown:
        from verifier.cli.common import UsageError
        raise UsageError(f"--liveness: unknown liveness property {unknown[0]} (known: {', '.join(sorted(known))})")
    out = console()
    run_id, out_dir = run_dir(args.out, "liveness", cfg)
    out.print(header_line("check --liveness", cfg), markup=False)
    out.print("fair (weakly): " + ", ".join(model.fair_actions), markup=False)
    limits = inputs.limits
    with ProgressLine(out, not args.quiet) as progress:
        res = L.check(model, limits.max_states, limits.time_budget, progress, names or None)
    command = "kraft-verify " + " ".join(args.argv)
    invariants, code = [], EXIT_OK
    for v in res.verdicts:
        entry = {"name": v.name, "kind": "liveness", "status": v.status,
                 "quote": v.quote, "counterexample": None, "blocked_by_bounds": v.blocked}
        if v.status == L.INCONCLUSIVE:
            entry["detail"] = (f"the search stopped ({res.stop_reason})" if not res.complete else
                               "a bound kept fair action(s) " + ", ".join(v.blocked) + " from a cycle: raise it")
        if v.lasso is not None:
            lasso = v.lasso
            base = f"lasso-{v.name}"
            write_atomic(out_dir / f"{base}.json", json.dumps(scenario(lasso, f"{run_id}-{v.name}", command),
                                                              indent=2) + "\n")
            write_atomic(out_dir / f"{base}.itf.json", json.dumps(itf_lasso(lasso), indent=1) + "\n")
            entry["counterexample"] = {"length": len(lasso.trace), "loop": lasso.loop, "stutter": lasso.stutter,
                                       "violated": [v.name], "rows": lasso_rows(lasso),
                                       "scenario": f"{base}.json", "itf": f"{base}.itf.json"}
            if v.status == L.EXCEPTED:
                entry["detail"] = "documented exception: " + lasso.reason
        invariants.append(entry)
        if v.status == L.VIOLATED:
            code = EXIT_VIOLATION
        elif v.status == L.INCONCLUSIVE and code == EXIT_OK:
            code = EXIT_STOPPED
    _print(out, res, invariants)
    summary = header("liveness", cfg, run_id, command)
    summary.update({
        "result": {EXIT_OK: "ok", EXIT_VIOLATION: "violation", EXIT_STOPPED: "stopped"}[code], "exit_code": code,
        "stop_reason": res.stop_reason or ("" if code != EXIT_STOPPED else "a bound kept a fair action from a cycle"),
        "invariants": invariants, "violated": [i["name"] for i in invariants if i["status"] == "violated"],
        "counts": {"distinct_states": res.distinct_states, "transitions": res.edges, "seconds": round(res.seconds, 3)},
        "fair_actions": list(model.fair_actions), "warnings": [],
        "counterexamples": {i["name"]: i["counterexample"] for i in invariants if i["counterexample"]}})
    summary["counterexample"] = next((i["counterexample"] for i in invariants if i["status"] == "violated"), None)
    write_run(summary, out_dir, getattr(args, "junit", None), out)
    return code


def _print(out, res: L.LivenessResult, invariants: list[dict]) -> None:
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
    out.print(f"{done}: {res.distinct_states:,} distinct states, {res.edges:,} transitions, {res.seconds:.1f}s",
              markup=False)
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
