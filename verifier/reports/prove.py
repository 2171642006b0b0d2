"""What `prove` prints: one line per (N, min ISR), the table and the first refutation as a
story; and the per-size results the summary carries under `details`."""
from __future__ import annotations

from specs.symbolic import describe, state_changes, step_text
from verifier.core import stop
from verifier.core.result import PROVED, REFUTED, UNKNOWN


def size_line(r, bmc_max_brokers: int) -> list[str]:
    """One size's verdicts: what is proved (and with which lemmas), what a run refutes, what
    is neither; then the counterexample to induction, if the properties alone were not
    inductive."""
    lemmas = f" with {', '.join(r.strengthening)}" if r.strengthening else ""
    parts = []
    if r.proved and r.verdict == PROVED:
        parts.append("inductive" + lemmas if not r.inductive_alone else "inductive")
    elif r.proved:
        parts.append(f"proved {', '.join(r.proved)}" + (f" (inductive{lemmas})" if lemmas else " (inductive)"))
    for run in r.refutations:
        parts.append(f"VIOLATED: {', '.join(run.names)} in {len(run.trace) - 1} steps")
    unknown = [name for name in r.dropped if r.verdict_of(name) == UNKNOWN]
    if unknown:
        parts.append(f"UNKNOWN: not inductive ({', '.join(unknown)}), no violation to depth {r.bmc_depth}"
                     + (f" ({r.unrealized} symbolic runs no concrete run matched)" if r.unrealized else ""))
    bmc = (("BMC depth " + str(r.bmc_depth)) if r.dropped else "no BMC needed") if r.n <= bmc_max_brokers \
        else "no BMC (N > --bmc-max-brokers)"
    lines = [f"N={r.n} min_isr={r.min_isr}: {'; '.join(parts)}; {bmc}; "
             f"{r.induction_seconds:.1f}s + {r.bmc_seconds:.1f}s"]
    if r.cti is not None:
        survived = set(r.cti.violated) <= set(r.proved)
        where = (f"from a state that breaks {', '.join(r.cti_breaks)}, so unreachable" if survived and r.cti_breaks
                 else "from a state no lemma rules out")
        agrees = {True: "the concrete model agrees", False: "the concrete model DISAGREES",
                  None: "no concrete state found"}[r.cti_reproduced]
        lines.append(f"  counterexample to induction: {step_text(r.cfg, r.cti.step)} breaks "
                     f"{', '.join(r.cti.violated)} {where}; {agrees}"
                     + (f" ({r.cti_scenario})" if r.cti_scenario else ""))
    return lines


def result_json(r) -> dict:
    out = {"brokers": r.n, "min_isr": r.min_isr, "verdict": r.verdict, "inductive_alone": r.inductive_alone,
           "properties": {name: r.verdict_of(name) for name in r.proved + r.dropped},
           "strengthening": r.strengthening, "not_inductive": r.dropped, "bmc_depth": r.bmc_depth,
           "violated": r.violation or [], "unrealized_bmc_traces": r.unrealized,
           "seconds": round(r.seconds, 3), "induction_seconds": round(r.induction_seconds, 3),
           "bmc_seconds": round(r.bmc_seconds, 3)}
    if r.cti is not None:
        out["cti"] = {"violated": r.cti.violated, "action": step_text(r.cfg, r.cti.step),
                      "pre": describe(r.cfg, r.cti.pre), "post": describe(r.cfg, r.cti.post),
                      "unreachable": set(r.cti.violated) <= set(r.proved), "breaks": r.cti_breaks,
                      "concrete_model_agrees": r.cti_reproduced, "scenario": r.cti_scenario}
    if r.refutations:
        out["refutations"] = [{"violated": run.names, "length": len(run.trace) - 1,
                               "steps": [step_text(r.cfg, st) for st, _ in run.trace[1:]],
                               "concrete_steps": len(run.witness) if run.witness is not None else None,
                               "scenario": run.scenario} for run in r.refutations]
        out["counterexample"] = {k: out["refutations"][0][k] for k in ("length", "steps", "scenario")}
    return out


