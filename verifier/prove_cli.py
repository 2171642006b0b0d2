"""`kraft-verify prove`: the z3 engine's command (kept apart from cli.py's BFS and fuzz)."""
from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Optional

from verifier.exitcodes import EXIT_OK, EXIT_STOPPED, EXIT_VIOLATION


def _names(cfg, bits: int) -> str:
    from specs.symbolic.abstraction import members
    return "[" + ",".join(str(b) for b in members(cfg, bits)) + "]"


def step_text(cfg, step) -> str:
    """A symbolic step in the words of the model's actions."""
    from specs.symbolic.abstraction import members
    who = members(cfg, step.broker)
    b = who[0] if len(who) == 1 else None
    a = step.action
    if a == "alter_partition":
        return f"AlterPartition isr={_names(cfg, step.members)}"
    if a == "crash":
        return f"crash broker={b}" + (" (loses unflushed records)" if step.flag else " (keeps its log)")
    if a in ("fence", "unfence", "controlled_shutdown", "clean_shutdown", "restart", "elect_designated"):
        return f"{a} broker={b}"
    if a == "set_min_isr":
        return f"set_min_isr value={step.value}"
    if a == "set_unclean":
        return f"set_unclean value={str(step.flag).lower()}"
    if a == "advance_hwm":
        return f"advance_hwm (non-ISR replicas keeping up: {_names(cfg, step.members)})"
    if a == "fetch":
        return f"fetch by {_names(cfg, step.members)}"
    return a


def abstract_changes(cfg, before, after) -> str:
    from specs.symbolic.abstraction import describe
    a, b = describe(cfg, before), describe(cfg, after)
    return "; ".join(f"{k}={v}" for k, v in b.items() if a[k] != v) or "(no change)"


def result_json(r) -> dict:
    from specs.symbolic.abstraction import describe
    out = {"brokers": r.n, "min_isr": r.min_isr, "verdict": r.verdict, "inductive_alone": r.inductive_alone,
           "strengthening": r.strengthening, "not_inductive": r.dropped, "bmc_depth": r.bmc_depth,
           "violated": r.violation or [], "unrealized_bmc_traces": r.unrealized,
           "seconds": round(r.seconds, 3), "induction_seconds": round(r.induction_seconds, 3),
           "bmc_seconds": round(r.bmc_seconds, 3)}
    if r.cti is not None:
        out["cti"] = {"violated": r.cti.violated, "action": step_text(r.cfg, r.cti.step),
                      "pre": describe(r.cfg, r.cti.pre), "post": describe(r.cfg, r.cti.post),
                      "unreachable": r.verdict == "proved", "breaks": r.cti_breaks,
                      "concrete_model_agrees": r.cti_reproduced, "scenario": r.cti_scenario}
    if r.trace is not None:
        out["counterexample"] = {"length": len(r.trace) - 1,
                                 "steps": [step_text(r.cfg, st) for st, _ in r.trace[1:]],
                                 "scenario": r.scenario}
    return out


