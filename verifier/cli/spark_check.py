"""`kraft-verify spark-check`: the exhaustive search sharded over Spark executors, through the
engine binding like every engine (spark/engine.py: its knobs, its checks before Spark starts)."""
from __future__ import annotations

import argparse
from dataclasses import replace

from specs import Model
from verifier.cli.binding import engine, knobs, refuse
from verifier.cli.common import UsageError, console, header_line, run_dir
from verifier.cli.progress import ProgressLine
from verifier.cli.search import report_search, search_inputs
from verifier.core.settings import Options, Settings


def run(args: argparse.Namespace) -> int:
    inputs = search_inputs(args)
    cfg, invs = inputs.cfg, inputs.invariants
    own = dict(master=args.master, partitions=args.partitions, executor_memory=args.executor_memory,
               driver_memory=args.driver_memory, checkpoint_dir=args.checkpoint_dir, resume=args.resume,
               tasks=args.engine, exchange=args.exchange)
    if args.checkpoint_every is not None:
        if args.checkpoint_dir is None:
            raise UsageError("--checkpoint-every needs --checkpoint-dir")
        own["rows_every"] = args.checkpoint_every       # its range: Knobs' check (exit 2)
    if args.driver_levels is not None:
        own["driver_levels"] = args.driver_levels
    model = Model(cfg, symmetry=inputs.symmetry)
    options = Options(check_deadlock=inputs.deadlock, keep_going=not inputs.stop_at_first)
    settings = Settings(limits=inputs.limits, options=options, knobs=knobs("spark", **own))   # KnobError: exit 2
    refuse("spark", model, invs, settings)         # before a JVM starts or a run directory exists
    out = console()
    run_id, out_dir = run_dir(args.out, "spark-check", cfg)
    out.print(header_line("spark-check", cfg), markup=False)
    settings = settings.but(knobs=replace(settings.knobs, log=str(out_dir / "spark.log")))
    with ProgressLine(out, not args.quiet) as progress:
        result = engine("spark")(model, invs, settings, progress)
    return report_search(args, out, model, invs, result, run_id, out_dir)
