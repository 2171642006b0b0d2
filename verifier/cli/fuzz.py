"""`kraft-verify fuzz`: Hypothesis stateful testing of the model, and `--mutants`, the mutation
gate on that engine."""
from __future__ import annotations

import argparse

from specs import MUTANTS, Model, deep_bounds
from verifier.cli.binding import engine, knobs, properties
from verifier.cli.common import UsageError, build_config, console, gate_command, header_line, run_dir, write_result
from verifier.cli.progress import ProgressLine
from verifier.core.settings import Settings
from verifier.studies import gate


def _config(args):
    cfg, _ = build_config(args)
    return build_config(args, default_bounds=deep_bounds(len(cfg.replicas)))[0]


def _fuzz(args, model, invs, shrink=True, progress=None):
    from verifier.core import stop
    try:
        settings = Settings(knobs=knobs("fuzz", profile=args.profile, examples=args.examples, steps=args.steps,
                                        seed=args.seed, shrink=shrink))
        with stop.polled():          # each step polls (verifier/engines/fuzz.py), outside Hypothesis' own handling
            return engine("fuzz")(model, invs, settings, progress)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _stats(out, result, model) -> None:
    """Rule counts and run depths (the warnings are the result's)."""
    from rich.table import Table
    rec = result.facts
    off = model.off_by_config()
    table = Table(title=f"rules run ({rec.examples:,} examples, {rec.steps:,} steps)")
    table.add_column("action")
    table.add_column("runs", justify="right")
    for name in model.action_names:
        runs = rec.rule_runs.get(name, 0)
        note = "" if runs else ("off by config" if name in off else "NEVER RUN")
        table.add_row(name, f"{runs:,}" + (f" ({note})" if note else ""))
    out.print(table)
    depths = sorted(rec.depths.elements())
    if depths:
        out.print(f"steps per example: max {depths[-1]}, median {depths[len(depths) // 2]}, "
                  f"mean {sum(depths) / len(depths):.1f}", markup=False)
    for w in result.warnings:
        if not w.startswith("Hypothesis samples"):
            out.print(f"warning: {w}", markup=False)


def run(args: argparse.Namespace) -> int:
    from verifier.reports.story import render
    for name in ("examples", "steps"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UsageError(f"--{name} must be >= 1, got {value}")
    if args.mutants:
        return run_mutants(args)
    cfg = _config(args)
    model = Model(cfg, symmetry=False)
    out = console()
    run_id, out_dir = run_dir(args.out, "fuzz", cfg)
    out.print(header_line("fuzz", cfg, f"profile={args.profile}"), markup=False)
    with ProgressLine(out, True, what=f"fuzz, profile {args.profile}") as progress:
        result = _fuzz(args, model, properties(), progress=progress)
    _stats(out, result, model)
    rec = result.facts
    result.sections = {"profile": args.profile, **result.sections}
    if result.counterexample is not None:
        render(result.counterexample, out,
               title=f"shrunk counterexample: {', '.join(result.violated)} ({len(result.counterexample)} steps)")
        out.print(f"counterexample: {out_dir / 'counterexample.json'} (replay it with `kraft-verify replay`); "
                  f"found at example {rec.first_failure_example}", markup=False)
    else:
        out.print(f"ok: no invariant violated in {rec.examples:,} examples ({rec.steps:,} steps, "
                  f"{result.seconds:.1f}s); a sample, not a proof", markup=False)
    summary = write_result(result, model, out_dir, run_id, args, f"fuzz-{cfg.preset}", out)
    return summary["exit_code"]


def run_mutants(args: argparse.Namespace) -> int:
    base = _config(args)
    if base.mutant:
        raise UsageError("--mutants runs every mutant; drop --mutant")

    def run_one(cfg) -> dict:
        result = _fuzz(args, Model(cfg, symmetry=False), properties(), shrink=False)
        rec = result.facts
        return gate.outcome_row(cfg.mutant, result, f"{rec.examples} examples",
                                examples_to_failure=rec.first_failure_example, examples=rec.examples)
    return gate_command(args, "fuzz", base, list(MUTANTS), lambda out, where: run_one,
                        f"fuzz mutation gate ({args.profile}, {len(base.replicas)} brokers)", ("examples_to_failure",),
                        {"profile": args.profile}, f"profile={args.profile}")
