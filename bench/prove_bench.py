"""Solver time of `kraft-verify prove` on the kafka preset against the cluster size N, and each
property's verdict per N: per N, the induction proof with strengthening (one for every min ISR
when topic-config changes are on) and BMC of the properties it does not prove, to a fixed depth,
over every min ISR 1..N, with the concrete runs that realize a refutation (as the command does).

    .venv/bin/python bench/prove_bench.py --max-brokers 8 --depth 6 --bmc-max-brokers 4 \
        --json bench/results/prove.json
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
    from specs.symbolic import witness_trace
    from invariants.symbolic import DEFAULT, LEMMAS
    from verifier.engines.prove import prove
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-brokers", type=int, default=8)
    ap.add_argument("--depth", type=int, default=6, help="BMC depth")
    ap.add_argument("--bmc-max-brokers", type=int, default=4)
    ap.add_argument("--fixed-config", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    cfg = make_config("kafka")
    invariants = list(DEFAULT)
    concrete = [i.concrete for i in invariants]
    rows = []

    def on_result(r) -> None:
        row = next((x for x in rows if x["brokers"] == r.n), None)
        if row is None:
            row = {"brokers": r.n, "min_isr_values": 0, "properties": {}, "induction_seconds": 0.0,
                   "bmc_seconds": 0.0, "seconds": 0.0}
            rows.append(row)
        row["min_isr_values"] += 1
        for inv in invariants:
            row["properties"].setdefault(inv.name, set()).add(r.verdict_of(inv.name))
        row["induction_seconds"] += r.induction_seconds
        row["bmc_seconds"] += r.bmc_seconds
        row["seconds"] += r.seconds
        if r.min_isr == r.n:
            for key in ("induction_seconds", "bmc_seconds", "seconds"):
                row[key] = round(row[key], 2)
            row["properties"] = {k: sorted(v) for k, v in row["properties"].items()}
            print(f"N={r.n}: induction {row['induction_seconds']:.1f}s, BMC {row['bmc_seconds']:.1f}s, "
                  f"total {row['seconds']:.1f}s; "
                  + "; ".join(f"{k} {'/'.join(v)}" for k, v in row["properties"].items()), flush=True)

    start = time.monotonic()
    prove(cfg, args.max_brokers, None, args.depth, on_result=on_result, invariants=invariants, lemmas=LEMMAS,
          config_changes=not args.fixed_config, bmc_max_brokers=args.bmc_max_brokers,
          realize=lambda c, trace, names: witness_trace(c, trace, names, concrete))
    total = round(time.monotonic() - start, 1)
    print(f"all sizes: {total}s", flush=True)
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump({"command": " ".join(sys.argv), "seconds": total, "results": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
