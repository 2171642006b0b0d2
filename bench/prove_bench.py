"""Solver time of `kraft-verify prove` on the kafka preset against the cluster size N:
per N, the induction proof (with strengthening) and BMC to a fixed depth, over every
min ISR 1..N.

    .venv/bin/python bench/prove_bench.py --max-brokers 8 --depth 4 --json bench/results/prove.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time


def main() -> int:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from specs import make_config
    from invariants.symbolic import INVARIANTS, LEMMAS, MORE_INVARIANTS
    from verifier.engines.prove import check_size
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-brokers", type=int, default=8)
    ap.add_argument("--depth", type=int, default=4, help="BMC depth")
    ap.add_argument("--json")
    args = ap.parse_args()
    cfg = make_config("kafka")
    invariants = list(INVARIANTS) + list(MORE_INVARIANTS[:2])
    rows = []
    for n in range(1, args.max_brokers + 1):
        start = time.monotonic()
        induction = bmc = 0.0
        verdicts = set()
        for m in range(1, n + 1):
            r = check_size(cfg, n, m, args.depth, invariants=invariants, lemmas=LEMMAS)
            induction += r.induction_seconds
            bmc += r.bmc_seconds
            verdicts.add(r.verdict)
        row = {"brokers": n, "min_isr_values": n, "verdicts": sorted(verdicts), "bmc_depth": args.depth,
               "induction_seconds": round(induction, 2), "bmc_seconds": round(bmc, 2),
               "seconds": round(time.monotonic() - start, 2)}
        rows.append(row)
        print(f"N={n}: {','.join(row['verdicts'])}; induction {induction:.1f}s, BMC depth {args.depth} {bmc:.1f}s, "
              f"total {row['seconds']:.1f}s", flush=True)
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump({"command": " ".join(sys.argv), "results": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
