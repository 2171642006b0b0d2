"""`kraft-verify check`: exhaustive breadth-first search (or `--simulate` random walks), and
`--mutants`, the mutation gate on the exhaustive engine (`kraft-verify mutants` is its alias)."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from specs import MUTANTS, Model, PartitionsModel, config_label, lift_property
from verifier.cli.binding import engine as engine_named
from verifier.cli.binding import knobs
from verifier.cli.common import (UsageError, abandon_run, console, gate_command, header_line,
                                 replaceable, run_dir)
from verifier.cli.progress import ProgressLine
from verifier.cli.search import report_search, search_inputs
from verifier.core import stop
from verifier.core.exitcodes import EXIT_OK, EXIT_STOPPED
from verifier.core.settings import Limits, Options, Settings
from verifier.core.levels import GRAPH_LIMIT
from verifier.studies import gate


def run(args: argparse.Namespace) -> int:
    _early_checks(args)
    if args.mutants:
        if args.time_budget is None:
            args.time_budget = 600.0
        return run_mutants(args)
    if args.only:
        raise UsageError("--only goes with --mutants")
    if args.estimate is not None:
        return run_estimate(args)
    if args.liveness:
        return _liveness(args)
    inputs = search_inputs(args, partitions=args.simulate is None)
    cfg, invs, limits = inputs.cfg, inputs.invariants, inputs.limits
    if args.simulate is not None and (args.simulate < 1 or args.depth < 1):
        raise UsageError("--simulate N and --depth D must be >= 1")
    if args.dump_graph and not args.dump_graph.endswith((".dot", ".gv", ".graphml")):
        raise UsageError(f"--dump-graph {args.dump_graph}: file must end in .dot, .gv or .graphml")
    if args.dump_graph:
        limits = _graph_limits(args.dump_graph, limits)
    keep_going = args.keep_going or not inputs.stop_at_first
    model = _model(cfg, inputs.symmetry and args.simulate is None)
    if cfg.partitions > 1:
        invs = [lift_property(inv) for inv in invs]
    out = console()
    kind = "simulate" if args.simulate is not None else "bfs"
    run_id, out_dir = run_dir(args.out, "simulate" if kind == "simulate" else "check", cfg)
    out.print(header_line("check" if kind == "bfs" else kind, cfg), markup=False)
    if args.simulate is None and cfg.partitions > 1:
        out.print(f"symmetry: {'on, identical partitions interchangeable' if model.symmetric else 'off'} (brokers are "
                  f"not renamed with several partitions)", markup=False)
    elif args.simulate is None:
        out.print(f"symmetry: {'on, ' + str(model.group_size) + ' renamings' if model.symmetric else 'off'}"
                  f"{'' if model.symmetric or not model.symmetry_note else ' (' + model.symmetry_note + ')'}",
                  markup=False)
    options = Options(check_deadlock=inputs.deadlock, keep_going=keep_going, graph=bool(args.dump_graph))
    steps = search_engine(args, model, invs, Settings(limits, options))
    if cfg.partitions > 1 and steps == "kernel":
        _lifted_refusals(args)
    workers = args.workers_used = _workers(args, steps == "kernel", cfg.partitions == 1)
    saver, resume_from = _checkpoint(args, model, invs, options, out, steps == "kernel")
    name = ("kernel-simulate" if steps == "kernel" else "simulate") if kind == "simulate" else steps
    if kind == "simulate":
        how = "the model compiled; the same walks as --engine python" if steps == "kernel" else "the Python model"
        out.print(f"engine: {name} ({how})", markup=False)
    elif name == "kernel":
        out.print(f"engine: kernel (the model compiled), {workers} thread{'s' if workers > 1 else ''}"
                  f"{', visited set and store on disk' if args.visited == 'disk' else ''}", markup=False)
    elif kind == "bfs":
        if args.visited == "disk":
            raise UsageError(f"--visited disk is the compiled search's, and this check runs the interpreted one "
                             f"({args.engine_why}); drop --visited")
        name = "bfs"
        out.print(f"engine: bfs, the interpreted Python search, one process (not the kernel: {args.engine_why})",
                  markup=False)
    if kind == "simulate":
        own = knobs(name, walks=args.simulate, depth=args.depth, seed=args.seed)
    elif name == "kernel":
        own = knobs(name, threads=workers, checkpoint=saver, resume_from=resume_from, visited=args.visited)
    else:
        own = None
    settings = Settings(limits=limits, options=options, knobs=own)
    with ProgressLine(out, not args.quiet, walks=kind == "simulate") as progress, stop.polled():
        result = engine_named(name)(model, invs, settings, progress)
    if getattr(args, "checkpoint_dir", None):
        from verifier.core.machine import tree_bytes
        result.disk_bytes = tree_bytes(args.checkpoint_dir)
    comparison = None
    if args.compare_symmetry and kind == "bfs" and model.symmetric:
        from verifier.studies.symmetry import compare
        out.print("comparing: the same check without symmetry", markup=False)
        comparison = compare(engine_named("kernel" if name == "kernel" else "bfs"), result,
                             _model(cfg, False), invs,
                             Settings(limits=limits, options=Options(check_deadlock=inputs.deadlock,
                                                                     keep_going=keep_going)))
        out.print(f"symmetry saved {comparison['states_saved']:,} of {comparison['states_without_symmetry']:,} "
                  f"states ({comparison['seconds_without_symmetry']:.1f}s without it); same verdict: "
                  f"{comparison['same_verdict']}", markup=False)
    elif args.compare_symmetry:
        out.print("--compare-symmetry: symmetry is off for this run, nothing to compare", markup=False)
    if args.dump_graph and result.stop_reason.startswith("max states") and result.distinct_states > GRAPH_LIMIT:
        raise UsageError(f"--dump-graph: this config has more than {GRAPH_LIMIT:,} states, too many for a graph "
                         f"file; stopped there (shrink it with --bound, or drop --dump-graph)")
    return report_search(args, out, model, invs, result, run_id, out_dir, comparison)


def _model(cfg, symmetry: bool):
    """The one-partition model, or several partitions lifted from it (specs/partitions.py)."""
    return PartitionsModel(cfg, symmetry=symmetry) if cfg.partitions > 1 else Model(cfg, symmetry=symmetry)


def search_engine(args, model, properties, settings) -> str:
    """"kernel" or "python" for the exhaustive search, and for --simulate's steps: --engine,
    where auto takes the kernel (--workers threads) unless the check needs what the kernel
    cannot hold (a property without a row form, over 30 records or 15 brokers): then the
    interpreted search runs, and check says why. --engine kernel on such a check is refused
    with the kernel's reason (exit 2)."""
    from verifier.cli.binding import refuse
    from verifier.core.exitcodes import InputError
    choice = getattr(args, "engine", "python") or "auto"
    args.engine_why = "--engine python" if choice == "python" else ""
    if choice == "python":
        return "python"
    try:
        refuse("kernel", model, properties, settings)
    except InputError as exc:
        if choice == "kernel":
            raise UsageError(f"--engine kernel: {exc}") from None
        args.engine_why = str(exc)
        return "python"
    return "kernel"


