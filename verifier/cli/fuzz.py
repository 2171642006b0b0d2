"""`kraft-verify fuzz`: Hypothesis stateful testing of the model, and `--mutants`, the mutation
gate on that engine."""
from __future__ import annotations

import argparse

from specs import MUTANTS, Model, deep_bounds
from verifier import gate
from verifier.cli.common import (UsageError, add_model_args, build_config, console, header_line, run_dir,
                                 save_counterexamples, write_run)
from verifier.exitcodes import EXIT_OK, EXIT_VIOLATION


def add_parser(sub) -> None:
    p = sub.add_parser("fuzz", help="Hypothesis stateful testing of the model (larger clusters, deeper runs)")
    add_model_args(p)
    p.add_argument("--examples", type=int, help="Hypothesis max_examples (default: the profile's)")
    p.add_argument("--steps", type=int, help="steps per example (default: the profile's)")
    p.add_argument("--seed", type=int, help="random seed (default: derandomized in ci, random in nightly); "
                                            "a seeded run neither reads nor writes the example database")
    p.add_argument("--profile", default="ci", choices=["ci", "nightly"])
    p.add_argument("--mutants", action="store_true", help="fuzz every mutant; print the kill table")
    p.add_argument("--junit", metavar="FILE")
    p.add_argument("--out", default="reports")
    p.set_defaults(func=run)


def _config(args):
    cfg, _ = build_config(args)
    return build_config(args, default_bounds=deep_bounds(len(cfg.replicas)))[0]


def _fuzz(args, model, invs, hypothesis_shrink=True):
    from verifier import stop
    from verifier.fuzz import fuzz
    try:
        with stop.polled():          # each step polls (verifier/fuzz.py), outside Hypothesis' own handling
            return fuzz(model, invs, args.profile, args.examples, args.steps, args.seed,
                        hypothesis_shrink=hypothesis_shrink)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _stats(out, result, model) -> list[str]:
    """Rule counts and run depths; an action no run ever took is a warning, not silence."""
    from rich.table import Table
    rec = result.recorder
    off = model.off_by_config()
    table = Table(title=f"rules run ({rec.examples:,} examples, {rec.steps:,} steps)")
    table.add_column("action")
    table.add_column("runs", justify="right")
    warnings = []
    for name in model.action_names:
        runs = rec.rule_runs.get(name, 0)
        note = "" if runs else ("off by config" if name in off else "NEVER RUN")
        if not runs and name not in off:
            warnings.append(f"action {name} never ran in any example: random testing never reached it")
        table.add_row(name, f"{runs:,}" + (f" ({note})" if note else ""))
    out.print(table)
    depths = sorted(rec.depths.elements())
    if depths:
        out.print(f"steps per example: max {depths[-1]}, median {depths[len(depths) // 2]}, "
                  f"mean {sum(depths) / len(depths):.1f}", markup=False)
    for w in warnings:
        out.print(f"warning: {w}", markup=False)
    return warnings


def run(args: argparse.Namespace) -> int:
    from verifier.summary import SAMPLED_STATUS, header, invariant_rows, with_counterexamples
    from verifier.trace import render
    for name in ("examples", "steps"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UsageError(f"--{name} must be >= 1, got {value}")
    if args.mutants:
        return run_mutants(args)
    cfg = _config(args)
    model = Model(cfg, symmetry=False)
    invs = model.properties
    out = console()
    run_id, out_dir = run_dir(args.out, "fuzz", cfg)
    out.print(header_line("fuzz", cfg, f"profile={args.profile}"), markup=False)
    result = _fuzz(args, model, invs)
    warnings = _stats(out, result, model)
    rec = result.recorder
    code = EXIT_VIOLATION if result.trace is not None else EXIT_OK
    command = "kraft-verify " + " ".join(args.argv)
    found = {name: result.trace for name in result.violated}
    files = save_counterexamples(out_dir, found, result.trace, f"fuzz-{cfg.preset}", command)
    summary = header("fuzz", cfg, run_id, command)
    summary.update({
        "profile": args.profile, "result": "violation" if code else "ok", "exit_code": code, "stop_reason": "",
        "invariants": invariant_rows(invs, files, SAMPLED_STATUS), "violated": result.violated,
        "counts": {"samples": rec.examples, "examples": rec.examples, "steps": rec.steps,
                   "seconds": round(result.seconds, 3),
                   "examples_per_second": round(rec.examples / max(result.seconds, 1e-9), 1),
                   "steps_per_second": round(rec.steps / max(result.seconds, 1e-9), 1),
                   "examples_to_failure": rec.first_failure_example,
                   "depth": max(rec.depths) if rec.depths else 0},
        "deadlock": {"checked": True, "found": "Deadlock" in result.violated, "complete": True},
        "coverage": [{"action": a, "enabled": "-", "new_states": n} for a, n in sorted(rec.rule_runs.items())],
        "warnings": warnings + ([] if code else ["Hypothesis samples runs: no violation found is not a proof"])})
    with_counterexamples(summary, files, result.trace)
    if result.trace is not None:
        render(result.trace, out,
               title=f"shrunk counterexample: {', '.join(result.violated)} ({len(result.trace)} steps)")
        out.print(f"counterexample: {out_dir / 'counterexample.json'} (replay it with `kraft-verify replay`); "
                  f"found at example {rec.first_failure_example}", markup=False)
    else:
        out.print(f"ok: no invariant violated in {rec.examples:,} examples ({rec.steps:,} steps, "
                  f"{result.seconds:.1f}s); a sample, not a proof", markup=False)
    write_run(summary, out_dir, args.junit, out)
    return code


def run_mutants(args: argparse.Namespace) -> int:
    from verifier.summary import gate_summary
    base = _config(args)
    if base.mutant:
        raise UsageError("--mutants runs every mutant; drop --mutant")
    out = console()

    def run_one(cfg) -> dict:
        model = Model(cfg, symmetry=False)
        result = _fuzz(args, model, model.properties, hypothesis_shrink=False)
        rec = result.recorder
        status = gate.KILLED if result.trace is not None else gate.SURVIVED
        return gate.row(cfg.mutant, status, result.violated, len(result.trace) if result.trace else None,
                        result.seconds, "" if result.trace else f"{rec.examples} examples",
                        examples_to_failure=rec.first_failure_example, examples=rec.examples)
    run_id, out_dir = run_dir(args.out, "fuzz-mutants", base)
    out.print(header_line("fuzz --mutants", base, f"profile={args.profile}"), markup=False)
    rows, code = gate.run_gate("fuzz", base, list(MUTANTS), run_one, out,
                               f"fuzz mutation gate ({args.profile}, {len(base.replicas)} brokers)",
                               ("examples_to_failure",))
    write_run(gate_summary("fuzz", base, run_id, "kraft-verify " + " ".join(args.argv), rows, code,
                           {"profile": args.profile}), out_dir, args.junit, out)
    return code
