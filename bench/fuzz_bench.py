"""Examples and steps per second of `kraft-verify fuzz` on the kafka preset (no violation, so
every example runs to its step count), per replication factor.

    .venv/bin/python bench/fuzz_bench.py --json bench/results/fuzz.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys


def main() -> int:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from specs import Model, deep_bounds, make_config
    import invariants
    from verifier.core.settings import Settings
    from verifier.engines import fuzz
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=500)
    ap.add_argument("--brokers", type=int, action="append", help="replication factors (default 3, 5, 7)")
    ap.add_argument("--json")
    args = ap.parse_args()
    results = []
    for n in args.brokers or [3, 5, 7]:
        model = Model(make_config("kafka", replicas=list(range(1, n + 1)), bounds=deep_bounds(n)), symmetry=False)
        r = fuzz.run(model, tuple(invariants.REGISTRY), Settings(knobs=fuzz.Knobs(examples=args.examples)))
        rec = r.facts
        row = {"brokers": n, "status": r.status, "examples": rec.examples, "steps": rec.steps,
               "seconds": round(r.seconds, 2), "examples_per_second": round(rec.examples / r.seconds, 1),
               "steps_per_second": round(rec.steps / r.seconds)}
        results.append(row)
        print(f"RF {n}: {r.status}, {rec.examples:,} examples, {rec.steps:,} steps, {r.seconds:.1f}s, "
              f"{row['examples_per_second']} examples/s, {row['steps_per_second']:,} steps/s", flush=True)
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump({"command": " ".join(sys.argv), "results": results}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
