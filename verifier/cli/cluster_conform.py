"""`kraft-verify cluster-conform --kafka VERSION [FILE...] [--walks N] [--seed S]`: the model's
traces acted out on a real KRaft cluster of that release and compared after every step
(docs/cluster.md). Agree: exit 0. A divergence (shrunk to the case it was found in, written as a
scenario file naming the step, the field, the model's value and Kafka's): exit 1. A file or step
the cluster cannot be made to take, a cluster that does not start, a missing tool: one line,
exit 2. A time budget or a signal: exit 3, with what was compared so far.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from specs import Model, PartitionsModel, config_to_dict, lift_property
from verifier.cli.binding import engine, knobs, properties
from verifier.cli.common import UsageError, build_config, console, header_line, run_dir, write_result
from verifier.cli.progress import ProgressLine
from verifier.engines.cluster.explain import parts
from verifier.cli.conform import _file_case, _refuse_model, release_of
from verifier.core.settings import Limits, Settings
from verifier.reports.writer import as_divergence


def run(args: argparse.Namespace) -> int:
    from verifier.engines.cluster import steps as ST
    from verifier.engines.cluster.dist import DistError, build
    rel = release_of(args, ("walks", "depth", "shrink"))
    cfg = build_config(args, partitions=True)[0]
    if cfg.partitions > 1 and args.files:
        raise UsageError(f"partitions = {cfg.partitions}: scenario files run one partition; act out walks "
                         f"(--walks, --depth) with several")
    model = PartitionsModel(cfg, symmetry=False) if cfg.partitions > 1 else Model(cfg, symmetry=False)
    _refuse_model(model, rel)
    if cfg.rules.auto_leader_rebalance:
        raise UsageError("the real clusters run with auto.leader.rebalance.enable=false (cluster.py): "
                         "--flag auto_leader_rebalance=true is for conform, against the controller classes")
    cases = []
    beside = model.outside_release(rel.preset) is not None     # the command line names another model
    for path in args.files:
        case = _file_case(path, rel, cfg.preset, strict=True, rules_beside=beside)[0]
        s = case.initial
        if s != case.model.init_states()[0]:
            raise UsageError(f"{path}: not applicable: a real cluster starts from a fresh topic, and the file starts "
                             f"from another state")
        for i, (label, after, _) in enumerate(case.steps, 1):
            why = ST.not_drivable(case.model, s, label)
            if why:
                raise UsageError(f"{path}: not drivable on a real cluster: step {i} "
                                 f"({case.model.describe(label)}): {why}")
            s = after
        cases.append((path, case.model, [label for label, _, _ in case.steps], case.cut))
    walks = args.walks if args.walks is not None else (0 if cases else 1)
    try:
        dist = build(rel.version)
    except DistError as exc:
        raise UsageError(str(exc)) from None
    out = console()
    out.print(header_line("cluster-conform", cfg, f"kafka={rel.version} walks={walks} depth={args.depth} "
                                                  f"seed={args.seed}"), markup=False)
    run_id, out_dir = run_dir(args.out, f"cluster-conform-{rel.version}", cfg)

    own = knobs("cluster-conform", version=rel.version, dist=dist, cases=tuple(cases), walks=walks,
                depth=args.depth, shrink=args.shrink, seed=args.seed, keep_logs=str(out_dir / "metadata"))
    settings = Settings(limits=Limits(time_budget=args.time_budget), knobs=own)
    with ProgressLine(out, True) as progress:
        invs = properties() if cfg.partitions == 1 else tuple(lift_property(inv) for inv in properties())
        result = engine("cluster-conform")(model, invs, settings, progress)
    return _report(args, rel, cfg, model, result, run_id, out_dir, out)


def _report(args, rel, cfg, model, result, run_id, out_dir: Path, out) -> int:
    o = result.facts
    d = o.divergence
    if d is not None:       # the verdict's trace, saved by the writer as this scenario
        fields = "; ".join(f"{f['field']}: model {json.dumps(f['model'])}, Kafka {json.dumps(f['kafka'])}"
                           for f in d.divergence["fields"])
        text = (f"{d.name} diverges from a real Kafka {rel.version} cluster at step {d.divergence['step']} "
                f"({d.divergence['label']}), in {d.divergence['where']}: {fields}")
        as_divergence(result.verdicts[0], text, f"cluster-conform-{rel.version}-divergence",
                      "cluster-conform divergence",
                      text + f" (Kafka wrote: {', '.join(d.divergence['kafka_records']) or 'nothing'}). "
                             f"Reproduce: kraft-verify cluster-conform --kafka {rel.version} FILE")
    result.sections = {"details": {
        "kafka": rel.version, "model_preset": cfg.preset,
        "cases": [_case_json(c, o.models[id(c)]) for c in o.cases],
        "steps_per_action": o.ops, "taken_by_the_cluster_per_action": o.silent,
        "error": o.error}}
    summary = write_result(result, model, out_dir, run_id, args, f"cluster-conform-{rel.version}", None,
                           also="cluster.json")
    _print(out, rel, o)
    out.print(f"report: {out_dir}", markup=False)
    return summary["exit_code"]


def _after(c, k: int):
    """The model's state after driven step k (its last path entry), which the cluster matched."""
    at = [state for (_, state), j in zip(c.path, c.step_of) if j == k]
    return at[-1] if at else None