def write_junit(path: str, results, completed: bool, what: str) -> None:
    suite = ET.Element("testsuite", name=f"kraft-verify prove {what}")
    failures = errors = 0
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=f"prove.{what}", name=f"N={r.n} min_isr={r.min_isr}",
                             time=f"{r.seconds:.3f}")
        if r.verdict == "refuted":
            failures += 1
            ET.SubElement(case, "failure", message=f"violated: {', '.join(r.violation)}", type="refuted").text = \
                "\n".join(step_text(r.cfg, st) for st, _ in r.trace[1:])
        elif r.verdict == "unknown":
            errors += 1
            ET.SubElement(case, "error", message="not inductive and no violation within the BMC depth",
                          type="unknown")
    if not completed:
        errors += 1
        case = ET.SubElement(suite, "testcase", classname=f"prove.{what}", name="time budget")
        ET.SubElement(case, "error", message="stopped by the time budget before every size was checked",
                      type="stopped")
    suite.set("tests", str(len(suite)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    tree = ET.ElementTree(suite)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)


def run(args, base_cfg, console, run_dir, write) -> int:
    """Prove for every size; print one table row per (N, min ISR); write the reports."""
    from rich.table import Table
    from invariants.symbolic import BY_NAME, INVARIANTS, MORE_INVARIANTS
    from verifier.prove import PROVED, REFUTED, UNKNOWN, prove
    from verifier.trace import render, to_scenario
    from verifier.witness import concrete_violations, cti_trace, witness_trace

    invariants = list(INVARIANTS) + list(MORE_INVARIANTS[:2])
    if args.fixed_config:
        invariants.append(BY_NAME["UncleanElectionOnlyAfterMinIsrUncleanShutdowns"])
    if args.invariant:
        invariants = [BY_NAME[n] for n in args.invariant]
    what = base_cfg.preset + (f" --mutant {base_cfg.mutant}" if base_cfg.mutant else "")
    run_id, out_dir = run_dir(args.out, "prove", base_cfg)
    console.print(f"prove {what}: N=1..{args.max_brokers}, BMC depth {args.depth} for N<={args.bmc_max_brokers}, "
                  f"{'fixed topic config' if args.fixed_config else 'min ISR and unclean.leader.election changes on'}; "
                  f"invariants: {', '.join(i.name for i in invariants)}", markup=False)
    started = time.monotonic()
    printed = []

    def on_result(r) -> None:
        if r.cti is not None:
            trace = cti_trace(r.cfg, r.cti)
            if trace is not None:
                r.cti_reproduced = concrete_violations(trace) == trace.violated and bool(trace.violated)
                name = f"cti-N{r.n}-m{r.min_isr}.json"
                write(out_dir / name, json.dumps(to_scenario(trace, f"z3 CTI N={r.n} min_isr={r.min_isr}",
                                                             " ".join(["kraft-verify"] + args.argv)), indent=2) + "\n")
                r.cti_scenario = name
        if r.verdict == REFUTED and r.witness is not None:
            name = f"counterexample-N{r.n}-m{r.min_isr}.json"
            write(out_dir / name, json.dumps(to_scenario(r.witness, f"z3 BMC N={r.n} min_isr={r.min_isr}",
                                                         " ".join(["kraft-verify"] + args.argv)), indent=2) + "\n")
            r.scenario = name
        if r.verdict == PROVED:
            how = "inductive" if r.inductive_alone else "inductive with " + ", ".join(r.strengthening)
        elif r.verdict == REFUTED:
            how = f"VIOLATED: {', '.join(r.violation)} in {len(r.trace) - 1} steps"
        else:
            how = f"UNKNOWN: not inductive ({', '.join(r.dropped)}), no violation to depth {r.bmc_depth}"
        bmc = f"BMC depth {r.bmc_depth}" if r.n <= args.bmc_max_brokers else "no BMC (N > --bmc-max-brokers)"
        console.print(f"N={r.n} min_isr={r.min_isr}: {how}; {bmc}; "
                      f"{r.induction_seconds:.1f}s + {r.bmc_seconds:.1f}s", markup=False)
        if r.cti is not None:
            where = (f"from a state that breaks {', '.join(r.cti_breaks)}, so unreachable" if r.verdict == PROVED
                     else "from a state no lemma rules out")
            agrees = {True: "the concrete model agrees", False: "the concrete model DISAGREES",
                      None: "no concrete state found"}[r.cti_reproduced]
            console.print(f"  counterexample to induction: {step_text(r.cfg, r.cti.step)} breaks "
                          f"{', '.join(r.cti.violated)} {where}; {agrees}"
                          + (f" ({r.cti_scenario})" if r.cti_scenario else ""), markup=False)
        printed.append(r)

    realize = witness_trace if not args.no_witness else None
    results, completed = prove(base_cfg, args.max_brokers, args.min_isr, args.depth, args.time_budget,
                               on_result, invariants=invariants, config_changes=not args.fixed_config,
                               realize=realize, stop_at_refutation=args.stop_at_first,
                               bmc_max_brokers=args.bmc_max_brokers)
    elapsed = time.monotonic() - started

    table = Table(title=f"prove {what}")
    for col in ("N", "min ISR", "verdict", "strengthening / violated", "BMC depth", "induction s", "BMC s"):
        table.add_column(col)
    for r in results:
        detail = ", ".join(r.strengthening) if r.verdict == PROVED else ", ".join(r.violation or r.dropped)
        table.add_row(str(r.n), str(r.min_isr), r.verdict, detail or "-",
                      str(r.bmc_depth) if r.n <= args.bmc_max_brokers else "-",
                      f"{r.induction_seconds:.2f}", f"{r.bmc_seconds:.2f}")
    console.print(table)
    per_n: dict[int, float] = {}
    for r in results:
        per_n[r.n] = per_n.get(r.n, 0.0) + r.seconds
    console.print("solver time per N: " + ", ".join(f"N={n}: {s:.1f}s" for n, s in per_n.items()), markup=False)
    full = [n for n in per_n if all(r.n != n or r.verdict == PROVED for r in results)
            and len([r for r in results if r.n == n]) == len([m for m in (args.min_isr or range(1, n + 1)) if m <= n])]
    if not completed:
        console.print(f"stopped by the time budget ({args.time_budget:.0f}s) after {elapsed:.1f}s; "
                      f"every min ISR proved up to N={max(full) if full else 0}", markup=False)

    refuted = [r for r in results if r.verdict == REFUTED]
    unknown = [r for r in results if r.verdict == UNKNOWN]
    for r in refuted[:1]:
        console.print(f"counterexample (N={r.n}, min ISR {r.min_isr}), symbolic:", markup=False)
        for i, (st, a) in enumerate(r.trace[1:], 1):
            console.print(f"  {i}. {step_text(r.cfg, st)}: {abstract_changes(r.cfg, r.trace[i - 1][1], a)}",
                          markup=False)
        if r.witness is not None:
            render(r.witness, console, title=f"the same run in the concrete model ({len(r.witness)} steps): "
                                              f"{', '.join(r.witness.violated)}")
            console.print(f"replay scenario: {out_dir / r.scenario}", markup=False)
        else:
            console.print("no concrete run matched this trace (see unrealized_bmc_traces in summary.json)",
                          markup=False)
    code = EXIT_VIOLATION if refuted else (EXIT_STOPPED if unknown or not completed else EXIT_OK)
    summary = {"run_id": run_id, "engine": "z3", "command": " ".join(["kraft-verify"] + args.argv),
               "preset": base_cfg.preset, "mutant": base_cfg.mutant, "max_brokers": args.max_brokers,
               "bmc_depth": args.depth, "bmc_max_brokers": args.bmc_max_brokers, "fixed_config": args.fixed_config,
               "invariants": [i.name for i in invariants], "completed": completed,
               "seconds": round(elapsed, 3), "results": [result_json(r) for r in results],
               "exit_code": code}
    write(out_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    if args.junit:
        write_junit(args.junit, results, completed, what)
    console.print(f"report: {out_dir}", markup=False)
    return code


def run_mutants(args, console, run_dir, write) -> int:
    """The mutation gate for the z3 engine: each mutant at one size with fixed topic config
    and every symbolic invariant, refuted by a BMC run the concrete model reproduces."""
    from rich.table import Table
    from invariants.symbolic import INVARIANTS, MORE_INVARIANTS
    from specs.config import make_config
    from specs.catalogue import MUTANTS
    from verifier.prove import REFUTED, check_size
    from verifier.trace import to_scenario
    from verifier.witness import witness_trace
    n, m = args.max_brokers, (args.min_isr or [min(2, args.max_brokers)])[0]
    run_id, out_dir = run_dir(args.out, "prove-mutants", make_config("kafka"))
    invariants = list(INVARIANTS) + list(MORE_INVARIANTS)
    rows = []
    for name in MUTANTS:
        r = check_size(make_config("kafka", mutant=name), n, m, args.depth, invariants=invariants,
                       config_changes=False, realize=witness_trace)
        row = {"mutant": name, "refuted": r.verdict == REFUTED, "violated": r.violation or [],
               "symbolic_steps": len(r.trace) - 1 if r.trace else None,
               "concrete_steps": len(r.witness) if r.witness is not None else None,
               "outside_encoding": "; ".join(MUTANTS[name].outside_z3()) or None, "seconds": round(r.seconds, 2), "scenario": None}
        if r.witness is not None:
            row["scenario"] = f"{name}.json"
            write(out_dir / row["scenario"], json.dumps(to_scenario(r.witness, f"z3 refutes {name}",
                                                                    " ".join(["kraft-verify"] + args.argv)),
                                                        indent=2) + "\n")
        rows.append(row)
        console.print(f"{name}: " + (f"refuted on {', '.join(row['violated'])} ({row['symbolic_steps']} symbolic, "
                                     f"{row['concrete_steps']} concrete steps)" if row["refuted"] else
                                     f"not refuted ({row['outside_encoding'] or 'SURVIVED'})")
                      + f", {r.seconds:.1f}s", markup=False)
    table = Table(title=f"z3 mutation gate (N={n}, min ISR {m}, BMC depth {args.depth}, fixed topic config)")
    for col in ("mutant", "refuted on", "symbolic steps", "concrete steps", "seconds"):
        table.add_column(col)
    for r in rows:
        verdict = ", ".join(r["violated"]) if r["refuted"] else (
            "outside the encoding" if r["outside_encoding"] else "[bold red]SURVIVED[/]")
        table.add_row(r["mutant"], verdict, str(r["symbolic_steps"] or "-"), str(r["concrete_steps"] or "-"),
                      f"{r['seconds']:.1f}")
    console.print(table)
    bad = [r for r in rows if not r["outside_encoding"] and not (r["refuted"] and r["scenario"])]
    code = EXIT_VIOLATION if bad else EXIT_OK
    write(out_dir / "mutants.json", json.dumps({"run_id": run_id, "brokers": n, "min_isr": m, "depth": args.depth,
                                                "mutants": rows, "exit_code": code}, indent=2) + "\n")
    console.print(f"report: {out_dir}", markup=False)
    return code


def add_parser(sub, add_model_args) -> None:
    p = sub.add_parser("prove", help="z3: prove the ELR invariants inductive for every cluster size up to N, "
                                     "and bounded model checking from the initial state")
    p.add_argument("--preset", help="protocol variant: kafka (default), kip-966, pre-kip-966, pre-kip-903")
    p.add_argument("--mutant", help="a deliberately broken rule from the mutation catalogue")
    p.add_argument("--flag", action="append", metavar="NAME[=V]", help="a protocol flag, e.g. elr=false")
    p.add_argument("--max-brokers", type=int, default=8, help="check every N from 1 to this (default 8)")
    p.add_argument("--min-isr", type=int, action="append", dest="min_isr",
                   help="check only this min ISR (repeatable; default every 1..N)")
    p.add_argument("--depth", type=int, default=6, help="BMC depth in symbolic steps (default 6)")
    p.add_argument("--bmc-max-brokers", type=int, default=4,
                   help="run BMC only for N up to this (default 4; its time grows steeply with N, "
                        "while induction covers every N)")
    p.add_argument("--invariant", action="append", help="check only this invariant (repeatable)")
    p.add_argument("--fixed-config", action="store_true",
                   help="no min.insync.replicas / unclean.leader.election changes; also checks "
                        "UncleanElectionOnlyAfterMinIsrUncleanShutdowns, which a min ISR change breaks")
    p.add_argument("--time-budget", type=float, help="stop (exit 3) after this many seconds")
    p.add_argument("--stop-at-first", action="store_true", help="stop at the first refuted size")
    p.add_argument("--no-witness", action="store_true", help="do not search the concrete model for the BMC trace")
    p.add_argument("--mutants", action="store_true",
                   help="the mutation gate: refute each mutant at N=--max-brokers (use 3) with a replayable run")
    p.add_argument("--junit", metavar="FILE")
    p.add_argument("--out", default="reports")
