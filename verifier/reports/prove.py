"""What `prove` prints: one line per (N, min ISR), the table and the first refutation as a
story; and the per-size results the summary carries under `details`."""
from __future__ import annotations

from specs.symbolic import describe, state_changes, step_text
from verifier.core import stop
from verifier.core.result import PROVED, REFUTED


def size_line(r, bmc_max_brokers: int) -> list[str]:
    if r.verdict == PROVED:
        how = "inductive" if r.inductive_alone else "inductive with " + ", ".join(r.strengthening)
    elif r.verdict == REFUTED:
        how = f"VIOLATED: {', '.join(r.violation)} in {len(r.trace) - 1} steps"
    else:
        how = f"UNKNOWN: not inductive ({', '.join(r.dropped)}), no violation to depth {r.bmc_depth}"
    bmc = f"BMC depth {r.bmc_depth}" if r.n <= bmc_max_brokers else "no BMC (N > --bmc-max-brokers)"
    lines = [f"N={r.n} min_isr={r.min_isr}: {how}; {bmc}; {r.induction_seconds:.1f}s + {r.bmc_seconds:.1f}s"]
    if r.cti is not None:
        where = (f"from a state that breaks {', '.join(r.cti_breaks)}, so unreachable" if r.verdict == PROVED
                 else "from a state no lemma rules out")
        agrees = {True: "the concrete model agrees", False: "the concrete model DISAGREES",
                  None: "no concrete state found"}[r.cti_reproduced]
        lines.append(f"  counterexample to induction: {step_text(r.cfg, r.cti.step)} breaks "
                     f"{', '.join(r.cti.violated)} {where}; {agrees}"
                     + (f" ({r.cti_scenario})" if r.cti_scenario else ""))
    return lines


def result_json(r) -> dict:
    out = {"brokers": r.n, "min_isr": r.min_isr, "verdict": r.verdict, "inductive_alone": r.inductive_alone,
           "strengthening": r.strengthening, "not_inductive": r.dropped, "bmc_depth": r.bmc_depth,
           "violated": r.violation or [], "unrealized_bmc_traces": r.unrealized,
           "seconds": round(r.seconds, 3), "induction_seconds": round(r.induction_seconds, 3),
           "bmc_seconds": round(r.bmc_seconds, 3)}
    if r.cti is not None:
        out["cti"] = {"violated": r.cti.violated, "action": step_text(r.cfg, r.cti.step),
                      "pre": describe(r.cfg, r.cti.pre), "post": describe(r.cfg, r.cti.post),
                      "unreachable": r.verdict == PROVED, "breaks": r.cti_breaks,
                      "concrete_model_agrees": r.cti_reproduced, "scenario": r.cti_scenario}
    if r.trace is not None:
        out["counterexample"] = {"length": len(r.trace) - 1, "steps": [step_text(r.cfg, st) for st, _ in r.trace[1:]],
                                 "scenario": r.scenario}
    return out


def report(args, out, cfg, results, completed: bool, elapsed: float) -> None:
    from rich.table import Table
    from verifier.reports.story import render
    table = Table(title=f"prove {cfg.preset}" + (f" --mutant {cfg.mutant}" if cfg.mutant else ""))
    for col in ("N", "min ISR", "verdict", "strengthening / violated", "BMC depth", "induction s", "BMC s"):
        table.add_column(col)
    for r in results:
        detail = ", ".join(r.strengthening) if r.verdict == PROVED else ", ".join(r.violation or r.dropped)
        table.add_row(str(r.n), str(r.min_isr), r.verdict, detail or "-",
                      str(r.bmc_depth) if r.n <= args.bmc_max_brokers else "-",
                      f"{r.induction_seconds:.2f}", f"{r.bmc_seconds:.2f}")
    out.print(table)
    per_n: dict[int, float] = {}
    for r in results:
        per_n[r.n] = per_n.get(r.n, 0.0) + r.seconds
    out.print("solver time per N: " + ", ".join(f"N={n}: {s:.1f}s" for n, s in per_n.items()), markup=False)
    if not completed:
        full = [n for n in per_n if all(r.n != n or r.verdict == PROVED for r in results)]
        why = stop.reason() if stop.requested() else f"the time budget ({args.time_budget:.0f}s)"
        out.print(f"stopped by {why} after {elapsed:.1f}s; "
                  f"every min ISR proved up to N={max(full) if full else 0}", markup=False)
    refuted = [r for r in results if r.verdict == REFUTED]
    for r in refuted[:1]:
        out.print(f"counterexample (N={r.n}, min ISR {r.min_isr}), symbolic:", markup=False)
        for i, (st, a) in enumerate(r.trace[1:], 1):
            out.print(f"  {i}. {step_text(r.cfg, st)}: {state_changes(r.cfg, r.trace[i - 1][1], a)}", markup=False)
        if r.witness is not None:
            render(r.witness, out, title=f"the same run in the concrete model ({len(r.witness)} steps): "
                                         f"{', '.join(r.witness.violated)}")
            out.print(f"replay scenario: {r.scenario}", markup=False)
        else:
            out.print("no concrete run matched this trace (see unrealized_bmc_traces in summary.json)", markup=False)


def details(args, results, completed: bool) -> dict:
    return {"max_brokers": args.max_brokers, "bmc_depth": args.depth, "bmc_max_brokers": args.bmc_max_brokers,
            "fixed_config": args.fixed_config, "completed": completed,
            "results": [result_json(r) for r in results]}
