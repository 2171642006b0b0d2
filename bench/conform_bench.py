"""Conform at its budgets, what its walks cover, and its speed (BENCHMARKS.md, "Conform").

    python bench/conform_bench.py --steps 100000 --json bench/results/conform.json   # make conform
    python bench/conform_bench.py --only mutants --json bench/results/conform-mutants.json
    python bench/conform_bench.py --only speed --json bench/results/conform-speed.json

`--only agreement` (with the default): every release against its own controller code: the
scenario files that apply, then seeded walks over each set `make conform` walks (the matrix's
four bound sets and conform's own, verifier/engines/conform/sets.py) until `--steps` walk steps
were compared. One row per release and set, then per release and action the walk steps compared
(an election per type) and the errors answered. Exit 1 if any set diverges, if an action a
release has was compared fewer than `--min-per-action` times (default 100) in its walks, or if
an error the model's steps can produce was never answered in them (NOT_CONTROLLER and
INVALID_REQUEST only answer raw requests, which only scenario files send: those must be
answered in the files). The actions no release has are listed as excluded, with the reason.
`--only mutants`: every mutant of the catalogue against the newest release, `--walks` (300)
walks of every set: which diverge, after how many walks in each set, and which change a rule the
controller's code reads (exit 1 unless exactly those diverge).
`--only speed`: side by side in one run, on the same walks of the default config against the
newest release: the model alone (walk generation), the driver JVM alone (the projected traces
replayed through it), and both end to end.
"""
from __future__ import annotations

import argparse
import ast
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from specs import MUTANTS, RELEASES, Model, load_scenario, make_config, run_operations  # noqa: E402
from specs.controller import ERRORS  # noqa: E402
from verifier.cli.conform import set_config  # noqa: E402
from verifier.engines.conform.engine import Case, check, walk  # noqa: E402
from verifier.engines.conform.jacoco import measure, percent  # noqa: E402
from verifier.engines.conform.oracle import Oracle  # noqa: E402
from verifier.core.settings import Settings  # noqa: E402
from verifier.engines.conform import run as C  # noqa: E402
from verifier.engines.conform.run import walk_rng  # noqa: E402
from verifier.engines.conform.sets import (CONFORM_SETS, PARTITION_SETS, UNSTABLE_SETS, WALK_SETS, controller_log,  # noqa: E402
                                           model_of)

ROOT = Path(__file__).resolve().parents[1]
# Errors the model answers only to a raw request (a scenario's alter_partition or register),
# never to one of its own steps: a broker's AlterPartition names the epochs the controller
# published (metadata reaches brokers atomically), so never newer ones (NOT_CONTROLLER); its
# sender leads the epoch it names (a leader change bumps the epoch, and FENCED_LEADER_EPOCH is
# checked first), its ISR is drawn from the replicas of the partition epoch it names and it
# never asks for RECOVERING (INVALID_REQUEST); and the designated election, the model's other
# INVALID_REQUEST, is in no release.
FILES_ONLY = {"NOT_CONTROLLER": "only a raw AlterPartition names epochs above the controller's",
              "INVALID_REQUEST": "only a raw AlterPartition comes from a non-leader, names a replica outside the "
                                 "partition or asks for RECOVERING with others in the ISR"}


def compare(rel, model, **knobs):
    """The conform engine as the command line runs it: its Outcome."""
    own = C.Knobs(version=rel.version, api=rel.api, preset=rel.preset, **knobs)
    return C.run(model, (), Settings(knobs=own)).facts


# Kafka's controller classes log at DEBUG for the scenario files (the walk sets name their own
# level, sets.py): the debug paths run and are compared; the log goes nowhere.
SCENARIO_LOG = "debug"


def scenario_cases(rel) -> tuple[list[Case], int]:
    cases, skipped = [], 0
    for path in sorted((ROOT / "specs/scenarios").glob("*.json")) + sorted((ROOT / "specs/scenarios").glob("findings/*.json")):
        model, start, steps, _ = run_operations(load_scenario(str(path)), str(path), preset=rel.preset)
        if (model.outside_release(rel.preset) or model.impossible_start(start)
                or any(model.kafka_lacks(label) for label, _, _ in steps)):
            skipped += 1
            continue
        cases.append(Case(str(path.relative_to(ROOT)), model, start, steps))
    return cases, skipped


