"""`kraft-verify conform --kafka VERSION`: the model against one Kafka release's own controller
code (docs/conform.md). Scenario files and seeded random walks of the model run through both;
the first step after which any controller field or answer differs is a divergence, shrunk and
written as a scenario file (exit 1); walks that ran their whole budget and never compared an
action the config can enable fail too (exit 1: they did not check what the run claims). Everything
agrees: exit 0. A release, file or config conform cannot compare is one line and exit 2 (a file
whose rules the release lacks "is not applicable"); a run cut by its time budget or a signal,
exit 3."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from specs import PRESETS, RELEASES, Model, ScenarioError, load_scenario, release, run_operations
from verifier.cli.binding import knobs, properties
from verifier.cli.common import UsageError, build_config, console, header_line, run_dir, write_result
from verifier.cli.progress import ProgressLine
from verifier.reports.writer import as_divergence
from verifier.core.settings import Limits, Settings
from verifier.engines.conform.engine import Case
from verifier.engines.conform.run import COVERAGE
from verifier.engines.replay import run_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "specs" / "scenarios"


def _release(text: str):
    found = release(text)
    if found is None:
        raise UsageError(f"--kafka {text}: not a release conform knows (known: {', '.join(RELEASES)}; "
                         "a line such as 4.1 or 4.1.x means its newest patch)")
    return found


def _refuse_model(model: Model, rel, unstable: bool = False) -> None:
    """A model whose steps no release can take cannot be compared with one. `unstable`: the
    release's controller classes may run ELR at an unstable metadata version (conform)."""
    cfg = model.cfg
    if cfg.rules.unclean_recovery_strategy is not None and cfg.bounds.unclean_recoveries > 0:
        raise UsageError("the config lets the model take KIP-966 unclean recovery rounds, which shipped in no "
                         "Kafka release: set unclean_recoveries=0 or drop the recovery preset")
    if cfg.rules.designated_elections and cfg.bounds.admin_elections > 0:
        raise UsageError(f"the config lets the model take designated leader elections, which no Kafka release "
                         f"has (Kafka {rel.version} refuses them): set admin_elections=0 or "
                         "--flag designated_elections=false")
    if _no_elr(cfg, rel) and not unstable:
        raise UsageError(f"Kafka {rel.version} runs ELR only at its unstable metadata version 4.0-IV0, which a real "
                         f"cluster here is not formatted at: --flag elr=false, or `kraft-verify conform` (its "
                         f"controller classes at that version)")
    if cfg.rules.elr and cfg.rules.leader_epoch_bump_on_isr_shrink:
        raise UsageError("ELR needs metadata 4.0-IV1, which no longer bumps the leader epoch on an ISR shrink: "
                         "leader_epoch_bump_on_isr_shrink=true needs --flag elr=false")


def _no_elr(cfg, rel) -> bool:
    """The config runs ELR, which the release runs only at an unstable metadata version (3.9's
    4.0-IV0): conform's walks compare it there (`unstable-elr`), a scenario file and a real
    cluster do not."""
    return cfg.rules.elr and PRESETS[rel.preset].changes.get("elr", True) is False


def set_config(preset: str, name: str, mutant=None):
    """(config, walk plan) of a walk set under `preset`: one of the matrix's bound sets
    (verifier/studies/matrix.py: plain walks) or of conform's own (verifier/engines/conform/sets.py).
    Raises UsageError for another name. `make conform` and the tests walk the sets through here."""
    from verifier.engines.conform.sets import WALK_SETS, walk_config
    from verifier.engines.conform.walks import PLAIN
    from verifier.studies.matrix import BOUND_SETS, Row, row_config
    if name in WALK_SETS:
        return walk_config(preset, name, mutant), WALK_SETS[name].plan
    if name not in BOUND_SETS or name == "recovery":
        known = [b for b in BOUND_SETS if b != "recovery"] + list(WALK_SETS)
        raise UsageError(f"--bound-set {name}: unknown (known: {', '.join(known)})")
    cfg = row_config(Row(preset, name))
    if mutant:
        from specs import with_mutant
        cfg = with_mutant(cfg, mutant)
    return cfg, PLAIN


def _controller_log(args) -> str:
    """The level Kafka's controller classes log at: --controller-log, else the walk set's own."""
    from verifier.engines.conform.sets import controller_log
    return args.controller_log or (controller_log(args.bound_set) if args.bound_set else "")