def _graph_limits(path: str, limits):
    """--dump-graph: its file must be writable, and the search stops (exit 2) as soon as the
    graph would be too large to write, instead of finding out after the whole run."""
    from dataclasses import replace
    from verifier.reports.graph import cannot_write
    replaceable("--dump-graph", path)
    why = cannot_write(Path(path))
    if why:
        raise UsageError(f"--dump-graph {path}: cannot write there ({why})")
    cap = GRAPH_LIMIT + 1
    return replace(limits, max_states=cap if limits.max_states is None else min(limits.max_states, cap))


def _liveness(args: argparse.Namespace) -> int:
    from verifier.cli import liveness
    clash = [opt for opt, on in (("--simulate", args.simulate is not None), ("--checkpoint-dir", args.checkpoint_dir),
                                 ("--dump-graph", args.dump_graph), ("--compare-symmetry", args.compare_symmetry),
                                 ("--workers", args.workers not in (None, 1))) if on]
    if clash:
        raise UsageError(f"--liveness runs the one-process search of the whole graph; drop {', '.join(clash)}")
    invariants, args.invariant = args.invariant, None     # liveness property names, not invariants
    inputs = search_inputs(args)
    args.invariant = invariants
    return liveness.run(args, inputs)


def run_estimate(args: argparse.Namespace) -> int:
    """`check --estimate`: search for a few seconds, then forecast from the finished levels."""
    from verifier.core.files import json_text
    from verifier.reports.writer import write_pages
    from verifier.studies.estimate import sample
    if not 0 < args.estimate < float("inf"):
        raise UsageError("--estimate takes a positive number of seconds")
    if args.junit:
        raise UsageError("--estimate writes a forecast (estimate.json), not a verdict: drop --junit")
    inputs = search_inputs(args)
    model = Model(inputs.cfg, symmetry=inputs.symmetry)
    options = Options(check_deadlock=inputs.deadlock)
    # sampled on the engine the check itself would run, so the time forecast is that engine's
    on_kernel = search_engine(args, model, inputs.invariants, Settings(options=options)) == "kernel"
    workers = _workers(args, on_kernel)
    run_id, out_dir = run_dir(args.out, "estimate", inputs.cfg)     # an unwritable --out before the sample
    out = console()
    out.print(header_line("check --estimate", inputs.cfg, f"workers={workers}"), markup=False)
    if on_kernel:
        name, own = "kernel", knobs("kernel", threads=workers)
    else:
        name, own = "bfs", None
    out.print(f"sampled on: {name}", markup=False)
    found = sample(engine_named(name), model, inputs.invariants, Settings(options=options, knobs=own), args.estimate)
    report = {"config": config_label(inputs.cfg), "workers": workers, "engine": name,
              **{k: v for k, v in found.items() if k not in ("finished_levels", "forecast")}}
    if found.get("exact"):
        out.print(f"exact: the whole space was searched in the sample: {found['states']:,} distinct states, "
                  f"depth {found['depth']}, {found['sample_seconds']:.1f}s", markup=False)
    elif not found.get("forecast"):
        out.print(f"too early to forecast: {found['finished_levels']} finished levels in "
                  f"{found['sample_seconds']:.0f}s (needs 6); run a longer --estimate", markup=False)
        abandon_run()        # nothing to write: no empty run directory either
        return EXIT_STOPPED
    else:
        f = found
        for line in (f"forecast from {f['finished_levels']} finished levels ({f['sample_states']:,} states in "
                     f"{f['sample_seconds']:.0f}s, {f['states_per_second']:,.0f} states/s with {workers} worker(s)):",
                     f"  distinct states about {f['states']:,} (range {f['states_low']:,} to {f['states_high']:,})",
                     f"  depth about {f['depth']} (range {f['depth_low']} to {f['depth_high']})",
                     f"  run time about {f['seconds']:,}s (range {f['seconds_low']:,}s to {f['seconds_high']:,}s) "
                     "at the sampled speed",
                     "a forecast from the trend of the level sizes, not a bound (docs: BENCHMARKS.md, estimates)"):
            out.print(line, markup=False)
    write_pages(out_dir, {"estimate.json": json_text(dict(report, run_id=run_id))})
    out.print(f"report: {out_dir}", markup=False)
    return EXIT_OK


