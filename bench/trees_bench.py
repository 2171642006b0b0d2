"""`check` of two checkouts side by side in one run, alternating, on one thread: each run's
states per second and, per round, the new tree's over the old's (speed drifts up to 40% on this
machine within minutes, so only the ratio of neighbouring runs means anything).

Each run is a fresh `kraft-verify check --workers 1` process of its tree's code (scale_bench.run:
counts and seconds from its summary.json, peak RSS from GNU time); the counts must be equal.

    git worktree add /tmp/old <older commit>
    .venv/bin/python bench/trees_bench.py --old /tmp/old --rounds 2 --json OUT.json -- --brokers 5

`--together` runs the two trees at the same time, one on each core: both then meet the same
host (its drift moves both alike), at the price of sharing the caches and memory bandwidth, so
their states/s are lower than alone and the ratio is a second, independent estimate.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from scale_bench import ROOT, run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="a checkout of the older code")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json")
    ap.add_argument("--together", action="store_true", help="run the two trees at once, one a core")
    ap.add_argument("check_args", nargs="*", help="check's own arguments (after --)")
    args = ap.parse_args()
    rounds = []
    for r in range(args.rounds):
        if args.together:
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(2) as pool:
                both = [pool.submit(run, tree, args.check_args, 1) for tree in (Path(args.old), ROOT)]
                old, new = (job.result() for job in both)
        else:
            old = run(Path(args.old), args.check_args, 1)
            new = run(ROOT, args.check_args, 1)
        if (old["distinct_states"], old["transitions"]) != (new["distinct_states"], new["transitions"]):
            print(f"the trees disagree: {old} against {new}", file=sys.stderr)
            return 1
        row = {"round": r + 1, "old": old, "new": new,
               "new_vs_old": round(new["states_per_second"] / old["states_per_second"], 2)}
        rounds.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"command": " ".join(sys.argv), "rounds": rounds}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
