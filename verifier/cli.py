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

EXIT_OK, EXIT_VIOLATION, EXIT_INPUT, EXIT_STOPPED = 0, 1, 2, 3


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


def build_config(args: argparse.Namespace):
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
    bounds = dict(data.get("bounds", {}))
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
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from verifier.replay import ScenarioError, run_file
    from verifier.trace import render
    console = Console(highlight=False)
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

def _run_dir(base: str, kind: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = Path(base) / f"{kind}-{stamp}-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def cmd_check(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table
    import invariants as I
    from verifier.bfs import COMPLETE, VIOLATION, Limits, explore
    from verifier.trace import render, to_scenario
    cfg, check_opts = build_config(args)
    try:
        invs = I.select(args.invariant)
    except KeyError as exc:
        raise UsageError(f"unknown invariant {exc}") from None
    limits = Limits(max_depth=args.max_depth if args.max_depth is not None else check_opts.get("max_depth"),
                    max_states=args.max_states if args.max_states is not None else check_opts.get("max_states"),
                    time_budget=args.time_budget if args.time_budget is not None else check_opts.get("time_budget"))
    console = Console(highlight=False)
    console.print(f"kraft-verify check: preset={cfg.preset} mutant={cfg.mutant or '-'} replicas={list(cfg.replicas)} "
                  f"min_isr={cfg.min_isr} bounds={_bounds_text(cfg)}", markup=False)
    result = explore(cfg, invs, limits)
    table = Table(title="invariants")
    table.add_column("invariant")
    table.add_column("result")
    for inv in invs:
        if result.counterexample and inv.name in result.counterexample.violated:
            verdict = "VIOLATED"
        elif result.status == COMPLETE:
            verdict = "holds"
        else:
            verdict = "not violated so far"
        table.add_row(inv.name, verdict)
    console.print(table)
    console.print(f"{result.status}: {result.distinct_states} distinct states, {result.transitions} transitions, "
                  f"depth {result.depth}, {result.seconds:.1f}s, {result.states_per_second:.0f} states/s",
                  markup=False)
    out_dir = _run_dir(args.out, "check")
    summary = {"config": _config_json(cfg), "status": result.status, "distinct_states": result.distinct_states,
               "transitions": result.transitions, "depth": result.depth, "seconds": round(result.seconds, 3),
               "states_per_level": result.states_per_level, "coverage": dict(result.taken),
               "invariants": [inv.name for inv in invs], "stop_reason": result.stop_reason}
    if result.status == VIOLATION:
        trace = result.counterexample
        render(trace, console)
        scenario = to_scenario(trace, f"{cfg.preset}-{'-'.join(trace.violated)}",
                               f"kraft-verify check --preset {cfg.preset}"
                               + (f" --mutant {cfg.mutant}" if cfg.mutant else ""))
        path = out_dir / "counterexample.json"
        path.write_text(json.dumps(scenario, indent=2) + "\n")
        summary["violated"] = trace.violated
        summary["counterexample_length"] = len(trace)
        console.print(f"counterexample written to {path}", markup=False)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    console.print(f"report: {out_dir}", markup=False)
    if result.status == VIOLATION:
        return EXIT_VIOLATION
    if result.status == COMPLETE:
        return EXIT_OK
    console.print(f"STOPPED before completion: {result.stop_reason}", markup=False)
    return EXIT_STOPPED


def _bounds_text(cfg) -> str:
    from dataclasses import asdict
    return ",".join(f"{k}={v}" for k, v in asdict(cfg.bounds).items())


def _config_json(cfg) -> dict:
    from dataclasses import asdict
    return {"preset": cfg.preset, "mutant": cfg.mutant, "replicas": list(cfg.replicas), "min_isr": cfg.min_isr,
            "unclean_leader_election": cfg.unclean_leader_election, "flags": asdict(cfg.flags),
            "bounds": asdict(cfg.bounds)}


# ---------------------------------------------------------------- list

def cmd_list(args: argparse.Namespace) -> int:
    import invariants as I
    from specs import ACTIONS, MUTANTS, PRESET_DOCS
    print("presets:")
    for name, doc in PRESET_DOCS.items():
        print(f"  {name:14} {doc}")
    print("invariants:")
    for inv in I.REGISTRY:
        print(f"  {inv.name:48} ({inv.kind})")
    print("mutants:")
    for name, doc in MUTANTS.items():
        print(f"  {name:36} {doc}")
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
    p = sub.add_parser("check", help="exhaustive breadth-first model check")
    _add_model_args(p)
    p.add_argument("--max-depth", type=int)
    p.add_argument("--max-states", type=int)
    p.add_argument("--time-budget", type=float, help="seconds")
    p.add_argument("--invariant", action="append", help="check only this invariant (repeatable)")
    p.add_argument("--out", default="reports", help="where run reports go")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("list", help="list presets, invariants, mutants and actions")
    p.set_defaults(func=cmd_list)
    return top


def main(argv: Optional[list[str]] = None) -> int:
    from specs.config import ConfigError
    try:
        args = parser().parse_args(argv)
        if not getattr(args, "command", None):
            raise UsageError("a command is required (replay, check, list)")
        return args.func(args)
    except (UsageError, ConfigError) as exc:
        print(f"kraft-verify: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("kraft-verify: interrupted", file=sys.stderr)
        return EXIT_STOPPED


if __name__ == "__main__":
    sys.exit(main())
