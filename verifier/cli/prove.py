"""`kraft-verify prove`: the z3 engine (verifier/engines/prove/) for every cluster size up to N, after
checking its own footing: the z3 relation against the concrete controller for this config."""
from __future__ import annotations

import argparse
import time

from specs import MUTANTS, Model, ignored_by_z3, make_config, refused_by_z3, unknown
from verifier.cli.binding import engine, knobs, symbolic
from verifier.cli.common import (UsageError, build_config, console, gate_command, header_line, parse_flag, run_dir,
                                 write_result)
from verifier.cli.progress import ProgressLine
from verifier.core import stop
from verifier.reports.writer import save_scenario
from verifier.core.settings import Limits, Settings
from verifier.studies import gate

SELF_CHECK_SIZES = 4      # the self-check compares N = 1..4 (the encoding is the same formula for any N)


def _validate(args) -> list:
    z3 = symbolic()
    BY_NAME = z3["by_name"]
    for name in ("min_isr", "invariant"):       # repeated: checked and reported once
        if getattr(args, name):
            setattr(args, name, list(dict.fromkeys(getattr(args, name))))
    if not 1 <= args.max_brokers <= 32:
        raise UsageError("--max-brokers must be between 1 and 32")
    if args.depth is None:
        from verifier.engines.prove.gate import GATE_DEPTH
        args.depth = GATE_DEPTH if args.mutants else 6
    if args.depth < 0 or not 0 <= args.bmc_max_brokers <= 32 or args.self_check_samples < 1:
        raise UsageError("--depth must be >= 0, --bmc-max-brokers between 0 and 32, --self-check-samples >= 1")
    for m in args.min_isr or []:
        if m < 1 or m > args.max_brokers:
            raise UsageError(f"--min-isr {m} is outside 1..{args.max_brokers}")
    for name in args.invariant or []:
        if name not in BY_NAME:
            raise unknown("symbolic invariant", name, list(BY_NAME))
    if args.time_budget is not None and not 0 < args.time_budget < float("inf"):
        raise UsageError("--time-budget must be a positive finite number")
    invariants = list(z3["default"])
    return [BY_NAME[n] for n in args.invariant] if args.invariant else invariants


def footing(cfg, max_brokers: int, samples: int, config_changes: bool, out, deadline=None) -> dict:
    """Refuse (exit 2) a config z3 cannot stand for, or whose relation disagrees with the
    concrete controller; say how much was compared. A signal or the time budget (`deadline`)
    ends the self-check early: then the result says `stopped` and why."""
    from specs.symbolic import selfcheck
    refused = refused_by_z3(cfg.rules)
    if refused:
        raise UsageError(f"prove cannot check this config: rule {refused[0]}")
    sizes = tuple(range(1, min(max_brokers, SELF_CHECK_SIZES) + 1))
    result = selfcheck.check(cfg, sizes, samples, config_changes=config_changes, should_stop=lambda: bool(
        stop.requested() or (deadline is not None and time.monotonic() > deadline)))
    if result.stopped:
        why = stop.reason() if stop.requested() else "time budget spent"
        return {"passed": None, "stopped": f"{why} during the self-check (before any verdict)",
                "states": result.states, "events": result.events, "sizes": list(sizes)}
    if result.mismatch:
        raise UsageError(f"prove: self-check failed, the z3 relation disagrees with the concrete controller: "
                         f"{result.mismatch}")
    out.print(f"self-check passed: the z3 relation agrees with the concrete controller on {result.states:,} "
              f"random controller states ({result.events:,} events, N={sizes[0]}..{sizes[-1]})", markup=False)
    return {"passed": True, "states": result.states, "events": result.events, "sizes": list(sizes)}


def _refuse_unencoded_flags(flags: list[str]) -> None:
    """A rule the user sets by name that z3 does not encode (even one only an absent action
    reads) is refused: a proof "with" it would be the proof without it (issue 37). A preset's
    own values of such rules stay allowed where refused_by_z3 allows them."""
    for text in flags:
        name = parse_flag(text)[0]
        why = ignored_by_z3(name)          # a rule z3 cannot encode at all is refused_by_z3's (footing)
        if why:
            raise UsageError(f"prove cannot encode --flag {name} ({why}): a proof would not depend on it; "
                             f"check it with `kraft-verify check --flag {text}`")