def _model(args, cfg):
    """The model the walks take: one partition's, or several partitions lifted from it (then
    walks only: a scenario file runs one partition)."""
    from verifier.engines.conform.sets import model_of
    if cfg.partitions > 1 and (args.files or args.scenarios):
        raise UsageError(f"partitions = {cfg.partitions}: scenario files run one partition; compare walks "
                         f"(--walks, --steps) with several")
    return model_of(cfg)


def _bound_set(args):
    """The config and walk plan of --bound-set under the preset; it gives the whole config."""
    given = [o for o in ("config", "replicas", "brokers", "min_isr", "bound", "flag", "spare_brokers")
             if getattr(args, o, None)]
    if given:
        raise UsageError(f"--bound-set gives the whole config: drop --{given[0].replace('_', '-')}")
    cfg, plan = set_config(args.preset, args.bound_set, args.mutant)
    if getattr(args, "topic_partitions", None) not in (None, 1):
        from dataclasses import replace
        cfg = replace(cfg, partitions=args.topic_partitions)
    return cfg, plan


def _file_case(path: str, rel, preset, strict: bool, rules_beside: bool = True):
    """(Case, None) for a scenario file that applies to the release, else (None, why not). A file
    that sets rules the release lacks (the KIP text's, a mutant's) does not apply: --scenarios
    lists it, and a file named on the command line (strict) is a usage error ("not applicable"),
    unless the command line itself puts such a model beside the release (`rules_beside`: a
    --preset, --mutant or --flag the release lacks), which is how a wrong model's divergence is
    reproduced. What no cluster of the release can run is a usage error either way."""
    try:
        data = load_scenario(path)
        model, start, steps, cut = run_operations(data, path, preset=preset)
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None
    outside = model.outside_release(rel.preset) if preset == rel.preset and not (strict and rules_beside) else None
    if outside and strict:
        raise UsageError(f"{path}: not applicable to Kafka {rel.version}: {outside}; to compare that model with the "
                         f"release, name it on the command line (--preset, --mutant or --flag)")
    why = outside or model.impossible_start(start)
    if _no_elr(model.cfg, rel):
        why = f"it runs ELR, which Kafka {rel.version} runs only at its unstable metadata 4.0-IV0 (walks compare it)"
    lacks = next(((i, model.kafka_lacks(label)) for i, (label, _, _) in enumerate(steps, 1)
                  if model.kafka_lacks(label)), None)
    if lacks:
        why = f"step {lacks[0]} ({model.describe(steps[lacks[0] - 1][0])}): {lacks[1]}"
    if why:
        if strict:
            raise UsageError(f"{path}: cannot be compared with Kafka {rel.version}: {why}")
        return None, why
    replayed = run_scenario(data, path, properties=properties(), preset=preset)
    violates = (list(replayed.trace.violated), len(replayed.trace)) if replayed.ok and replayed.trace.violated else None
    return Case(path, model, start, steps, cut=cut, violates=violates), None


def release_of(args, counts: tuple) -> object:
    """The release --kafka names, after the counts (`--depth` >= 1, the others >= 0) and the time
    budget are checked; the model's preset defaults to the release's (conform and cluster-conform)."""
    rel = _release(args.kafka)
    for name in counts:
        value = getattr(args, name)
        if value is not None and value < (1 if name == "depth" else 0):
            raise UsageError(f"--{name} must be >= {1 if name == 'depth' else 0}, got {value}")
    if args.time_budget is not None and not args.time_budget > 0:
        raise UsageError(f"--time-budget must be > 0 seconds, got {args.time_budget}")
    args.preset = args.preset or rel.preset
    return rel


