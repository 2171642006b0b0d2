"""spark-check on local[2] against the local checker on the same config, and Spark's fixed
cost per BFS level (measured on a config whose levels hold a few dozen states).

    .venv/bin/python bench/spark_bench.py --json bench/results/spark.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time


def main() -> int:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from specs import Model, make_config
    from spark.explore import spark_explore
    from spark.session import make_session
    from verifier.bfs import Options, explore
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--preset", default="kafka")
    ap.add_argument("--json")
    args = ap.parse_args()
    spark = make_session(args.master, args.partitions)
    rows = []

    def run(name, cfg):
        t = time.monotonic()
        local = explore(Model(cfg), Model(cfg).properties, options=Options(keep_going=True))
        local_s = time.monotonic() - t
        t = time.monotonic()
        dist = spark_explore(spark, Model(cfg), Model(cfg).properties, partitions=args.partitions)
        spark_s = time.monotonic() - t
        assert (dist.distinct_states, dist.states_per_level) == (local.distinct_states, local.states_per_level)
        levels = len(local.states_per_level)
        row = {"config": name, "distinct_states": local.distinct_states, "levels": levels,
               "local_seconds": round(local_s, 2), "local_states_per_second": round(local.distinct_states / local_s),
               "spark_seconds": round(spark_s, 2), "spark_states_per_second": round(dist.distinct_states / spark_s),
               "spark_seconds_per_level": round(spark_s / levels, 2)}
        rows.append(row)
        print(json.dumps(row), flush=True)

    run("warm-up (2 brokers, no lossy crash)", make_config(args.preset, replicas=[1, 2],
                                                           bounds={"lossy_crashes": 0, "isr_shrinks": 1}))
    run("per-level overhead (2 brokers, no lossy crash)", make_config(args.preset, replicas=[1, 2],
                                                                      bounds={"lossy_crashes": 0, "isr_shrinks": 1}))
    run("default bounds, 3 brokers", make_config(args.preset))
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump({"command": " ".join(sys.argv), "master": args.master, "partitions": args.partitions,
                       "results": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