def run(args: argparse.Namespace) -> int:
    """An interrupt is polled between solver calls (raising inside z3's C calls leaves its
    objects half-built), so the run stops after the query under way with a report."""
    with stop.polled():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    invariants = _validate(args)
    if args.mutants:
        if args.preset or args.mutant or args.flag:
            raise UsageError("prove --mutants runs every mutant on the kafka preset; drop --preset/--mutant/--flag")
        unused = [opt for opt, on in (("--invariant", args.invariant), ("--fixed-config", args.fixed_config),
                                      ("--time-budget", args.time_budget is not None),
                                      ("--stop-at-first", args.stop_at_first), ("--no-witness", args.no_witness),
                                      ("a second --min-isr", len(args.min_isr or []) > 1)) if on]
        if unused:           # the gate's own choices (every invariant, fixed topic config): else silently ignored
            raise UsageError(f"prove --mutants does not use {', '.join(unused)}: "
                             f"drop {'it' if len(unused) == 1 else 'them'}")
        return run_mutants(args)
    from specs.symbolic import concrete_violations, cti_trace
    from verifier.reports.prove import details, report, size_line
    # the engine is bound first, before the config and the self-check: z3 numbers its terms in
    # the order they are made and its models (a CTI) follow that numbering, so the engine's own
    # terms come first, as they always have
    prove = engine("prove")
    cfg, _ = build_config(argparse.Namespace(**{**vars(args), "min_isr": None}))
    _refuse_unencoded_flags(args.flag or [])
    if not args.invariant and cfg.rules.unclean_recovery_strategy is not None:
        # with recovery rounds, also what a round elects
        invariants.append(symbolic()["by_name"]["RecoveryElectsAReplicaWithEveryAnsweredRecord"])
    out = console()
    run_id, out_dir = run_dir(args.out, "prove", cfg)
    out.print(header_line("prove", cfg, f"N=1..{args.max_brokers} BMC depth {args.depth} for "
                                        f"N<={args.bmc_max_brokers}"), markup=False)
    out.print(f"{'fixed topic config' if args.fixed_config else 'min ISR and unclean.leader.election changes on'}; "
              f"invariants: {', '.join(i.name for i in invariants)}", markup=False)
    started = time.monotonic()
    deadline = started + args.time_budget if args.time_budget is not None else None
    with ProgressLine(out, True, what="prove") as progress:
        progress.status("self-check: the z3 relation against the concrete controller")
        check = footing(cfg, args.max_brokers, args.self_check_samples, not args.fixed_config, out, deadline)
        if check.get("stopped"):
            return _stopped_in_footing(args, out, cfg, invariants, check, started, run_id, out_dir)
        command = " ".join(["kraft-verify"] + args.argv)
        concrete = [i.concrete for i in invariants if i.concrete is not None]

        def on_result(r) -> None:
            if r.cti is not None:
                trace = cti_trace(r.cfg, r.cti, concrete)
                if trace is not None:
                    r.cti_reproduced = concrete_violations(trace) == trace.violated and bool(trace.violated)
                    r.cti_scenario = f"cti-N{r.n}-m{r.min_isr}.json"
                    save_scenario(out_dir, r.cti_scenario, trace, f"z3 CTI N={r.n} min_isr={r.min_isr}", command)
            for k, run in enumerate(r.refutations):
                if run.witness is not None:
                    run.scenario = f"counterexample-N{r.n}-m{r.min_isr}{f'-{k + 1}' if k else ''}.json"
                    save_scenario(out_dir, run.scenario, run.witness, f"z3 BMC N={r.n} min_isr={r.min_isr}", command)
            r.scenario = r.refutations[0].scenario if r.refutations else None
            for line in size_line(r, args.bmc_max_brokers):
                out.print(line, markup=False)
            progress.status(f"N={r.n} min ISR {r.min_isr} answered; the next under way")

        progress.status(f"proving N=1..{args.max_brokers}")
        left = None if deadline is None else max(deadline - time.monotonic(), 0.001)
        settings = Settings(limits=Limits(time_budget=left), knobs=knobs(
            "prove", max_brokers=args.max_brokers, min_isrs=args.min_isr, depth=args.depth,
            bmc_max_brokers=args.bmc_max_brokers, config_changes=not args.fixed_config,
            lemmas=tuple(symbolic()["lemmas"]), stop_at_first=args.stop_at_first, witness=not args.no_witness, on_result=on_result))
        result = prove(Model(cfg, symmetry=False), invariants, settings)
    _name_findings(result.verdicts)
    report(args, out, cfg, result.sizes, result.completed, result.seconds, result.verdicts)
    result.sections = {"self_check": check, "details": details(args, result.sizes, result.completed)}
    summary = write_result(result, Model(cfg, symmetry=False), out_dir, run_id, args, f"z3-{cfg.preset}", out)
    return summary["exit_code"]