def _lifted_refusals(args) -> None:
    """What the compiled search does not do yet with several partitions (specs/kernel/lifted_rows.py):
    one line, exit 2."""
    given = [opt for opt in ("--workers", "--visited", "--checkpoint-dir", "--dump-graph") if GIVEN[opt](args)]
    if given:
        raise UsageError(f"{', '.join(given)}: several partitions are searched on one thread, in memory, without a "
                         f"checkpoint or a graph file (the compiled search's rows of several partitions); drop "
                         f"{'them' if len(given) > 1 else 'it'}")


def _workers(args, on_kernel: bool = True, threads: bool = True) -> int:
    """--workers threads, or every core, for the kernel (one thread for rows of several
    partitions: `threads` False); the interpreted search (and the --simulate walks) run in one process."""
    if args.workers is not None:
        if not 1 <= args.workers <= 64:
            raise UsageError(f"--workers must be between 1 and 64, got {args.workers}")
        if args.workers > 1 and not on_kernel and args.simulate is None:
            raise UsageError(f"--workers {args.workers}: the interpreted Python search runs in one process "
                             f"(it runs here because {args.engine_why}); drop --workers")
        return args.workers
    if not on_kernel or args.simulate is not None or not threads:
        return 1
    return max(os.cpu_count() or 1, 1)


