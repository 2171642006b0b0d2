"""`kraft-verify check`: exhaustive breadth-first search (or `--simulate` random walks), and
`--mutants`, the mutation gate on the exhaustive engine (`kraft-verify mutants` is its alias)."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from specs import MUTANTS, Model
from verifier import gate, stop
from verifier.bfs import GRAPH_LIMIT
from specs import config_label
from verifier.cli.common import (ProgressLine, UsageError, abandon_run, add_model_args, console, header_line,
                                 replaceable, run_dir, write_run)
from verifier.exitcodes import EXIT_OK, EXIT_STOPPED
from verifier.cli.search import report_search, search_inputs


def add_parser(sub) -> None:
    p = sub.add_parser("check", help="exhaustive breadth-first model check (or --simulate random walks)")
    add_model_args(p)
    p.add_argument("--max-depth", type=int, help="stop (exit 3) after this many BFS levels")
    p.add_argument("--max-states", type=int, help="stop (exit 3) at this many distinct states")
    p.add_argument("--time-budget", type=float, help="stop (exit 3) after this many seconds")
    p.add_argument("--invariant", action="append", help="check only this invariant (repeatable)")
    p.add_argument("--no-symmetry", action="store_true", help="do not reduce by broker renaming")
    p.add_argument("--compare-symmetry", action="store_true",
                   help="also run without symmetry; report the states it saved and check the verdicts agree")
    p.add_argument("--no-deadlock", action="store_true", help="do not report states where nothing can happen")
    p.add_argument("--stop-at-first", dest="stop_at_first", action="store_true",
                   help="stop at the first violation (TLC's default) instead of exploring on to report "
                        "the shortest trace of every violated invariant")
    p.add_argument("--continue", dest="keep_going", action="store_true",
                   help="explore on after a violation (the default; overrides check.stop_at_first)")
    p.add_argument("--simulate", type=int, metavar="N", help="N random walks instead of exhaustive search")
    p.add_argument("--depth", type=int, metavar="D", help="steps per random walk (--simulate; default 100)")
    p.add_argument("--seed", type=int, metavar="S", help="random seed for --simulate (default 0)")
    p.add_argument("--liveness", action="store_true",
                   help="check the liveness properties under weak fairness on the whole state graph "
                        "(lassos as table, replay scenario and ITF); --invariant picks among them")
    p.add_argument("--mutants", action="store_true", help="the mutation gate: check every mutant of the catalogue")
    p.add_argument("--only", action="append", metavar="NAME", help="with --mutants: only this mutant (repeatable)")
    p.add_argument("--estimate", type=float, nargs="?", const=20.0, metavar="SECONDS",
                   help="predict the distinct states, depth and run time from SECONDS (default 20) of search")
    p.add_argument("--workers", type=int, metavar="N",
                   help="worker processes for the exhaustive search (default: every core; 1 = one process)")
    p.add_argument("--checkpoint-dir", metavar="DIR",
                   help="keep the run's progress here (replaced atomically every level and every "
                        "--checkpoint-every seconds) so a killed run can --resume")
    p.add_argument("--resume", action="store_true", help="continue the run kept in --checkpoint-dir")
    p.add_argument("--checkpoint-every", type=float, metavar="S",
                   help="seconds between checkpoints inside a long level (default 300)")
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report, one test case per invariant")
    p.add_argument("--full-state", action="store_true",
                   help="show every field of the state at each counterexample step (TLC's view), not only changes")
    p.add_argument("--dump-graph", metavar="FILE", help="write the state graph (.dot/.gv or .graphml; small runs)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    p.add_argument("--out", default="reports", help="where run reports go (default reports/)")
    p.set_defaults(func=run)
    p = sub.add_parser("mutants", help="the mutation gate on the exhaustive engine (= check --mutants)")
    add_model_args(p)
    p.add_argument("--only", action="append", metavar="NAME", help="run only this mutant (repeatable)")
    p.add_argument("--time-budget", type=float, default=600.0, help="seconds per mutant (default 600)")
    p.add_argument("--no-symmetry", action="store_true")
    p.add_argument("--junit", metavar="FILE")
    p.add_argument("--out", default="reports")
    p.set_defaults(func=run_mutants)


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
    from verifier.bfs import Options, explore
    from verifier.simulate import simulate
    if args.liveness:
        return _liveness(args)
    inputs = search_inputs(args)
    cfg, invs, limits = inputs.cfg, inputs.invariants, inputs.limits
    if args.simulate is not None and (args.simulate < 1 or args.depth < 1):
        raise UsageError("--simulate N and --depth D must be >= 1")
    if args.dump_graph and not args.dump_graph.endswith((".dot", ".gv", ".graphml")):
        raise UsageError(f"--dump-graph {args.dump_graph}: file must end in .dot, .gv or .graphml")
    if args.dump_graph:
        limits = _graph_limits(args.dump_graph, limits)
    keep_going = args.keep_going or not inputs.stop_at_first
    model = Model(cfg, symmetry=inputs.symmetry and args.simulate is None)
    out = console()
    engine = "simulate" if args.simulate is not None else "bfs"
    run_id, out_dir = run_dir(args.out, "simulate" if engine == "simulate" else "check", cfg)
    out.print(header_line(engine, cfg), markup=False)
    if args.simulate is None:
        out.print(f"symmetry: {'on, ' + str(model.group_size) + ' renamings' if model.symmetric else 'off'}"
                  f"{'' if model.symmetric or not model.symmetry_note else ' (' + model.symmetry_note + ')'}",
                  markup=False)
    options = Options(check_deadlock=inputs.deadlock, keep_going=keep_going, graph=bool(args.dump_graph))
    workers = args.workers_used = _workers(args)
    saver, resume_from = _checkpoint(args, model, invs, options, out)
    if engine == "bfs":
        out.print(f"workers: {workers}" + (" (checkpoints and --dump-graph use the one-process search)"
                                           if workers == 1 and args.workers is None and os.cpu_count() != 1
                                           else ""), markup=False)
    with ProgressLine(out, not args.quiet, walks=engine == "simulate") as progress, stop.polled():
        if engine == "simulate":
            result = simulate(model, invs, args.simulate, args.depth, args.seed, limits.time_budget,
                              inputs.deadlock, progress)
        elif workers == 1:
            result = explore(model, invs, limits, options, progress, checkpoint=saver, resume_from=resume_from)
        elif workers > 1:
            from verifier.parallel import explore_parallel
            result = explore_parallel(model, invs, workers, limits, options, progress)
    comparison = None
    if args.compare_symmetry and engine == "bfs" and model.symmetric:
        out.print("comparing: the same check without symmetry", markup=False)
        plain = explore(Model(cfg, symmetry=False), invs, limits,
                        Options(check_deadlock=inputs.deadlock, keep_going=keep_going))
        same = (plain.status == result.status and
                {n: len(t) for n, t in plain.counterexamples.items()} ==
                {n: len(t) for n, t in result.counterexamples.items()})
        comparison = {"states_without_symmetry": plain.distinct_states,
                      "states_saved": plain.distinct_states - result.distinct_states,
                      "seconds_without_symmetry": round(plain.seconds, 3), "same_verdict": same}
        out.print(f"symmetry saved {comparison['states_saved']:,} of {plain.distinct_states:,} states "
                  f"({plain.seconds:.1f}s without it); same verdict: {same}", markup=False)
    elif args.compare_symmetry:
        out.print("--compare-symmetry: symmetry is off for this run, nothing to compare", markup=False)
    if args.dump_graph and result.stop_reason.startswith("max states") and result.distinct_states > GRAPH_LIMIT:
        raise UsageError(f"--dump-graph: this config has more than {GRAPH_LIMIT:,} states, too many for a graph "
                         f"file; stopped there (shrink it with --bound, or drop --dump-graph)")
    return report_search(args, out, engine, model, invs, result, run_id, out_dir, comparison)


def _graph_limits(path: str, limits):
    """--dump-graph: its file must be writable, and the search stops (exit 2) as soon as the
    graph would be too large to write, instead of finding out after the whole run."""
    from dataclasses import replace
    replaceable("--dump-graph", path)
    target = Path(path)
    try:
        if target.is_dir() or not target.parent.is_dir() or not os.access(target.parent, os.W_OK):
            raise UsageError(f"--dump-graph {path}: cannot write there (no such directory, or not writable)")
        existed = target.exists()
        with open(target, "a"):     # the name itself too (a name too long failed after the whole run)
            pass
        if not existed:
            target.unlink()
    except OSError as exc:
        raise UsageError(f"--dump-graph {path}: cannot write there ({exc.strerror})") from None
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
    import json
    from verifier.bfs import Limits, Options, explore
    from verifier.estimate import predict
    from verifier.files import write_atomic
    from verifier.parallel import explore_parallel
    if not 0 < args.estimate < float("inf"):
        raise UsageError("--estimate takes a positive number of seconds")
    if args.junit:
        raise UsageError("--estimate writes a forecast (estimate.json), not a verdict: drop --junit")
    inputs = search_inputs(args)
    model = Model(inputs.cfg, symmetry=inputs.symmetry)
    workers = _workers(args)
    run_id, out_dir = run_dir(args.out, "estimate", inputs.cfg)     # an unwritable --out before the sample
    out = console()
    out.print(header_line("check --estimate", inputs.cfg, f"workers={workers}"), markup=False)
    limits = Limits(time_budget=args.estimate)
    options = Options(check_deadlock=inputs.deadlock, keep_going=True)
    if workers > 1:
        result = explore_parallel(model, inputs.invariants, workers, limits, options)
    else:
        result = explore(model, inputs.invariants, limits, options)
    levels = list(result.states_per_level)
    rate = result.distinct_states / max(result.seconds, 1e-9)
    report = {"config": config_label(inputs.cfg), "workers": workers, "sample_seconds": round(result.seconds, 1),
              "sample_states": result.distinct_states, "sample_levels": levels, "states_per_second": round(rate)}
    if result.explored_all:
        report.update(exact=True, states=result.distinct_states, depth=result.depth)
        out.print(f"exact: the whole space was searched in the sample: {result.distinct_states:,} distinct states, "
                  f"depth {result.depth}, {result.seconds:.1f}s", markup=False)
    else:
        # the one-process search stops inside a level (its last size is partial); the parallel one between levels
        finished = levels[:-1] if workers == 1 and result.stop_reason.startswith("time") else levels
        forecast = predict(finished)
        if forecast is None:
            out.print(f"too early to forecast: {len(finished)} finished levels in {result.seconds:.0f}s "
                      f"(needs 6); run a longer --estimate", markup=False)
            abandon_run()        # nothing to write: no empty run directory either
            return EXIT_STOPPED
        report.update(exact=False, states=forecast.states, states_low=forecast.low, states_high=forecast.high,
                      depth=forecast.depth, depth_low=forecast.depth_low, depth_high=forecast.depth_high,
                      seconds=round(forecast.states / rate), seconds_low=round(forecast.low / rate),
                      seconds_high=round(forecast.high / rate))
        out.print(f"forecast from {len(finished)} finished levels ({result.distinct_states:,} states in "
                  f"{result.seconds:.0f}s, {rate:,.0f} states/s with {workers} worker(s)):", markup=False)
        out.print(f"  distinct states about {forecast.states:,} (range {forecast.low:,} to {forecast.high:,})",
                  markup=False)
        out.print(f"  depth about {forecast.depth} (range {forecast.depth_low} to {forecast.depth_high})",
                  markup=False)
        out.print(f"  run time about {report['seconds']:,}s (range {report['seconds_low']:,}s to "
                  f"{report['seconds_high']:,}s) at the sampled speed", markup=False)
        out.print("a forecast from the trend of the level sizes, not a bound (docs: BENCHMARKS.md, estimates)",
                  markup=False)
    write_atomic(out_dir / "estimate.json", json.dumps(dict(report, run_id=run_id), indent=2) + "\n")
    out.print(f"report: {out_dir}", markup=False)
    return EXIT_OK


def _workers(args) -> int:
    """--workers, or every core; the one-process search where only it can do what was asked."""
    if args.workers is not None:
        if not 1 <= args.workers <= 64:
            raise UsageError(f"--workers must be between 1 and 64, got {args.workers}")
        if args.workers > 1 and (args.checkpoint_dir or args.dump_graph):
            raise UsageError("--checkpoint-dir and --dump-graph need --workers 1 (the one-process search)")
        return args.workers
    if args.checkpoint_dir or args.dump_graph or args.simulate is not None:
        return 1
    return max(os.cpu_count() or 1, 1)


# Options each mode of `check` never reads: given with it, they would be silently ignored.
GIVEN = {"--simulate": lambda a: a.simulate is not None, "--liveness": lambda a: a.liveness,
         "--estimate": lambda a: a.estimate is not None, "--max-depth": lambda a: a.max_depth is not None,
         "--max-states": lambda a: a.max_states is not None, "--time-budget": lambda a: a.time_budget is not None,
         "--invariant": lambda a: bool(a.invariant), "--workers": lambda a: a.workers not in (None, 1),
         "--checkpoint-dir": lambda a: bool(a.checkpoint_dir), "--dump-graph": lambda a: bool(a.dump_graph),
         "--compare-symmetry": lambda a: a.compare_symmetry, "--stop-at-first": lambda a: a.stop_at_first}
UNUSED = {"--mutants": ("--simulate", "--liveness", "--estimate", "--max-depth", "--max-states", "--invariant",
                        "--workers", "--checkpoint-dir", "--dump-graph", "--compare-symmetry"),
          "--estimate": ("--simulate", "--liveness", "--max-depth", "--max-states", "--time-budget",
                         "--checkpoint-dir", "--dump-graph", "--compare-symmetry"),
          "--liveness": ("--max-depth", "--stop-at-first"),
          "--simulate": ("--max-depth", "--max-states", "--dump-graph", "--workers")}


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
    args.depth = 100 if args.depth is None else args.depth
    args.seed = 0 if args.seed is None else args.seed
    if args.checkpoint_every is not None:
        if not args.checkpoint_dir:
            raise UsageError("--checkpoint-every needs --checkpoint-dir")
        if not 0 < args.checkpoint_every < float("inf"):
            raise UsageError(f"--checkpoint-every must be a positive finite number of seconds, "
                             f"got {args.checkpoint_every}")
    args.checkpoint_every = 300.0 if args.checkpoint_every is None else args.checkpoint_every


def _checkpoint(args, model, invs, options, out):
    """(checkpointer, Search to resume) for --checkpoint-dir, after the directory rules."""
    if args.resume and not args.checkpoint_dir:
        raise UsageError("--resume needs --checkpoint-dir")
    if not args.checkpoint_dir:
        return None, None
    if args.simulate is not None or args.dump_graph:
        raise UsageError("--checkpoint-dir goes with the exhaustive search, without --dump-graph")
    if not args.checkpoint_every > 0:
        raise UsageError("--checkpoint-every must be a positive number of seconds")
    from verifier.bfs import open_checkpoint
    from verifier.checkpoint import CheckpointError
    from verifier.summary import config_json
    cfg = model.cfg
    identity = {"what": cfg.preset + (f" --mutant {cfg.mutant}" if cfg.mutant else ""), "config": config_json(cfg),
                "symmetry": model.symmetric, "deadlock": options.check_deadlock, "keep_going": options.keep_going,
                "invariants": [inv.name for inv in invs]}
    try:
        saver, search, note = open_checkpoint(args.checkpoint_dir, identity, args.resume, args.checkpoint_every)
    except CheckpointError as exc:
        raise UsageError(str(exc)) from None
    if note:
        out.print(note, markup=False)
    return saver, search


def run_mutants(args: argparse.Namespace) -> int:
    """The mutation gate on the exhaustive engine: every mutant at the given bounds."""
    from verifier.bfs import Limits, explore
    from verifier.cli.common import build_config
    from verifier.summary import gate_summary
    if not 0 < args.time_budget < float("inf"):
        raise UsageError(f"--time-budget must be a positive finite number of seconds, got {args.time_budget}")
    base, _ = build_config(args)
    if base.mutant:
        raise UsageError("the mutation gate runs every mutant; use --only NAME to pick some")
    names = list(dict.fromkeys(args.only or MUTANTS))     # a mutant named twice runs once
    for name in names:
        if name not in MUTANTS:
            raise UsageError(f"unknown mutant '{name}' (known: {', '.join(MUTANTS)})")
    out = console()
    limits = Limits(time_budget=args.time_budget)

    def run_one(cfg) -> dict:
        model = Model(cfg, symmetry=not args.no_symmetry)
        result = explore(model, model.properties, limits)
        trace = result.counterexample
        if trace is not None:
            status = gate.KILLED
        else:
            status = gate.SURVIVED if result.status == "complete" else gate.STOPPED
        return gate.row(cfg.mutant, status, trace.violated if trace else (), len(trace) if trace else None,
                        result.seconds, "" if status != gate.STOPPED else result.stop_reason,
                        states=result.distinct_states)
    def run_liveness(cfg) -> dict:
        from verifier import liveness as L
        res = L.check(Model(cfg, symmetry=False), time_budget=args.time_budget)
        bad = [v for v in res.verdicts if v.status == L.VIOLATED]
        status = gate.KILLED if bad else (gate.SURVIVED if res.complete else gate.STOPPED)
        return gate.row(cfg.mutant, status, [v.name for v in bad], len(bad[0].lasso.trace) if bad else None,
                        res.seconds, res.stop_reason, states=res.distinct_states)
    run_id, out_dir = run_dir(args.out, "mutants", base)
    out.print(header_line("check --mutants", base), markup=False)
    rows, code = gate.run_gate("bfs", base, names, run_one, out, "mutation gate (exhaustive search)", ("states",),
                               run_liveness=run_liveness)
    write_run(gate_summary("bfs", base, run_id, "kraft-verify " + " ".join(args.argv), rows, code), out_dir,
              getattr(args, "junit", None), out)
    return code
