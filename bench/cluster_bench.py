"""Real clusters: cost and the nightly walks (BENCHMARKS.md, "Real clusters").

    python bench/cluster_bench.py --releases 4.4.0,3.9.2 --steps 300 --json bench/results/cluster.json
    python bench/cluster_bench.py --releases 4.4.0,3.9.2 --partitions 2 --steps 100 --json bench/results/cluster-partitions.json

For each release: seeded random walks of cluster-conform (each on a fresh cluster) until at least
--steps driven steps were compared, with bounds wide enough that every step the harness can cause
is drawn (crashes, lossy crashes, controlled shutdowns, config changes, admin elections). Records
per release: walks, steps, divergences (each with its report), cluster start time, seconds per
step, steps per hour and the peak resident memory of the Kafka JVMs (sampled from /proc every
second). With --partitions N, the walks are the lifted model's on a topic of N partitions.
Exit 1 if any walk diverged, 2 if a cluster could not be had. One release at a time: the
machine has two cores and a cluster's timing is what the harness waits on.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOUNDS = ["records=3", "fences=2", "crashes=1", "lossy_crashes=1", "clean_shutdowns=1", "config_changes=1",
          "admin_elections=1", "isr_shrinks=2"]


def _jvm_rss_mb() -> float:
    total = 0
    for pid in subprocess.run(["pgrep", "-f", "kafka.Kafka"], capture_output=True, text=True).stdout.split():
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def run_release(version: str, steps: int, seed: int, depth: int, out: Path, partitions: int = 1) -> dict:
    peak, stop = [0.0], threading.Event()

    def sample():
        while not stop.wait(1.0):
            peak[0] = max(peak[0], _jvm_rss_mb())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    row = {"release": version, "partitions": partitions, "walks": 0, "steps": 0, "divergences": [], "setup_seconds": [], "case_seconds": [],
           "exit_codes": []}
    start, walk_seed = time.monotonic(), seed
    while row["steps"] < steps:
        args = [sys.executable, "-m", "verifier.cli", "cluster-conform", "--kafka", version, "--walks", "5",
                "--depth", str(depth), "--seed", str(walk_seed), "--out", str(out), "--partitions", str(partitions)]
        for b in BOUNDS:
            args += ["--bound", b]
        p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
        row["exit_codes"].append(p.returncode)
        report = next((ln.split("report: ", 1)[1] for ln in p.stdout.splitlines() if ln.startswith("report: ")), None)
        if report is None or p.returncode == 2:
            row["error"] = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
            break
        details = json.loads((Path(report) / "cluster.json").read_text())["details"]
        for case in details["cases"]:
            row["walks"] += 1
            row["steps"] += len(case["steps"])
            row["setup_seconds"].append(case["setup_seconds"])
            row["case_seconds"].append(case["seconds"])
            if case["divergence"]:
                row["divergences"].append({"walk": case["name"], "report": report, "divergence": case["divergence"]})
        walk_seed += 1
        if p.returncode == 1:
            break
    stop.set()
    wall = time.monotonic() - start
    row.update(seconds=round(wall), peak_jvm_rss_mb=round(peak[0]),
               mean_setup_seconds=round(sum(row["setup_seconds"]) / max(1, len(row["setup_seconds"])), 1),
               seconds_per_step=round((sum(row["case_seconds"]) - sum(row["setup_seconds"])) / max(1, row["steps"]), 2),
               steps_per_hour=round(row["steps"] / wall * 3600) if wall else 0)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--releases", default="4.4.0,3.9.2")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--depth", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "reports" / "cluster-bench"))
    ap.add_argument("--partitions", type=int, default=1, help="the topic's partitions (the lifted model's walks)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rows = []
    for v in a.releases.split(","):
        row = run_release(v, a.steps, a.seed, a.depth, Path(a.out), a.partitions)
        rows.append(row)
        print(f"{v}{'' if a.partitions == 1 else f' ({a.partitions} partitions)'}: {row['walks']} walks, {row['steps']} steps, {len(row['divergences'])} divergences, "
              f"start {row['mean_setup_seconds']} s, {row['seconds_per_step']} s/step, {row['steps_per_hour']} "
              f"steps/h, peak JVM RSS {row['peak_jvm_rss_mb']} MB, {row['seconds']} s" + (f", ERROR {row['error']}"
                                                                                       if row.get("error") else ""),
              flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"bounds": BOUNDS, "rows": rows}, indent=2) + "\n")
    if any(r.get("error") for r in rows):
        return 2
    return 1 if any(r["divergences"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
