"""Throughput and memory of the exhaustive checker on one core.

Each measurement runs in a fresh process (so peak RSS belongs to that run alone):
distinct states per second, peak RSS growth per distinct state, the visited store's
own bytes per state, and the time to exhaust the config.

    .venv/bin/python bench/bfs_bench.py                 # the default config, three modes
    .venv/bin/python bench/bfs_bench.py --runs 3 --json bench/results/bfs.json
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

MODES = {
    # name: (flags, symmetry)
    "kafka (replica-order elections)": ({}, False),
    "any-candidate elections, no symmetry": ({"any_candidate_elections": True}, False),
    "any-candidate elections, symmetry": ({"any_candidate_elections": True}, True),
}


def measure(flags: dict, symmetry: bool, bounds: dict) -> dict:
    """One run in this process; called in a child."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from specs import Model, make_config
    import invariants
    from verifier.engines import bfs
    cfg = make_config("kafka", flags=flags, bounds=bounds)
    model = Model(cfg, symmetry=symmetry)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    result = bfs.run(model, tuple(invariants.REGISTRY))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    n = result.distinct_states
    return {"status": result.status, "distinct_states": n, "transitions": result.transitions,
            "depth": result.depth, "seconds": round(seconds, 2), "distinct_per_second": round(n / seconds),
            "peak_rss_mb": round(peak / 2**20, 1), "rss_growth_bytes_per_state": round((peak - base) / n),
            "store_bytes_per_state": round(result.store_bytes / n)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1, help="runs per mode; the median time is reported")
    ap.add_argument("--bound", action="append", default=[], metavar="NAME=N")
    ap.add_argument("--mode", action="append", choices=list(MODES), help="only these modes")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    bounds = {k: int(v) for k, v in (b.split("=", 1) for b in args.bound)}
    if args.child:
        flags, symmetry = MODES[args.child]
        print(json.dumps(measure(flags, symmetry, bounds)))
        return 0
    results = []
    for mode in args.mode or list(MODES):
        runs = []
        for _ in range(args.runs):
            cmd = [sys.executable, __file__, "--child", mode] + sum((["--bound", b] for b in args.bound), [])
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            runs.append(json.loads(out.strip().splitlines()[-1]))
        best = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
        best = dict(best, mode=mode, runs=args.runs,
                    seconds_all=[r["seconds"] for r in runs],
                    distinct_per_second_median=round(statistics.median(r["distinct_per_second"] for r in runs)))
        results.append(best)
        print(f"{mode}: {best['status']}, {best['distinct_states']:,} states, {best['transitions']:,} transitions, "
              f"{best['seconds']}s, {best['distinct_per_second']:,} distinct/s, "
              f"store {best['store_bytes_per_state']} B/state, "
              f"RSS growth {best['rss_growth_bytes_per_state']} B/state, "
              f"peak RSS {best['peak_rss_mb']} MB", flush=True)
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump({"command": " ".join(sys.argv), "bounds": bounds, "cpu_count": os.cpu_count(),
                       "results": results}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