def kinds(model) -> tuple[list[str], dict[str, str]]:
    """(the kinds of step a release has, the excluded ones with why): every action, elections
    per type, but what no Kafka release has."""
    have, excluded = [], {}
    for name in model.action_names:
        for k in ([f"{name} {t}" for t in ("preferred", "unclean", "designated")] if name == "elect" else [name]):
            why = model.kafka_lacks(tuple(k.split()))
            (excluded.__setitem__(k, why) if why else have.append(k))
    return have, excluded


def _add(into: dict, counts: dict) -> None:
    for k, n in counts.items():
        into[k] = into.get(k, 0) + n


def agreement(steps: int, seed: int, releases: list[str], minimum: int) -> tuple[list[dict], dict, bool, dict]:
    """The rows, the walks' coverage of the model's actions and errors, whether all is well, and
    per release what the comparisons reached of Kafka's controller code (JaCoCo, jacoco.py:
    every compare of a release appends to one execution file, read after its last)."""
    rows, coverage, code, ok = [], {}, {}, True
    scratch = tempfile.TemporaryDirectory(prefix="kraft-verify-jacoco-")
    for version in releases:
        rel = RELEASES[version]
        probes = str(Path(scratch.name) / f"kafka-{version}.exec")
        cases, skipped = scenario_cases(rel)
        out = compare(rel, None, cases=tuple(cases), coverage=probes, coverage_report=False,
                      controller_log=SCENARIO_LOG)
        rows.append({"kafka": version, "input": f"scenario files ({skipped} not applicable)", "traces": out.cases,
                     "steps": out.steps, "seconds": round(out.seconds, 1), "diverged": out.divergence is not None,
                     "per_action": out.ops, "errors": out.errors})
        walked, errors = {}, {}
        for name in CONFORM_SETS:
            cfg, plan = set_config(rel.preset, name)
            w = compare(rel, Model(cfg, symmetry=False), steps=steps, seed=seed, plan=plan, coverage=probes,
                        coverage_report=False, controller_log=controller_log(name))
            rows.append({"kafka": version, "input": f"walks, {name}", "traces": w.walks, "steps": w.walk_steps,
                         "seconds": round(w.seconds, 1), "steps_per_second": round(w.steps_per_second),
                         "diverged": w.divergence is not None, "per_action": w.walk_ops, "errors": w.errors})
            _add(walked, w.walk_ops)
            _add(errors, w.errors)
        unstable = [n for n in UNSTABLE_SETS if not make_config(rel.preset).rules.elr]    # 3.9's ELR (sets.py)
        for name in PARTITION_SETS + tuple(unstable):   # several partitions: a share of the steps (sets.py)
            cfg, plan = set_config(rel.preset, name)
            w = compare(rel, model_of(cfg), steps=max(1, int(steps * WALK_SETS[name].share)), seed=seed, plan=plan,
                        coverage=probes, coverage_report=False, controller_log=controller_log(name))
            rows.append({"kafka": version, "input": f"walks, {name}", "traces": w.walks, "steps": w.walk_steps,
                         "seconds": round(w.seconds, 1), "steps_per_second": round(w.steps_per_second),
                         "diverged": w.divergence is not None, "per_action": w.walk_ops, "errors": w.errors})
        have, excluded = kinds(Model(set_config(rel.preset, "default")[0], symmetry=False))
        short = {k: walked.get(k, 0) for k in have if walked.get(k, 0) < minimum}
        unseen = [e for e in ERRORS if e not in FILES_ONLY and not errors.get(e)]
        not_in_files = [e for e in FILES_ONLY if not out.errors.get(e)]
        coverage[version] = {"walk_steps_per_action": {k: walked.get(k, 0) for k in have}, "errors_in_walks": errors,
                             "errors_in_files": out.errors, "excluded": excluded, "below_minimum": short,
                             "errors_never_in_walks": unseen, "files_only_errors_not_in_files": not_in_files}
        for row in rows[-1 - len(CONFORM_SETS) - len(PARTITION_SETS) - len(unstable):]:
            ok &= not row["diverged"]
            print(f"Kafka {row['kafka']:6} {row['input']:36} {row['traces']:>7,} traces {row['steps']:>9,} steps "
                  f"{row['seconds']:>6.1f}s {'DIVERGED' if row['diverged'] else 'agrees'}", flush=True)
        for k, n in short.items():
            print(f"Kafka {version}: {k} compared {n} times in the walks (at least {minimum} wanted)")
        for e in unseen:
            print(f"Kafka {version}: no walk step was answered {e}")
        for e in not_in_files:
            print(f"Kafka {version}: no scenario file's step was answered {e}")
        ok &= not short and not unseen and not not_in_files
        code[version] = got = measure(Path(probes), w.classpath, version, Path(scratch.name))
        print(f"Kafka {version}: its controller code in scope reached: lines {percent(got['lines'])}, "
              f"branches {percent(got['branches'])}; never taken: {got['unreached']['with_a_reason']} "
              f"with a reason, {got['unreached']['without']} without", flush=True)
    scratch.cleanup()
    _table(coverage, releases)
    _code_table(code, releases)
    return rows, coverage, ok, code