# Options each mode of `check` never reads: given with it, they would be silently ignored.
GIVEN = {"--simulate": lambda a: a.simulate is not None, "--liveness": lambda a: a.liveness,
         "--estimate": lambda a: a.estimate is not None, "--max-depth": lambda a: a.max_depth is not None,
         "--max-states": lambda a: a.max_states is not None, "--time-budget": lambda a: a.time_budget is not None,
         "--invariant": lambda a: bool(a.invariant), "--workers": lambda a: a.workers not in (None, 1),
         "--visited": lambda a: getattr(a, "visited", "memory") != "memory",
         "--checkpoint-dir": lambda a: bool(a.checkpoint_dir), "--dump-graph": lambda a: bool(a.dump_graph),
         "--compare-symmetry": lambda a: a.compare_symmetry, "--stop-at-first": lambda a: a.stop_at_first,
         "--no-symmetry": lambda a: a.no_symmetry}
UNUSED = {"--mutants": ("--simulate", "--liveness", "--estimate", "--max-depth", "--max-states", "--invariant",
                        "--workers", "--checkpoint-dir", "--dump-graph", "--compare-symmetry", "--no-symmetry",
                        "--visited"),
          "--estimate": ("--simulate", "--liveness", "--max-depth", "--max-states", "--time-budget",
                         "--checkpoint-dir", "--dump-graph", "--compare-symmetry", "--visited"),
          "--liveness": ("--max-depth", "--stop-at-first", "--visited"),
          "--simulate": ("--max-depth", "--max-states", "--dump-graph", "--workers", "--visited")}


# The options a config file's [check] table can also give.
TOML_OF = {"--max-depth": "max_depth", "--max-states": "max_states", "--time-budget": "time_budget",
           "--stop-at-first": "stop_at_first"}


def _check_table(args) -> dict:
    from verifier.cli.common import read_toml
    return read_toml(args.config).get("check", {}) if getattr(args, "config", None) else {}


def _early_checks(args) -> None:
    """Options that mean nothing without another one, or that the mode chosen would ignore,
    checked before any work."""
    if args.depth is not None and args.simulate is None:
        raise UsageError("--depth is the length of a --simulate walk; without --simulate use --max-depth")
    if args.seed is not None and args.simulate is None:
        raise UsageError("--seed seeds the --simulate walks; the exhaustive search has nothing to seed")
    if args.resume and not args.checkpoint_dir:
        raise UsageError("--resume needs --checkpoint-dir")
    mode = next((m for m in UNUSED if GIVEN.get(m, lambda a: a.mutants)(args)), None)
    clash = [opt for opt in UNUSED.get(mode, ()) if GIVEN[opt](args)]
    if clash:
        raise UsageError(f"{mode} does not use {', '.join(clash)}: drop {'it' if len(clash) == 1 else 'them'}")
    in_file = _check_table(args)            # the config file's [check] keys are refused alike
    clash = [key for opt, key in TOML_OF.items() if opt in UNUSED.get(mode, ()) and key in in_file]
    if clash:
        raise UsageError(f"{mode} does not use check.{', check.'.join(clash)} (config file {args.config}): "
                         f"drop {'it' if len(clash) == 1 else 'them'}")
    args.depth = 100 if args.depth is None else args.depth
    args.seed = 0 if args.seed is None else args.seed
    if args.checkpoint_every is not None:
        if not args.checkpoint_dir:
            raise UsageError("--checkpoint-every needs --checkpoint-dir")
        if not 0 < args.checkpoint_every < float("inf"):
            raise UsageError(f"--checkpoint-every must be a positive finite number of seconds, "
                             f"got {args.checkpoint_every}")
    args.checkpoint_every = 300.0 if args.checkpoint_every is None else args.checkpoint_every