def report(args, out, cfg, results, completed: bool, elapsed: float, verdicts=()) -> None:
    """The sizes' table, each property's verdict (a refutation named after its finding), and
    each refuting run: symbolic, then concrete."""
    from rich.table import Table
    from verifier.reports.story import render
    table = Table(title=f"prove {cfg.preset}" + (f" --mutant {cfg.mutant}" if cfg.mutant else ""))
    for col in ("N", "min ISR", "proved", "refuted", "unknown", "lemmas", "BMC depth", "induction s", "BMC s"):
        table.add_column(col)
    for r in results:
        names = r.proved + r.dropped
        refuted = [x for x in names if r.verdict_of(x) == REFUTED]
        unknown = [x for x in names if r.verdict_of(x) == UNKNOWN]
        table.add_row(str(r.n), str(r.min_isr), str(len(r.proved)), ", ".join(refuted) or "-",
                      ", ".join(unknown) or "-", ", ".join(r.strengthening) or "-",
                      str(r.bmc_depth) if r.n <= args.bmc_max_brokers and r.dropped else "-",
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
    if verdicts:
        each = Table(title="each property")
        for col in ("property", "verdict", "why"):
            each.add_column(col)
        for v in verdicts:
            each.add_row(v.name, v.status, v.detail)
        out.print(each)
    shown = set()
    for r in results:
        for run in r.refutations:
            if set(run.names) <= shown:
                continue
            shown |= set(run.names)
            out.print(f"counterexample (N={r.n}, min ISR {r.min_isr}) to {', '.join(run.names)}, symbolic:",
                      markup=False)
            for i, (st, a) in enumerate(run.trace[1:], 1):
                out.print(f"  {i}. {step_text(r.cfg, st)}: {state_changes(r.cfg, run.trace[i - 1][1], a)}",
                          markup=False)
            if run.witness is not None:
                render(run.witness, out, title=f"the same run in the concrete model ({len(run.witness)} steps): "
                                               f"{', '.join(run.witness.violated)}")
                out.print(f"replay scenario: {run.scenario}", markup=False)
            else:
                out.print("no concrete run was asked for (--no-witness)", markup=False)


def details(args, results, completed: bool) -> dict:
    return {"max_brokers": args.max_brokers, "bmc_depth": args.depth, "bmc_max_brokers": args.bmc_max_brokers,
            "fixed_config": args.fixed_config, "completed": completed,
            "results": [result_json(r) for r in results]}


# ---------------------------------------------------------------- prove's page (report.md, report.html)
SIZE_HEAD = ["N", "min ISR", "proved", "refuted", "unknown", "lemmas", "BMC depth", "seconds"]


def is_prove(summary: dict) -> bool:
    return str(summary.get("engine", "")).startswith("z3") and "results" in (summary.get("details") or {})


def scope(summary: dict) -> dict:
    """What prove covered, for the page's config in place of the search bounds z3 does not use."""
    d = summary["details"]
    return {"bounds": "none: induction covers every state of each size, BMC every run to its depth",
            "topic config changes": "off (--fixed-config)" if d.get("fixed_config")
            else "on: min ISR and unclean.leader.election may change any number of times",
            "sizes": f"N=1..{d.get('max_brokers')}, every min ISR 1..N",
            "BMC": f"depth {d.get('bmc_depth')} for N up to {d.get('bmc_max_brokers')}"}


def size_rows(summary: dict) -> list[list]:
    """One row per (N, min ISR): how many properties proved, which refuted, which unknown."""
    rows = []
    for r in summary["details"]["results"]:
        verdicts = r.get("properties") or {}
        rows.append([r["brokers"], r["min_isr"], sum(1 for v in verdicts.values() if v == PROVED),
                     ", ".join(k for k, v in verdicts.items() if v == REFUTED) or "-",
                     ", ".join(k for k, v in verdicts.items() if v == UNKNOWN) or "-",
                     ", ".join(r.get("strengthening") or []) or "-",
                     r.get("bmc_depth") if r.get("not_inductive") else "-", f"{r.get('seconds', 0):.1f}"])
    return rows