def _code_table(code: dict, releases: list[str]) -> None:
    """Per class in scope, the branches reached, one column per release (BENCHMARKS.md)."""
    def per_class(version: str) -> dict:
        sums: dict = {}
        for m in code[version]["methods"]:
            got = sums.setdefault(m["class"].split("$")[0], [0, 0])
            got[0], got[1] = got[0] + m["branches"][0], got[1] + m["branches"][1]
        return sums
    tables = {v: per_class(v) for v in releases}
    print("\n| branches reached | " + " | ".join(releases) + " |\n|---|" + "---|" * len(releases))
    for cls in sorted({c for t in tables.values() for c in t}):
        print(f"| {cls} | " + " | ".join(percent(tables[v].get(cls, [0, 0])) for v in releases) + " |")
    print("| every method in scope | " + " | ".join(percent(code[v]["branches"]) for v in releases) + " |")
    print("| lines, every method in scope | " + " | ".join(percent(code[v]["lines"]) for v in releases) + " |")
    print("| branches never taken: with a reason / none yet | " + " | ".join(
        f"{code[v]['unreached']['with_a_reason']} / {code[v]['unreached']['without']}" for v in releases) + " |")


def _table(coverage: dict, releases: list[str]) -> None:
    """Per action and per error, one column per release (what BENCHMARKS.md shows)."""
    print("\n| walk steps compared | " + " | ".join(releases) + " |\n|---|" + "---|" * len(releases))
    actions = list(coverage[releases[0]]["walk_steps_per_action"])
    for k in actions:
        print(f"| {k} | " + " | ".join(f"{coverage[v]['walk_steps_per_action'].get(k, 0):,}" for v in releases) + " |")
    for e in ERRORS:
        print(f"| answered {e} | " + " | ".join(
            f"{coverage[v]['errors_in_walks'].get(e, 0):,} (files {coverage[v]['errors_in_files'].get(e, 0)})"
            for v in releases) + " |")
    for k, why in coverage[releases[0]]["excluded"].items():
        print(f"| {k} | excluded: {why} |")


def controller_rules() -> set[str]:
    """Rules the controller's code reads (specs/controller.py, specs/pipeline.py), outside the
    KIP-966 recovery round, which no release has (tests/verifier/engines/test_conform.py reads the same)."""
    names = set()
    for path in (ROOT / "specs/controller.py", ROOT / "specs/pipeline.py"):
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, ast.FunctionDef) and fn.name != "unclean_recovery":
                names |= {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)
                          and isinstance(n.value, ast.Name) and n.value.id == "rules"}
    return names