def _name_findings(verdicts) -> None:
    """A refuted property's verdict names the FINDINGS.md entry its concrete run is an instance
    of, with the check command that shows it (the model's `finding`)."""
    for v in verdicts:
        if v.trace is not None:
            v.detail = f"{v.detail}: {v.trace.model.finding(v.trace)}"


def _stopped_in_footing(args, out, cfg, invariants, check: dict, started: float, run_id, out_dir) -> int:
    """A run stopped in its self-check: no verdict, a report that says so, exit 3."""
    from verifier.core.result import STOPPED, STOPPED_STATUS, Result, Verdict
    result = Result(STOPPED, time.monotonic() - started, check["stopped"], "z3", sections={"self_check": check},
                    verdicts=[Verdict(i.name, i.kind, STOPPED_STATUS, detail="the self-check did not finish")
                              for i in invariants])
    out.print(f"STOPPED: {check['stopped']} (exit 3: not a pass)", markup=False)
    return write_result(result, Model(cfg, symmetry=False), out_dir, run_id, args, f"z3-{cfg.preset}", out)["exit_code"]


def run_mutants(args: argparse.Namespace) -> int:
    """The mutation gate on z3: each mutant at N = --max-brokers with fixed topic config and every
    symbolic invariant, refuted by a BMC run the concrete model reproduces, at min ISR 2 and then
    3 (or the --min-isr given) for what survives: a kill is a violation kafka does not have
    within the same bound (verifier.engines.prove.gate.py)."""
    from specs.symbolic import witness_trace
    from verifier.engines.prove import REFUTED
    from verifier.engines.prove.gate import baseline, refute_beyond
    n = args.max_brokers
    mins = sorted({min(x, n) for x in (args.min_isr or [2, 3])})
    base = make_config("kafka")
    invariants = list(symbolic()["invariants"]) + list(symbolic()["more"])
    lemmas = symbolic()["lemmas"]
    concrete = [i.concrete for i in invariants]
    command = " ".join(["kraft-verify"] + args.argv)

    def realize(cfg, trace, names):
        return witness_trace(cfg, trace, names, concrete)

    shorts = {m: baseline(base, n, m, args.depth, invariants, lemmas) for m in mins}
    note = "; ".join(f"at min ISR {m} kafka itself breaks {name} at depth {d}, so a mutant breaks it within {d - 1}"
                     for m, short in shorts.items() for name, d in sorted(short.items()))

    def check(cfg):
        r = None
        for m in mins:
            r = refute_beyond(cfg, n, m, args.depth, invariants, lemmas, shorts[m], realize)
            if r.verdict == REFUTED and r.witness is not None:
                break
        return r

    def run_one_for(out, out_dir):
        return lambda cfg: run_one(cfg, out, out_dir)

    def run_one(cfg, out, out_dir) -> dict:
        outside = MUTANTS[cfg.mutant].outside_z3()
        if outside:
            return gate.row(cfg.mutant, gate.OUTSIDE, reason="; ".join(outside))
        footing(cfg, n, max(args.self_check_samples // 4, 10), False, out)
        r = check(cfg)
        if r.verdict != REFUTED:
            return gate.row(cfg.mutant, gate.SURVIVED, seconds=r.seconds, reason=f"not refuted ({r.verdict})")
        if r.witness is None:
            return gate.row(cfg.mutant, gate.SURVIVED, seconds=r.seconds,
                            reason="refuted by z3, but no concrete run reproduces it")
        scenario = f"{cfg.mutant}.json"
        save_scenario(out_dir, scenario, r.witness, f"z3 refutes {cfg.mutant}", command)
        return gate.row(cfg.mutant, gate.KILLED, r.violation, len(r.witness), r.seconds,
                        symbolic_steps=len(r.trace) - 1, min_isr=r.min_isr, scenario=scenario)
    isrs = ", ".join(map(str, mins))
    return gate_command(args, "z3", base, list(MUTANTS), run_one_for,
                        f"z3 mutation gate (N={n}, min ISR {isrs}, BMC depth {args.depth}, fixed topic config"
                        + (f"; {note})" if note else ")"),
                        ("symbolic_steps", "min_isr"), {"brokers": n, "min_isr": mins, "depth": args.depth,
                                                        "kafka_breaks": {str(m): s for m, s in shorts.items()}},
                        f"N={n} min ISR {isrs} BMC depth {args.depth}")

