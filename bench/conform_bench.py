"""Conform at its budgets, and its speed (BENCHMARKS.md, "Conform").

    python bench/conform_bench.py --steps 100000 --json bench/results/conform.json   # make conform
    python bench/conform_bench.py --only speed --json bench/results/conform-speed.json

`--only agreement` (with the default): every release against its own controller code: the
scenario files that apply, then seeded walks over each of four bound sets until `--steps` walk
steps were compared; one row per release and set, exit 1 if any diverges.
`--only speed`: side by side in one run, on the same walks of the default config against the
newest release: the model alone (walk generation), the driver JVM alone (the projected traces
replayed through it, the steps per second one driver answers), and both end to end (walks and
steps per second, what `conform` reaches).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from specs import RELEASES, Model, load_scenario, run_operations  # noqa: E402
from verifier.engines.conform.engine import Case, check, walk  # noqa: E402
from verifier.engines.conform.oracle import Oracle  # noqa: E402
from verifier.engines.conform.run import conform, walk_rng  # noqa: E402
from verifier.studies.matrix import Row, row_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SETS = ("default", "config", "min-isr-above-rf", "admin+reassignment")


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


def agreement(steps: int, seed: int, releases: list[str]) -> tuple[list[dict], bool]:
    rows, ok = [], True
    for version in releases:
        rel = RELEASES[version]
        cases, skipped = scenario_cases(rel)
        out = conform(rel.version, rel.api, rel.preset, cases=cases)
        rows.append({"kafka": version, "input": f"scenario files ({skipped} not applicable)", "traces": out.cases,
                     "steps": out.steps, "seconds": round(out.seconds, 1), "diverged": out.divergence is not None})
        for bound_set in SETS:
            model = Model(row_config(Row(rel.preset, bound_set)), symmetry=False)
            out = conform(rel.version, rel.api, rel.preset, cases=[], model=model, steps=steps, seed=seed)
            rows.append({"kafka": version, "input": f"walks, {bound_set}", "traces": out.walks,
                         "steps": out.walk_steps, "seconds": round(out.seconds, 1),
                         "steps_per_second": round(out.steps_per_second), "diverged": out.divergence is not None})
        for row in rows[-1 - len(SETS):]:
            ok &= not row["diverged"]
            print(f"Kafka {row['kafka']:6} {row['input']:36} {row['traces']:>7,} traces {row['steps']:>9,} steps "
                  f"{row['seconds']:>6.1f}s {'DIVERGED' if row['diverged'] else 'agrees'}", flush=True)
    return rows, ok


def speed(walks: int, seed: int) -> dict:
    rel = RELEASES["4.4.0"]
    model = Model(row_config(Row(rel.preset, "default")), symmetry=False)
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
    out = conform(rel.version, rel.api, rel.preset, cases=[], model=model, walks=walks, seed=seed)
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
    ap.add_argument("--only", choices=["agreement", "speed"])
    ap.add_argument("--steps", type=int, default=100_000, help="walk steps per release and bound set")
    ap.add_argument("--walks", type=int, default=2000, help="walks for --only speed")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--release", action="append", help="only these releases (default: every one)")
    ap.add_argument("--json")
    args = ap.parse_args()
    out, ok = {"command": " ".join(["python"] + sys.argv)}, True
    if args.only in (None, "agreement"):
        out["agreement"], ok = agreement(args.steps, args.seed, args.release or sorted(RELEASES, reverse=True))
    if args.only in (None, "speed"):
        out["speed"] = speed(args.walks, args.seed)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