def run(args: argparse.Namespace) -> int:
    from verifier.cli.binding import engine
    from verifier.engines.conform.oracle import OracleError
    from verifier.engines.conform.reach import searched
    rel = release_of(args, ("walks", "depth", "steps"))
    from verifier.engines.conform.walks import PLAIN
    cfg, plan = _bound_set(args) if args.bound_set else (build_config(args, partitions=True)[0], PLAIN)
    model = _model(args, cfg)
    _refuse_model(model, rel, unstable=True)
    preset = cfg.preset
    cases, skipped = [], []
    beside = model.outside_release(rel.preset) is not None     # the command line names another model
    for path in args.files:
        cases.append(_file_case(path, rel, preset, strict=True, rules_beside=beside)[0])
    if args.scenarios:
        for path in sorted(SCENARIOS.glob("*.json")) + sorted(SCENARIOS.glob("findings/*.json")):
            case, why = _file_case(str(path), rel, preset, strict=False)
            (cases.append(case) if case else skipped.append((str(path.relative_to(SCENARIOS.parents[1])), why)))
    walks = args.walks if args.walks is not None else (0 if cases or args.scenarios or args.steps else 1000)
    if not cases and not args.scenarios and not walks and not args.steps:
        raise UsageError("nothing to compare: give scenario files, --scenarios, --walks N or --steps N above 0 "
                         "(a run that compared nothing is never an agreement)")
    out = console()
    walk_set = f" set={args.bound_set}" if args.bound_set else ""
    out.print(header_line("conform", cfg, f"kafka={rel.version}{walk_set} walks={walks} depth={args.depth} "
                                          f"seed={args.seed}"), markup=False)
    run_id, out_dir = run_dir(args.out, f"conform-{rel.version}", cfg)
    try:
        own = knobs("conform", version=rel.version, api=rel.api, preset=preset, cases=tuple(cases), walks=walks,
                    steps=args.steps, depth=args.depth, plan=plan, seed=args.seed,
                    coverage=str(out_dir / "kafka-coverage.exec") if args.coverage else "",
                    controller_log=_controller_log(args), controller_log_file=str(out_dir / "controller.log"),
                    reach=lambda m: searched(engine("kernel"), m))
        with ProgressLine(out, not args.quiet, compared=True) as progress:
            result = engine("conform")(model, (), Settings(limits=Limits(time_budget=args.time_budget), knobs=own),
                                       progress)
    except OracleError as exc:
        raise UsageError(str(exc)) from None
    return _report(args, rel, cfg, model, result, cases, skipped, run_id, out_dir, out, plan)


def _report(args, rel, cfg, model, result, cases, skipped, run_id, out_dir, out, plan) -> int:
    outcome = result.facts
    d, divergence = outcome.divergence, None
    if d:
        divergence = _divergence(d, rel, result.verdicts[0])
    actions = result.sections.get("actions", [])
    designated = model.kafka_lacks(("elect", "designated"))     # a kind of elect no release has
    if designated and not any(r["action"] == "elect designated" for r in actions):
        actions.append({"action": "elect designated", "compared": 0, "walks": 0, "with_error": 0,
                        "status": "in no Kafka release", "why": designated})
    result.sections = {"details": {
        "kafka": rel.version, "read": rel.read, "model_preset": cfg.preset,
        "walks": {"bound_set": args.bound_set, "walks": outcome.walks, "walk_steps": outcome.walk_steps,
                  "depth": args.depth, "seed": args.seed, **plan.describe(),
                  "refusable": [model.describe(label) for label in outcome.refusable]},
        "files": [{"path": p, "steps": n, "cut_short": c, "model_violates": (case.violates or [None])[0]}
                  for (p, n, c), case in zip(outcome.files, cases)],
        "not_applicable": [{"path": p, "why": w} for p, w in skipped], "steps_per_action": outcome.ops,
        "actions": actions, "errors_seen": dict(sorted(outcome.errors.items())), "divergence": divergence,
        "kafka_coverage": result.sections.get("kafka_coverage")}}
    summary = write_result(result, model, out_dir, run_id, args, f"conform-{rel.version}", None, also="conform.json")
    _print(out, rel, outcome, cases, skipped, divergence, summary)
    out.print(f"report: {out_dir}", markup=False)
    return summary["exit_code"]


def _reproduce(model, rel) -> str:
    """The command that compares a divergence file again: the release alone, or, for a model
    the release lacks, with the options that name it (a file with such rules is otherwise not
    applicable)."""
    from specs import config_summary
    cfg, options = model.cfg, []
    if model.outside_release(rel.preset):
        if cfg.preset != rel.preset:
            options += ["--preset", cfg.preset]
        if cfg.mutant:
            options += ["--mutant", cfg.mutant]
        options += [f"--flag {k}={str(v).lower()}" for k, v in config_summary(cfg)["flags"].items()]
    return " ".join(["kraft-verify conform --kafka", rel.version, *options, "FILE"])


