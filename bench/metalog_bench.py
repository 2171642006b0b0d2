"""A real cluster's metadata log of many partitions, made and validated (issue 60: validate-log on a
multi-partition log from a real cluster; its throughput and memory in BENCHMARKS).

    .venv/bin/python bench/metalog_bench.py --kafka 4.4.0 --topics 5 --partitions 10 --rounds 20 \\
        --json bench/results/issue60/metalog-4.4.0.json --keep bench/results/issue60/metalog-4.4.0

A cluster of a controller and four brokers (ELR on where the release formats with it) gets
`--topics` topics of `--partitions` partitions, three replicas each spread over the brokers, min
ISR 2; then `--rounds` rounds of faults, one broker a round in turn: its link to the controller
cut until its session lapses (fenced: it leaves every ISR it is in) and healed (unfenced), or it
is killed and restarted (an unclean shutdown: a registration the controller judges unclean), or
stopped and restarted (a clean one), and now and then a topic's min.insync.replicas changed. The
controller's log is copied and `kraft-verify validate-log` run on it under /usr/bin/time: its
records, partitions, seconds, records/s and peak RSS, and whether every change was explained.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    from kafka.protocol.admin import CreateTopicsRequest, IncrementalAlterConfigsRequest

    from verifier.engines.cluster import wire as W
    from verifier.engines.cluster.cluster import Cluster
    from verifier.engines.cluster.dist import build
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kafka", default="4.4.0")
    p.add_argument("--topics", type=int, default=5)
    p.add_argument("--partitions", type=int, default=10)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--json", required=True)
    p.add_argument("--keep", help="where the controller's log is kept")
    args = p.parse_args(argv)
    dist = build(args.kafka)
    brokers = (1, 2, 3, 4)
    elr = () if args.kafka.startswith("3.") else ("eligible.leader.replicas.version=1",)
    started = time.monotonic()
    with Cluster(dist, brokers, (1, 2, 3), 2, False, session_ms=3000, features=elr) as c:
        for node in c.nodes.values():
            node.start()
        time.sleep(10)
        T = CreateTopicsRequest.CreatableTopic
        topics = [T(name=f"t{t}", num_partitions=-1, replication_factor=-1,
                    assignments=[T.CreatableReplicaAssignment(
                        partition_index=i, broker_ids=[brokers[(i + k) % 4] for k in range(3)])
                        for i in range(args.partitions)],
                    configs=[T.CreatableTopicConfig(name="min.insync.replicas", value="2")])
                  for t in range(args.topics)]
        W.call(c.controller_port, CreateTopicsRequest(topics=topics, timeout_ms=30000, validate_only=False), 45.0)
        time.sleep(3)
        for r in range(args.rounds):
            b = brokers[r % 4]
            node = c.nodes[b]
            kind = r % 3
            if kind == 0:                     # fenced, then unfenced
                c.cut_controller(b)
                time.sleep(5)
                c.heal_controller(b)
            elif kind == 1:                   # an unclean shutdown, then a registration
                node.kill()
                time.sleep(4.5)
                node.start()
            else:                             # a clean one
                node.stop()
                time.sleep(1)
                node.start()
            time.sleep(6)
            if r % 5 == 4:                    # a min.insync.replicas change of a topic
                R = IncrementalAlterConfigsRequest.AlterConfigsResource
                W.call(c.controller_port, IncrementalAlterConfigsRequest(resources=[R(
                    resource_type=2, resource_name=f"t{r % args.topics}", configs=[R.AlterableConfig(
                        name="min.insync.replicas", config_operation=0, value=str(1 + r % 3))])],
                    validate_only=False), 45.0)
        time.sleep(3)
        work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="metalog-bench-"))
        work.mkdir(parents=True, exist_ok=True)
        source = c.controller.data / "__cluster_metadata-0"
        for f in source.iterdir():
            if f.suffix in (".log", ".checkpoint"):
                shutil.copy2(f, work / f.name)
    made = time.monotonic() - started
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run(["/usr/bin/time", "-v", str(ROOT / ".venv/bin/kraft-verify"), "validate-log", "--kafka",
                              args.kafka, str(work), "-q", "--out", out], capture_output=True, text=True)
        summary = json.loads(next(Path(out).glob("*/summary.json")).read_text())
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", run.stderr)
    row = {"kafka": args.kafka, "topics": args.topics, "partitions_per_topic": args.partitions, "rounds": args.rounds,
           "exit": run.returncode, "result": summary["result"], **summary["counts"],
           "verdicts": {v["name"]: v["status"] for v in summary["invariants"]},
           "validate_wall": wall.group(1) if wall else None,
           "validate_peak_rss_mb": int(rss.group(1)) // 1024 if rss else None, "cluster_seconds": round(made, 1),
           "log": str(work)}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(row, indent=1) + "\n")
    print(json.dumps(row, indent=1))
    print(run.stdout[-3000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