def _state_cells(m, state) -> dict:
    """The partition and every replica as the cluster showed them and the model has them (they
    agreed): report.html's step table."""
    if state is None:
        return {}
    each = parts(state)
    return {"partition": m.partition_cells(state), "brokers": m.timeline(state),
            "acknowledged": [(f"p{p}/" if len(each) > 1 else "") + f"r{r}" for p, part in enumerate(each)
                             for r in part.hist.acked]}


def _case_json(c, m) -> dict:
    """A case, with the config its model ran (a scenario file's own bounds and rules, which the
    summary's config, the command line's, does not show) and the topic's partitions."""
    return {"name": c.name, "config": config_to_dict(m.cfg), "partitions": m.cfg.partitions,
            "steps": [{"step": m.describe(s.label), "index": s.index, "taken": s.taken,
                       "taken_by_the_cluster": [m.describe(x) for x in s.silent],
                       "kafka_records": s.records, "seconds": round(s.seconds, 2),
                       **_state_cells(m, _after(c, k))} for k, s in enumerate(c.steps, 1)],
            "skipped": c.skipped, "not_drivable": c.not_drivable, "divergence": c.divergence,
            "metadata_log": c.metadata_log,
            "acknowledged_lost": list(c.lost), "acknowledged_kept": list(c.kept),
            "consumer_reads": c.readable, "model_stops_at": c.cut,
            "model_violates": c.violated, "setup_seconds": round(c.setup_seconds, 1), "seconds": round(c.seconds, 1)}


def _print(out, rel, o) -> None:
    for c in o.cases:
        facts = []
        if c.lost:
            facts.append(f"acknowledged record(s) {', '.join(c.lost)} LOST on the real cluster "
                         f"(no replica holds them; a consumer reads {', '.join(c.readable or []) or 'nothing'})")
        if c.kept:
            facts.append(f"acknowledged record(s) {', '.join(c.kept)} kept (a replica holds them)")
        if c.cut:
            facts.append(f"the model stops at {c.cut}")
        if c.violated:
            facts.append("the model violates " + ", ".join(f"{n} after step {k}" for n, k in sorted(
                c.violated.items(), key=lambda x: x[1])))
        verdict = ("DIVERGES" if c.divergence else "NOT DRIVABLE" if c.not_drivable else "agrees")
        out.print(f"{c.name}: {verdict}, {len(c.steps)} steps in {c.seconds:.0f}s (cluster start "
                  f"{c.setup_seconds:.0f}s)" + ("; " + "; ".join(facts) if facts else ""), markup=False)
        if c.not_drivable:
            out.print(f"  not drivable: {c.not_drivable}", markup=False)
        if c.divergence:
            dv = c.divergence
            out.print(f"  step {dv['step']} ({dv['label']}), {dv['where']}:", markup=False)
            for f in dv["fields"]:
                out.print(f"    {f['field']}: model {json.dumps(f['model'])}, Kafka {json.dumps(f['kafka'])}",
                          markup=False)
    verdict = ("DIVERGES from" if o.divergence else f"STOPPED ({o.stopped})" if o.stopped else
               f"ERROR ({o.error})" if o.error else "agrees with")
    lost = sorted({r for c in o.cases for r in c.lost})
    out.print(f"{verdict} a real Kafka {rel.version} cluster: {len(o.cases)} case(s), {o.steps} steps compared in "
              f"{o.seconds:.0f}s" + (f"; Kafka LOST acknowledged {', '.join(lost)}" if lost else ""), markup=False)