def mutants(walks: int, seed: int) -> list[dict]:
    """Every mutant over each set in turn (`--walks` walks each): the first set it diverges in,
    and, per set, after how many walks it diverges there (None: it agrees over all of them)."""
    rel, rules, rows = RELEASES["4.4.0"], controller_rules(), []
    for name in sorted(MUTANTS):
        row = {"mutant": name, "changes_controller": bool(set(MUTANTS[name].changes) & rules), "diverged": False,
               "walks_to_divergence_per_set": {}}
        t = time.perf_counter()
        for bound_set in CONFORM_SETS:
            cfg, plan = set_config(rel.preset, bound_set, name)
            out = compare(rel, Model(cfg, symmetry=False), walks=walks, seed=seed, plan=plan)
            d = out.divergence
            row["walks_to_divergence_per_set"][bound_set] = out.walks if d is not None else None
            if d is not None and not row["diverged"]:
                row.update(diverged=True, set=bound_set, walks=out.walks, shrunk_steps=d.step,
                           field=d.diffs[0].field, at=d.case.model.describe(d.label) if d.step else "the start")
        row["seconds"] = round(time.perf_counter() - t, 1)
        rows.append(row)
        per_set = ", ".join(f"{k} {'-' if v is None else v}" for k, v in row["walks_to_divergence_per_set"].items())
        print(f"{name:36} {'controller' if row['changes_controller'] else 'no controller rule':18} "
              + (f"diverges ({row['shrunk_steps']} steps, {row['field']}); walks to divergence per set: {per_set}"
                 if row["diverged"] else f"agrees over {walks} walks of every set"), flush=True)
    return rows


def speed(walks: int, seed: int) -> dict:
    rel = RELEASES["4.4.0"]
    model = Model(set_config(rel.preset, "default")[0], symmetry=False)
    t = time.perf_counter()
    cases = [walk(model, walk_rng(seed, i), 50, f"walk {i}") for i in range(walks)]
    model_seconds = time.perf_counter() - t
    n_steps = sum(len(c.steps) for c in cases)
    traces = []
    for c in cases:
        ops, before = [], c.initial
        for label, after, _ in c.steps:
            ops.append(model.kafka_request(before, label, after))
            before = after
        traces.append((model.kafka_start(c.initial), ops))
    with Oracle(rel.version, rel.api) as oracle:
        for init, ops in traces[:200]:        # warm the JVM up first
            oracle.run(init, ops)
        t = time.perf_counter()
        for init, ops in traces:
            oracle.run(init, ops)
        jvm_seconds = time.perf_counter() - t
        t = time.perf_counter()
        for c in cases:
            check(oracle, c)
        compare_seconds = time.perf_counter() - t
    t = time.perf_counter()
    out = compare(rel, model, walks=walks, seed=seed)
    e2e_seconds = time.perf_counter() - t
    result = {"walks": walks, "steps": n_steps,
              "model_steps_per_second": round(n_steps / model_seconds),
              "driver_steps_per_second": round(n_steps / jvm_seconds),
              "projected_compare_steps_per_second": round(n_steps / compare_seconds),
              "end_to_end_steps_per_second": round(out.walk_steps / e2e_seconds),
              "end_to_end_walks_per_second": round(out.walks / e2e_seconds, 1),
              "end_to_end_seconds_incl_jvm_start": round(e2e_seconds, 1)}
    for k, v in result.items():
        print(f"{k}: {v:,}" if isinstance(v, int) else f"{k}: {v}")
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["agreement", "mutants", "speed"])
    ap.add_argument("--steps", type=int, default=100_000, help="walk steps per release and set")
    ap.add_argument("--min-per-action", type=int, default=100, help="walk steps each action needs per release")
    ap.add_argument("--walks", type=int, help="walks for --only speed (2000) and per set for --only mutants (300)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--release", action="append", help="only these releases (default: every one)")
    ap.add_argument("--json")
    args = ap.parse_args()
    out, ok = {"command": " ".join(["python"] + sys.argv)}, True
    if args.only in (None, "agreement"):
        releases = args.release or sorted(RELEASES, reverse=True)
        out["agreement"], out["coverage"], ok, out["kafka_code"] = agreement(args.steps, args.seed, releases,
                                                                            args.min_per_action)
    if args.only == "mutants":
        out["mutants"] = mutants(args.walks or 300, args.seed)
        ok = all(r["diverged"] == r["changes_controller"] for r in out["mutants"])
    if args.only in (None, "speed"):
        out["speed"] = speed(args.walks or 2000, args.seed)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