def _checkpoint(args, model, invs, options, out, on_kernel: bool):
    """(checkpointer, saved search to resume) for --checkpoint-dir, after the directory rules
    (verifier/engines/kernel/checkpoint.py): checkpoints are the compiled search's."""
    if args.resume and not args.checkpoint_dir:
        raise UsageError("--resume needs --checkpoint-dir")
    if not args.checkpoint_dir:
        return None, None
    if args.simulate is not None:
        raise UsageError("--checkpoint-dir goes with the exhaustive search")
    if not on_kernel:
        raise UsageError(f"--checkpoint-dir: checkpoints are the compiled search's, and this check runs the "
                         f"interpreted one ({args.engine_why})")
    if not args.checkpoint_every > 0:
        raise UsageError("--checkpoint-every must be a positive number of seconds")
    from specs.kernel import Kernel
    from verifier.core.checkpoint import CheckpointError, identity_of
    if getattr(args, "visited", "memory") == "disk":      # the search's own files are its checkpoint
        from verifier.engines.kernel.diskpoint import open_disk_checkpoint as open_checkpoint
    else:
        from verifier.engines.kernel.checkpoint import open_checkpoint
    try:
        saver, search, note = open_checkpoint(args.checkpoint_dir, identity_of(model, invs, options), args.resume,
                                              args.checkpoint_every, model, Kernel(model.cfg, symmetric=model.symmetric))
    except CheckpointError as exc:
        raise UsageError(str(exc)) from None
    if note:
        out.print(note, markup=False)
    return saver, search


def run_mutants(args: argparse.Namespace) -> int:
    """The mutation gate on the exhaustive engine: every mutant at the given bounds."""
    from verifier.cli.binding import liveness_properties, properties
    from verifier.cli.common import build_config
    if not 0 < args.time_budget < float("inf"):
        raise UsageError(f"--time-budget must be a positive finite number of seconds, got {args.time_budget}")
    base, _ = build_config(args)
    if base.mutant:
        raise UsageError("the mutation gate runs every mutant; use --only NAME to pick some")
    names = list(dict.fromkeys(args.only or MUTANTS))     # a mutant named twice runs once
    for name in names:
        if name not in MUTANTS:
            raise UsageError(f"unknown mutant '{name}' (known: {', '.join(MUTANTS)})")
    settings = Settings(limits=Limits(time_budget=args.time_budget))

    def run_one(cfg) -> dict:
        # no symmetry: a mutant's verdict and shortest counterexample are the same without it
        # (its counts are the unreduced space's), and a symmetric mutant would be reduced alone
        model = Model(cfg, symmetry=False)
        name = search_engine(args, model, properties(), settings)
        result = engine_named("kernel" if name == "kernel" else "bfs")(model, properties(), settings)
        return dict(gate.outcome_row(cfg.mutant, result, states=result.distinct_states), engine=result.engine)

    def run_liveness(cfg) -> dict:
        result = engine_named("liveness")(Model(cfg, symmetry=False), liveness_properties(), settings)
        return gate.outcome_row(cfg.mutant, result, result.stop_reason, states=result.distinct_states,
                                engine=result.engine)
    args.command = "check"
    return gate_command(args, "kernel", base, names, lambda out, where: run_one, "mutation gate (exhaustive search)",
                        ("states", "engine"), run_liveness=run_liveness)