def _divergence(d, rel, verdict) -> dict:
    """The shrunk divergence, and how the writer saves its trace (the verdict's): a replay
    scenario whose last expectation is the model's own values at the divergent step (replay
    passes while the model says so), Kafka's in the notes."""
    steps = d.case.steps[:d.step]
    where = f"step {d.step} ({d.case.model.describe(d.label)})" if d.step else "the start"
    fields = "; ".join(f"{x.field}: model {json.dumps(x.model)}, Kafka {json.dumps(x.kafka)}" for x in d.diffs)
    text = f"diverges from Kafka {rel.version}'s controller after {where}: {fields}"
    as_divergence(verdict, text, f"conform-{rel.version}-divergence", "conform divergence",
                  text + f" (Kafka wrote: {', '.join(d.records) or 'nothing'}; found from {d.case.name}). "
                         f"Reproduce: {_reproduce(d.case.model, rel)}")
    return {"summary": text, "step": d.step, "label": d.case.model.describe(d.label) if d.step else None,
            "fields": [{"field": x.field, "model": x.model, "kafka": x.kafka} for x in d.diffs],
            "kafka_records": d.records, "found_from": d.case.name, "scenario": "divergence.json",
            "steps": [d.case.model.describe(label) for label, _, _ in steps]}


def _print(out, rel, result, cases, skipped, divergence, summary) -> None:
    from rich.table import Table
    for (path, n, cut), case in zip(result.files, cases):
        out.print(f"  {path}: {n} steps" + (f" (the model stops at {cut})" if cut else ""), markup=False)
        if case.violates and not divergence:
            names, step = case.violates
            out.print(f"    the model violates {', '.join(names)} after step {step} in states Kafka "
                      f"{rel.version}'s controller agrees with at every step", markup=False)
    for path, why in skipped:
        out.print(f"  not applicable: {path}: {why}", markup=False)
    if result.walks:
        counts = ", ".join(f"{k} {n:,}" + (f" ({result.with_error[k]:,} with an error)" if result.with_error.get(k)
                                           else "") for k, n in sorted(result.walk_ops.items()))
        out.print(f"  compared in walks, per action: {counts}", markup=False)
        out.print("  errors answered: " + (", ".join(f"{e} {n:,}" for e, n in sorted(result.errors.items()))
                                           or "none"), markup=False)
        nowhere = [r for r in (summary.get("details") or {}).get("actions", []) if r["status"] == "not reachable here"]
        if nowhere:
            out.print(f"  not reachable here, as no state of this config enables them (an exhaustive search): "
                      f"{', '.join(r['action'] for r in nowhere)}", markup=False)
    reached = (summary.get("details") or {}).get("kafka_coverage")
    if reached:
        from verifier.engines.conform.jacoco import percent
        out.print(f"  Kafka {rel.version}'s controller code in scope reached (JaCoCo): lines {percent(reached['lines'])}, "
                  f"branches {percent(reached['branches'])}; of the branches never taken, "
                  f"{reached['unreached']['with_a_reason']:,} have a reason, {reached['unreached']['without']:,} "
                  f"none yet (report.md lists them)", markup=False)
    coverage = next((v for v in summary["invariants"] if v["name"] == COVERAGE), None)
    verdict = (f"DIVERGES from Kafka {rel.version}" if divergence else
               f"STOPPED ({result.stopped})" if result.stopped else
               f"NOT COMPLETE against Kafka {rel.version} (exit 3, not a pass): {coverage['detail']}; every step "
               f"compared agrees" if coverage and coverage.get("detail") else f"agrees with Kafka {rel.version}")
    out.print(f"{verdict}: {result.cases:,} traces ({len(result.files)} scenario files, {result.walks:,} walks), "
              f"{result.steps:,} steps compared in {result.seconds:.1f}s ({result.steps_per_second:,.0f} steps/s)",
              markup=False)
    if divergence:
        table = Table(title=f"shrunk divergence ({len(divergence['steps'])} steps)")
        table.add_column("step", justify="right")
        table.add_column("action")
        for i, label in enumerate(divergence["steps"], 1):
            table.add_row(str(i), label)
        out.print(table)
        out.print(divergence["summary"], markup=False)
        out.print(f"Kafka wrote: {', '.join(divergence['kafka_records']) or 'nothing'}", markup=False)
    for w in summary["warnings"]:
        out.print(f"warning: {w}", markup=False)
