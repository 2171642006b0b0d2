"""The `kraft-verify` command line.

Exit codes everywhere: 0 = all checked properties hold, 1 = a violation
(counterexample printed and written), 2 = usage or input error, 3 = stopped by a
bound or budget before completion.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tomllib
from pathlib import Path
from typing import Any, Optional

from verifier.exitcodes import EXIT_INPUT, EXIT_OK, EXIT_STOPPED, EXIT_VIOLATION


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:   # one line, exit 2, no usage dump
        raise UsageError(message)


# ---------------------------------------------------------------- config

def _parse_bound(text: str) -> tuple[str, int]:
    if "=" not in text:
        raise UsageError(f"--bound takes NAME=VALUE, got '{text}'")
    name, value = text.split("=", 1)
    try:
        return name.strip(), int(value)
    except ValueError:
        raise UsageError(f"--bound {name}: '{value}' is not an integer") from None


def _parse_flag(text: str) -> tuple[str, Any]:
    if "=" not in text:
        return text, True
    name, value = text.split("=", 1)
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return name.strip(), lowered == "true"
    return name.strip(), value.strip()


def build_config(args: argparse.Namespace, default_bounds: Optional[dict] = None):
    """The Config from a TOML file and flags; flags win over the file, the file over
    `default_bounds` (an engine's own defaults)."""
    from specs.config import make_config
    data: dict[str, Any] = {}
    if getattr(args, "config", None):
        try:
            with open(args.config, "rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError:
            raise UsageError(f"config file {args.config}: no such file") from None
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"config file {args.config}: {exc}") from None
        known = {"preset", "mutant", "replicas", "min_isr", "unclean_leader_election", "brokers",
                 "flags", "bounds", "check"}
        for key in data:
            if key not in known:
                raise UsageError(f"config file {args.config}: unknown key '{key}'")
    flags = dict(data.get("flags", {}))
    bounds = dict(default_bounds or {})
    bounds.update(data.get("bounds", {}))
    for text in getattr(args, "flag", None) or []:
        name, value = _parse_flag(text)
        flags[name] = value
    for text in getattr(args, "bound", None) or []:
        name, value = _parse_bound(text)
        bounds[name] = value
    replicas = data.get("replicas")
    if getattr(args, "brokers", None):
        replicas = list(range(1, args.brokers + 1))
    if getattr(args, "replicas", None):
        try:
            replicas = [int(x) for x in args.replicas.split(",")]
        except ValueError:
            raise UsageError(f"--replicas takes a comma-separated list of broker ids, got '{args.replicas}'") from None
    return make_config(args.preset or data.get("preset", "kafka"), replicas=replicas,
                       min_isr=args.min_isr if getattr(args, "min_isr", None) is not None else data.get("min_isr"),
                       unclean_leader_election=data.get("unclean_leader_election"),
                       extra_brokers=data.get("brokers"), flags=flags, bounds=bounds,
                       mutant=getattr(args, "mutant", None) or data.get("mutant")), data.get("check", {})


def _add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", help="protocol variant: kafka (default), kip-966, pre-kip-966, pre-kip-903")
    p.add_argument("--mutant", help="a deliberately broken rule from the mutation catalogue")
    p.add_argument("--config", help="TOML file with the model config and bounds")
    p.add_argument("--replicas", help="comma-separated broker ids (replica order)")
    p.add_argument("--brokers", type=int, help="replication factor N: replicas 1..N")
    p.add_argument("--min-isr", type=int, dest="min_isr")
    p.add_argument("--bound", action="append", metavar="NAME=N", help="a model bound, e.g. records=2")
    p.add_argument("--flag", action="append", metavar="NAME[=V]", help="a protocol flag, e.g. elr=false")


# ---------------------------------------------------------------- replay

def cmd_replay(args: argparse.Namespace) -> int:
    from rich.markup import escape
    from rich.table import Table
    from verifier.replay import ScenarioError, run_file
    from verifier.trace import render
    console = _console()
    worst = EXIT_OK
    for path in args.files:
        try:
            result = run_file(path, preset=args.preset, force_invariants=args.check_invariants)
        except ScenarioError as exc:
            console.print(f"kraft-verify: error: {exc}", markup=False)
            worst = EXIT_INPUT
            continue
        if result.ok:
            note = ""
            if result.trace.violated:
                note = f" (reproduces {', '.join(result.trace.violated)})"
            elif result.violations:
                names = sorted({n for _, ns in result.violations for n in ns})
                note = f" (note: violated {', '.join(names)}; not checked)"
            console.print(f"PASS {path}: {result.name}, {len(result.trace)} operations{note}", markup=False)
            if args.verbose:
                render(result.trace, console, title=result.name)
            continue
        failure = result.failure
        console.print(f"FAIL {path}: step {failure.step}: {failure.message}", markup=False)
        if failure.diffs:
            table = Table(title=f"{result.name}: step {failure.step}")
            table.add_column("field")
            table.add_column("expected")
            table.add_column("actual")
            for name, want, got in failure.diffs:
                table.add_row(name, escape(json.dumps(want)), escape(json.dumps(got)))
            console.print(table)
        render(result.trace, console, title=f"{result.name}: operations up to the failure")
        if worst == EXIT_OK:
            worst = EXIT_VIOLATION
    return worst


# ---------------------------------------------------------------- check

CHECK_KEYS = {"max_depth", "max_states", "time_budget", "symmetry", "deadlock", "stop_at_first"}


def _run_dir(base: str, kind: str, cfg) -> tuple[str, Path]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    what = cfg.preset + (f"-{cfg.mutant}" if cfg.mutant else "")
    run_id = f"{kind}-{what}-{stamp}-{os.getpid()}"
    path = Path(base) / run_id
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {base}: cannot create the report directory ({exc.strerror})") from None
    return run_id, path


def _write(path: Path, text: str) -> None:
    """Write whole or not at all: a reader never sees half a report."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _console():
    """Rich console; in a log (not a terminal) wide and without wrapping, so lines stay greppable."""
    from rich.console import Console
    console = Console(highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console = Console(highlight=False, soft_wrap=True, width=160)
    return console


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class ProgressLine:
    """A live rich line on a terminal; a plain line every 10 s in a log (CI)."""

    def __init__(self, console, enabled: bool, walks: bool = False):
        self.console = console
        self.enabled = enabled
        self.walks = walks
        self.live = None
        self.last_plain = 0.0
        self.start = time.monotonic()

    def __enter__(self):
        if self.enabled and self.console.is_terminal:
            from rich.live import Live
            self.live = Live("", console=self.console, refresh_per_second=4, transient=True)
            self.live.__enter__()
        return self

    def __exit__(self, *exc):
        if self.live is not None:
            self.live.__exit__(*exc)

    def __call__(self, p) -> None:
        if not self.enabled:
            return
        rate = p.distinct / p.seconds if p.seconds > 0 else 0.0
        queue = "walks left" if self.walks else "queue"
        text = (f"{p.generated:,} states generated, {p.distinct:,} distinct, depth {p.depth}, "
                f"{queue} {p.queue:,}, {rate:,.0f} distinct/s, {_rss_mb():,.0f} MB, {p.seconds:,.0f}s")
        if self.live is not None:
            self.live.update(text)
        elif p.seconds - self.last_plain >= 10:
            self.last_plain = p.seconds
            self.console.print("progress: " + text, markup=False)


def _check_limits(args, check_opts: dict):
    from verifier.bfs import Limits
    def pick(name):
        value = getattr(args, name)
        return value if value is not None else check_opts.get(name)
    limits = Limits(max_depth=pick("max_depth"), max_states=pick("max_states"), time_budget=pick("time_budget"))
    for name in ("max_depth", "max_states", "time_budget"):
        value = getattr(limits, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise UsageError(f"{name.replace('_', '-')} must be a positive number, got {value!r}")
    return limits


def _search_inputs(args):
    """What check and spark-check both read: (config, invariants, limits, symmetry, deadlock,
    stop at first), from the flags and the config file's [check] table."""
    import invariants as I
    cfg, check_opts = build_config(args)
    for key in check_opts:
        if key not in CHECK_KEYS:
            raise UsageError(f"config file {args.config}: unknown key 'check.{key}'")
    try:
        invs = I.select(args.invariant)
    except KeyError as exc:
        raise UsageError(f"unknown invariant {exc}") from None
    limits = _check_limits(args, check_opts)
    symmetry = bool(not args.no_symmetry and check_opts.get("symmetry", True))
    deadlock = bool(not args.no_deadlock and check_opts.get("deadlock", True))
    stop_at_first = bool(args.stop_at_first or check_opts.get("stop_at_first", False))
    return cfg, invs, limits, symmetry, deadlock, stop_at_first


def cmd_check(args: argparse.Namespace) -> int:
    from specs.model import Model
    from verifier.bfs import Options, explore
    from verifier.simulate import simulate
    cfg, invs, limits, symmetry, deadlock, stop_at_first = _search_inputs(args)
    if args.simulate is not None and (args.simulate < 1 or args.depth < 1):
        raise UsageError("--simulate N and --depth D must be >= 1")
    if args.dump_graph and not args.dump_graph.endswith((".dot", ".gv", ".graphml")):
        raise UsageError(f"--dump-graph {args.dump_graph}: file must end in .dot, .gv or .graphml")
    keep_going = args.keep_going or not stop_at_first
    model = Model(cfg, symmetry=symmetry and args.simulate is None)
    console = _console()
    engine = "simulate" if args.simulate is not None else "bfs"
    run_id, out_dir = _run_dir(args.out, "simulate" if engine == "simulate" else "check", cfg)
    console.print(f"kraft-verify {engine}: preset={cfg.preset} mutant={cfg.mutant or '-'} "
                  f"replicas={list(cfg.replicas)} min_isr={cfg.min_isr} bounds={_bounds_text(cfg)}", markup=False)
    if args.simulate is None:
        console.print(f"symmetry: {'on, ' + str(model.group_size) + ' renamings' if model.symmetric else 'off'}"
                      f"{'' if model.symmetric or not model.symmetry_note else ' (' + model.symmetry_note + ')'}",
                      markup=False)
    with ProgressLine(console, not args.quiet, walks=engine == "simulate") as progress:
        if engine == "simulate":
            result = simulate(model, invs, args.simulate, args.depth, args.seed, limits.time_budget,
                              deadlock, progress)
        else:
            result = explore(model, invs, limits,
                             Options(check_deadlock=bool(deadlock), keep_going=keep_going,
                                     graph=bool(args.dump_graph)),
                             progress)
    comparison = None
    if args.compare_symmetry and engine == "bfs" and model.symmetric:
        console.print("comparing: the same check without symmetry", markup=False)
        plain = explore(Model(cfg, symmetry=False), invs, limits,
                        Options(check_deadlock=bool(deadlock), keep_going=keep_going))
        same = (plain.status == result.status and
                {n: len(t) for n, t in plain.counterexamples.items()} ==
                {n: len(t) for n, t in result.counterexamples.items()})
        comparison = {"states_without_symmetry": plain.distinct_states,
                      "states_saved": plain.distinct_states - result.distinct_states,
                      "seconds_without_symmetry": round(plain.seconds, 3), "same_verdict": same}
        console.print(f"symmetry saved {comparison['states_saved']:,} of {plain.distinct_states:,} states "
                      f"({plain.seconds:.1f}s without it); same verdict: {same}", markup=False)
    elif args.compare_symmetry:
        console.print("--compare-symmetry: symmetry is off for this run, nothing to compare", markup=False)
    return _report(args, console, engine, model, invs, result, run_id, out_dir, comparison)


def _report(args, console, engine, model, invs, result, run_id, out_dir, comparison=None) -> int:
    from rich.table import Table
    from verifier import reports
    from verifier import summary as S
    from verifier.trace import render, to_scenario
    cfg = model.cfg
    command = "kraft-verify " + " ".join(args.argv)
    summary = S.build(engine, model, invs, result, run_id, command)
    if comparison is not None:
        summary["symmetry"].update(comparison)
        if not comparison["same_verdict"]:
            summary["warnings"].append("symmetry changed the verdict: the reduction is unsound for this config")
    table = Table(title="invariants")
    table.add_column("invariant")
    table.add_column("kind")
    table.add_column("result")
    for row in summary["invariants"]:
        style = {"violated": "bold red", "holds": "green"}.get(row["status"], "yellow")
        table.add_row(row["name"], row["kind"], f"[{style}]{row['status']}[/]")
    if summary["deadlock"]["checked"]:
        table.add_row("Deadlock", "state", "[bold red]found[/]" if summary["deadlock"]["found"] else
                      ("[green]none[/]" if result.explored_all else "[yellow]not checked to completion[/]"))
    console.print(table)
    c = summary["counts"]
    what = "walk steps" if engine == "simulate" else "transitions"
    console.print(f"{result.status}: {c['distinct_states']:,} distinct states, {c['transitions']:,} {what}, "
                  f"depth {c['depth']}, {c['seconds']:.1f}s, {c['states_per_second']:,.0f} distinct states/s, "
                  f"{c['terminal_states']:,} terminal states", markup=False)
    console.print(f"fingerprints: 128-bit, collision probability (optimistic, as TLC) "
                  f"{summary['fingerprint']['collision_probability']:.1e}", markup=False)
    if engine in ("bfs", "spark"):
        console.print("states per level: " + " ".join(str(n) for n in c["states_per_level"]), markup=False)
    for warning in summary["warnings"]:
        console.print(f"warning: {warning}", markup=False)
    for name, trace in result.counterexamples.items():
        if trace is not result.counterexample:
            _write(out_dir / f"counterexample-{name}.json",
                   json.dumps(to_scenario(trace, f"{cfg.preset}-{name}", summary["command"]), indent=2) + "\n")
    if result.counterexample is not None:
        trace = result.counterexample
        render(trace, console)
        _save_counterexample(console, out_dir, trace, f"{cfg.preset}-{'-'.join(trace.violated)}", summary["command"])
        for name, trace2 in result.counterexamples.items():
            if trace2 is not trace:
                console.print(f"also violated: {name} in {len(trace2)} steps "
                              f"({out_dir / ('counterexample-' + name + '.json')})", markup=False)
    if args.dump_graph:
        if result.graph is not None:
            reports.write_graph(result.graph[0], result.graph[1], args.dump_graph)
            console.print(f"state graph: {args.dump_graph} ({len(result.graph[0])} nodes, "
                          f"{len(result.graph[1])} edges)", markup=False)
    if args.junit:
        try:
            reports.write_junit(summary, args.junit)
        except OSError as exc:
            raise UsageError(f"--junit {args.junit}: {exc.strerror}") from None
    reports.write_report_md(summary, result.counterexample, out_dir / "report.md")
    _write(out_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    console.print(f"report: {out_dir}", markup=False)
    code = summary["exit_code"]
    if code == EXIT_STOPPED:
        console.print(f"STOPPED before completion: {result.stop_reason} (exit 3: not a pass)", markup=False)
    return code


# ---------------------------------------------------------------- fuzz

def _fuzz_config(args):
    from verifier.fuzz import fuzz_bounds
    cfg, _ = build_config(args)
    return build_config(args, default_bounds=fuzz_bounds(len(cfg.replicas)))[0]


def _fuzz_run(args, cfg, invs, hypothesis_shrink=True):
    from verifier.fuzz import fuzz
    try:
        return fuzz(cfg, invs, args.profile, args.examples, args.steps, args.seed,
                    hypothesis_shrink=hypothesis_shrink)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _fuzz_stats(console, result, cfg) -> list[str]:
    """Rule counts and run depths; an action no run ever took is a warning, not silence."""
    from rich.table import Table
    from specs.actions import ACTION_NAMES, off_by_config
    rec = result.recorder
    off = off_by_config(cfg)
    table = Table(title=f"rules run ({rec.examples:,} examples, {rec.steps:,} steps)")
    table.add_column("action")
    table.add_column("runs", justify="right")
    warnings = []
    for name in ACTION_NAMES:
        runs = rec.rule_runs.get(name, 0)
        note = "" if runs else ("off by config" if name in off else "NEVER RUN")
        if not runs and name not in off:
            warnings.append(f"action {name} never ran in any example: random testing never reached it")
        table.add_row(name, f"{runs:,}" + (f" ({note})" if note else ""))
    console.print(table)
    depths = sorted(rec.depths.elements())
    if depths:
        console.print(f"steps per example: max {depths[-1]}, median {depths[len(depths) // 2]}, "
                      f"mean {sum(depths) / len(depths):.1f}", markup=False)
    for w in warnings:
        console.print(f"warning: {w}", markup=False)
    return warnings


def cmd_fuzz(args: argparse.Namespace) -> int:
    import invariants as I
    from verifier import reports
    from verifier.summary import config_json, counterexample_json, invariant_rows
    from verifier.trace import render
    console = _console()
    if args.mutants:
        return _fuzz_mutants(args, console)
    cfg = _fuzz_config(args)
    invs = I.select(None)
    run_id, out_dir = _run_dir(args.out, "fuzz", cfg)
    console.print(f"kraft-verify fuzz: preset={cfg.preset} mutant={cfg.mutant or '-'} replicas={list(cfg.replicas)} "
                  f"min_isr={cfg.min_isr} profile={args.profile} bounds={_bounds_text(cfg)}", markup=False)
    result = _fuzz_run(args, cfg, invs)
    warnings = _fuzz_stats(console, result, cfg)
    rec = result.recorder
    code = EXIT_VIOLATION if result.trace is not None else EXIT_OK
    summary = {
        "tool": "kraft-verify", "engine": "fuzz", "run_id": run_id, "command": "kraft-verify " + " ".join(args.argv),
        "config": config_json(cfg), "profile": args.profile,
        "result": "violation" if code else "ok", "exit_code": code, "stop_reason": "",
        "invariants": invariant_rows(invs, result.violated, explored_all=False, sampled=True),
        "violated": result.violated,
        "counts": {"examples": rec.examples, "steps": rec.steps, "seconds": round(result.seconds, 3),
                   "examples_per_second": round(rec.examples / max(result.seconds, 1e-9), 1),
                   "steps_per_second": round(rec.steps / max(result.seconds, 1e-9), 1),
                   "examples_to_failure": rec.first_failure_example,
                   "depth": max(rec.depths) if rec.depths else 0},
        "deadlock": {"checked": True, "found": "Deadlock" in result.violated, "complete": False},
        "coverage": [{"action": a, "enabled": "-", "new_states": n} for a, n in sorted(rec.rule_runs.items())],
        "warnings": warnings + ([] if code else ["Hypothesis samples runs: no violation found is not a proof"]),
        "counterexample": None,
    }
    if result.trace is not None:
        trace = result.trace
        render(trace, console, title=f"shrunk counterexample: {', '.join(trace.violated)} ({len(trace)} steps)")
        _save_counterexample(console, out_dir, trace, f"fuzz-{cfg.preset}-{'-'.join(trace.violated)}",
                             summary["command"])
        summary["counterexample"] = counterexample_json(trace)
        console.print(f"found at example {rec.first_failure_example}", markup=False)
    else:
        console.print(f"ok: no invariant violated in {rec.examples:,} examples ({rec.steps:,} steps, "
                      f"{result.seconds:.1f}s); a sample, not a proof", markup=False)
    if args.junit:
        reports.write_junit(summary, args.junit)
    reports.write_report_md(summary, result.trace, out_dir / "report.md")
    _write(out_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    console.print(f"report: {out_dir}", markup=False)
    return code


def _fuzz_mutants(args, console) -> int:
    from dataclasses import replace
    from rich.table import Table
    import invariants as I
    from specs.catalogue import MUTANTS
    from specs.config import with_mutant
    from verifier.summary import config_json
    base = _fuzz_config(args)
    if base.mutant:
        raise UsageError("--mutants runs every mutant; drop --mutant")
    rows = []
    for name in MUTANTS:
        result = _fuzz_run(args, with_mutant(base, name), I.select(None), hypothesis_shrink=False)
        rec = result.recorder
        row = {"mutant": name, "killed": result.trace is not None, "killed_by": result.violated,
               "examples_to_failure": rec.first_failure_example, "shrunk_length": len(result.trace) if result.trace else None,
               "examples": rec.examples, "seconds": round(result.seconds, 2)}
        rows.append(row)
        console.print(f"{name}: " + (f"killed by {', '.join(row['killed_by'])} at example {row['examples_to_failure']}"
                                     f" ({row['shrunk_length']} steps)" if row["killed"] else
                                     f"SURVIVED {rec.examples} examples") + f", {result.seconds:.1f}s", markup=False)
    table = Table(title=f"fuzz mutation gate ({args.profile}, {len(base.replicas)} brokers): "
                        f"{sum(r['killed'] for r in rows)}/{len(rows)} killed")
    for col in ("mutant", "killed by", "examples to failure", "steps", "seconds"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["mutant"], ", ".join(r["killed_by"]) or "[bold red]SURVIVED[/]",
                      str(r["examples_to_failure"] or "-"), str(r["shrunk_length"] or "-"), f"{r['seconds']:.1f}")
    console.print(table)
    code = EXIT_OK if all(r["killed"] for r in rows) else EXIT_VIOLATION
    run_id, out_dir = _run_dir(args.out, "fuzz-mutants", base)
    _write(out_dir / "mutants.json", json.dumps({"run_id": run_id, "profile": args.profile,
                                                 "config": config_json(base), "mutants": rows,
                                                 "exit_code": code}, indent=2) + "\n")
    console.print(f"report: {out_dir}", markup=False)
    return code


# ---------------------------------------------------------------- spark-check

def cmd_spark_check(args: argparse.Namespace) -> int:
    from specs.model import Model
    from verifier.summary import config_json
    cfg, invs, limits, symmetry, deadlock, stop_at_first = _search_inputs(args)
    if args.resume and not args.checkpoint_dir:
        raise UsageError("--resume needs --checkpoint-dir")
    if args.partitions is not None and args.partitions < 1:
        raise UsageError("--partitions must be >= 1")
    keep_going = not stop_at_first
    model = Model(cfg, symmetry=symmetry)
    from spark.levels import CheckpointError, LevelStore
    from spark.session import SparkSetupError, check_master, make_session
    store = None
    if args.checkpoint_dir:
        identity = {"what": cfg.preset + (f" --mutant {cfg.mutant}" if cfg.mutant else ""),
                    "config": config_json(cfg), "symmetry": model.symmetric, "deadlock": deadlock,
                    "invariants": [inv.name for inv in invs]}
        try:
            store = LevelStore(args.checkpoint_dir, identity)
            manifest = store.load()
        except CheckpointError as exc:
            raise UsageError(str(exc)) from None
        if manifest is not None and not args.resume:
            raise UsageError(f"--checkpoint-dir {args.checkpoint_dir} holds a run of this config: "
                             "pass --resume to continue it, or use a fresh directory")
    from spark.session import under_spark_submit
    try:
        if not under_spark_submit():
            check_master(args.master)
    except SparkSetupError as exc:
        raise UsageError(str(exc)) from None
    console = _console()
    run_id, out_dir = _run_dir(args.out, "spark-check", cfg)
    console.print(f"kraft-verify spark-check: preset={cfg.preset} mutant={cfg.mutant or '-'} "
                  f"replicas={list(cfg.replicas)} min_isr={cfg.min_isr} bounds={_bounds_text(cfg)}", markup=False)
    try:
        spark = make_session(args.master, args.partitions, args.executor_memory)
    except SparkSetupError as exc:
        raise UsageError(str(exc)) from None
    from spark.explore import Progress, spark_explore
    partitions = args.partitions or spark.sparkContext.defaultParallelism
    console.print(f"spark: master={spark.sparkContext.master} partitions={partitions} "
                  f"symmetry={'on' if model.symmetric else 'off'} "
                  f"checkpoint={args.checkpoint_dir or '(temporary)'}{' (resuming)' if args.resume else ''}",
                  markup=False)
    result = spark_explore(spark, model, invs, store, args.resume, limits, keep_going, deadlock, partitions,
                           Progress(console, args.quiet))
    args.dump_graph = None
    return _report(args, console, "spark", model, invs, result, run_id, out_dir)


# ---------------------------------------------------------------- prove (z3)

def cmd_prove(args: argparse.Namespace) -> int:
    from invariants.symbolic import BY_NAME
    from verifier import prove_cli
    if args.max_brokers < 1 or args.max_brokers > 32:
        raise UsageError("--max-brokers must be between 1 and 32")
    if args.depth < 0:
        raise UsageError("--depth must be >= 0")
    if args.bmc_max_brokers < 0:
        raise UsageError("--bmc-max-brokers must be >= 0")
    for m in args.min_isr or []:
        if m < 1 or m > args.max_brokers:
            raise UsageError(f"--min-isr {m} is outside 1..{args.max_brokers}")
    for name in args.invariant or []:
        if name not in BY_NAME:
            raise UsageError(f"unknown symbolic invariant '{name}' (known: {', '.join(BY_NAME)})")
    if args.time_budget is not None and args.time_budget <= 0:
        raise UsageError("--time-budget must be > 0")
    if args.mutants:
        if args.preset or args.mutant or args.flag:
            raise UsageError("prove --mutants runs every mutant on the kafka preset; drop --preset/--mutant/--flag")
        return prove_cli.run_mutants(args, _console(), _run_dir, _write)
    cfg, _ = build_config(argparse.Namespace(**{**vars(args), "min_isr": None}))
    if cfg.rules.unclean_recovery_strategy is not None:
        raise UsageError("prove does not encode unclean recovery rounds (unclean_recovery_strategy)")
    return prove_cli.run(args, cfg, _console(), _run_dir, _write)


# ---------------------------------------------------------------- mutants

def cmd_mutants(args: argparse.Namespace) -> int:
    from dataclasses import replace
    from rich.console import Console
    from rich.table import Table
    import invariants as I
    from specs.model import Model
    from specs.catalogue import MUTANTS
    from specs.config import with_mutant
    from verifier.bfs import Limits, explore
    from verifier.summary import config_json
    base, _ = build_config(args)
    if base.mutant:
        raise UsageError("mutants runs every mutant; use --only NAME to pick some")
    names = args.only or list(MUTANTS)
    for name in names:
        if name not in MUTANTS:
            raise UsageError(f"unknown mutant '{name}'")
    console = _console()
    limits = Limits(time_budget=args.time_budget)
    rows = []
    for name in names:
        result = explore(Model(with_mutant(base, name), symmetry=not args.no_symmetry), I.REGISTRY, limits)
        trace = result.counterexample
        row = {"mutant": name, "rule": MUTANTS[name].description, "killed": trace is not None,
               "killed_by": list(trace.violated) if trace else [], "depth": len(trace) if trace else None,
               "distinct_states": result.distinct_states, "seconds": round(result.seconds, 2),
               "status": result.status, "stop_reason": result.stop_reason}
        rows.append(row)
        verdict = (f"killed by {', '.join(row['killed_by'])} at depth {row['depth']}" if trace else
                   ("SURVIVED" if result.status == "complete" else f"not killed before: {result.stop_reason}"))
        console.print(f"{name}: {verdict} ({result.distinct_states:,} states, {result.seconds:.1f}s)", markup=False)
    table = Table(title=f"mutation gate: {sum(r['killed'] for r in rows)}/{len(rows)} killed")
    for col in ("mutant", "killed by", "depth", "states", "seconds"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["mutant"], ", ".join(r["killed_by"]) or ("[bold red]SURVIVED[/]" if r["status"] == "complete"
                                                                  else "[yellow]not killed (stopped)[/]"),
                      str(r["depth"] or "-"), f"{r['distinct_states']:,}", f"{r['seconds']:.1f}")
    console.print(table)
    survived = any(not r["killed"] and r["status"] == "complete" for r in rows)
    stopped = any(not r["killed"] and r["status"] != "complete" for r in rows)
    worst = EXIT_VIOLATION if survived else EXIT_STOPPED if stopped else EXIT_OK
    run_id, out_dir = _run_dir(args.out, "mutants", base)
    md = ["| mutant | broken rule | killed by | depth | states |", "|---|---|---|---|---|"]
    for r in rows:
        rule = r["rule"].replace("|", "\\|")
        md.append(f"| `{r['mutant']}` | {rule} | {', '.join(r['killed_by']) or 'SURVIVED'} | "
                  f"{r['depth'] or '-'} | {r['distinct_states']:,} |")
    _write(out_dir / "mutants.md", "\n".join(md) + "\n")
    _write(out_dir / "mutants.json", json.dumps({"run_id": run_id, "config": config_json(base), "mutants": rows,
                                                 "exit_code": worst}, indent=2) + "\n")
    console.print(f"report: {out_dir}", markup=False)
    return worst


def _save_counterexample(console, out_dir: Path, trace, name: str, command: str) -> None:
    """The main counterexample as a replay scenario and an ITF trace."""
    from verifier import reports
    from verifier.trace import to_scenario
    _write(out_dir / "counterexample.json", json.dumps(to_scenario(trace, name, command), indent=2) + "\n")
    _write(out_dir / "counterexample.itf.json", json.dumps(reports.itf_trace(trace), indent=1) + "\n")
    console.print(f"counterexample: {out_dir / 'counterexample.json'} (replay it with `kraft-verify replay`), "
                  f"ITF: {out_dir / 'counterexample.itf.json'}", markup=False)


def _bounds_text(cfg) -> str:
    from dataclasses import asdict
    return ",".join(f"{k}={v}" for k, v in asdict(cfg.bounds).items())


# ---------------------------------------------------------------- list

def cmd_list(args: argparse.Namespace) -> int:
    import invariants as I
    from specs import ACTIONS, MUTANTS, PRESETS
    print("presets:")
    for name, preset in PRESETS.items():
        print(f"  {name:14} {preset.doc}")
    print("invariants:")
    for inv in I.REGISTRY:
        print(f"  {inv.name:48} ({inv.kind})")
    print("mutants:")
    for name, mutant in MUTANTS.items():
        print(f"  {name:36} {mutant.description}")
    print("actions:")
    for a in ACTIONS:
        print(f"  {a.name:26} {a.doc}")
    return EXIT_OK


def parser() -> argparse.ArgumentParser:
    top = _Parser(prog="kraft-verify", description="Verify the KRaft partition leadership protocol model.")
    sub = top.add_subparsers(dest="command", parser_class=_Parser)
    p = sub.add_parser("replay", help="run scenario files through the model")
    p.add_argument("files", nargs="+")
    p.add_argument("--preset", help="override the scenarios' preset")
    p.add_argument("--check-invariants", action="store_true", help="fail on any invariant violation not expected")
    p.add_argument("-v", "--verbose", action="store_true", help="print each scenario's step table")
    p.set_defaults(func=cmd_replay)
    p = sub.add_parser("check", help="exhaustive breadth-first model check (or --simulate random walks)")
    _add_model_args(p)
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
    p.add_argument("--depth", type=int, default=100, metavar="D", help="steps per random walk (default 100)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="random seed for --simulate (default 0)")
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report, one test case per invariant")
    p.add_argument("--dump-graph", metavar="FILE", help="write the state graph (.dot/.gv or .graphml; small runs)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    p.add_argument("--out", default="reports", help="where run reports go (default reports/)")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("fuzz", help="Hypothesis stateful testing of the model (larger clusters, deeper runs)")
    _add_model_args(p)
    p.add_argument("--examples", type=int, help="Hypothesis max_examples (default: the profile's)")
    p.add_argument("--steps", type=int, help="steps per example (default: the profile's)")
    p.add_argument("--seed", type=int, help="random seed (default: derandomized in ci, random in nightly); "
                                            "a seeded run neither reads nor writes the example database")
    p.add_argument("--profile", default="ci", choices=["ci", "nightly"])
    p.add_argument("--mutants", action="store_true", help="fuzz every mutant; print the kill table")
    p.add_argument("--junit", metavar="FILE")
    p.add_argument("--out", default="reports")
    p.set_defaults(func=cmd_fuzz)
    p = sub.add_parser("mutants", help="check every mutant of the catalogue and print the kill table")
    _add_model_args(p)
    p.add_argument("--only", action="append", metavar="NAME", help="run only this mutant (repeatable)")
    p.add_argument("--time-budget", type=float, default=600.0, help="seconds per mutant (default 600)")
    p.add_argument("--no-symmetry", action="store_true")
    p.add_argument("--out", default="reports")
    p.set_defaults(func=cmd_mutants)
    p = sub.add_parser("spark-check", help="the exhaustive check sharded over Spark executors (overnight runs)")
    _add_model_args(p)
    p.add_argument("--master", default="local[*]", help="Spark master URL (default local[*]; spark://HOST:PORT)")
    p.add_argument("--partitions", type=int, help="partitions of the frontier and visited set (default: cores)")
    p.add_argument("--executor-memory", help="Spark executor memory, e.g. 4g")
    p.add_argument("--checkpoint-dir", help="keep every level here (Parquet + manifest) so a killed run can resume")
    p.add_argument("--resume", action="store_true", help="continue the run in --checkpoint-dir from its last good level")
    p.add_argument("--max-depth", type=int, help="stop (exit 3) after this many BFS levels")
    p.add_argument("--max-states", type=int, help="stop (exit 3) at the level that reaches this many states")
    p.add_argument("--time-budget", type=float, help="stop (exit 3) after the level that exceeds this many seconds")
    p.add_argument("--invariant", action="append", help="check only this invariant (repeatable)")
    p.add_argument("--no-symmetry", action="store_true", help="do not reduce by broker renaming")
    p.add_argument("--no-deadlock", action="store_true", help="do not report states where nothing can happen")
    p.add_argument("--stop-at-first", action="store_true", help="stop after the level with the first violation")
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report, one test case per invariant")
    p.add_argument("-q", "--quiet", action="store_true", help="no per-level progress lines")
    p.add_argument("--out", default="reports", help="where run reports go (default reports/)")
    p.set_defaults(func=cmd_spark_check)
    from verifier import prove_cli
    prove_cli.add_parser(sub, _add_model_args)
    sub.choices["prove"].set_defaults(func=cmd_prove)
    p = sub.add_parser("list", help="list presets, invariants, mutants and actions")
    p.set_defaults(func=cmd_list)
    return top


def main(argv: Optional[list[str]] = None) -> int:
    from specs.config import ConfigError
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        args = parser().parse_args(argv)
        args.argv = argv
        if not getattr(args, "command", None):
            raise UsageError("a command is required (check, spark-check, fuzz, prove, mutants, replay, list)")
        return args.func(args)
    except (UsageError, ConfigError) as exc:
        print(f"kraft-verify: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("kraft-verify: interrupted", file=sys.stderr)
        return EXIT_STOPPED


if __name__ == "__main__":
    sys.exit(main())
