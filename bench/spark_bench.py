"""spark-check against the local checker, side by side in one run, as an operator runs them
(the CLI in a subprocess, JVM start included in the wall time, the engine's own time from
summary.json): `check --workers 1` and `--workers 2`, then spark-check on local[2] with no
checkpoint, on local[2] with a checkpoint directory, and on the shared-nothing namespace
cluster (spark/cluster.py: two 1-core workers, HDFS checkpoint). Every run must give the same
counts. From the checkpointed runs' manifests: seconds per level against the level's new
states and the visited set before it. Memory: the peak RSS of the driver's Python process and
of its JVM (in local mode that JVM hosts the executors too; on the cluster it is the driver
alone).

    .venv/bin/python bench/spark_bench.py --json bench/results/spark.json
    .venv/bin/python bench/spark_bench.py --only overhead          # the per-level cost alone
    .venv/bin/python bench/spark_bench.py --only kernel            # 48 million states: check against
                                                                   # spark-check's kernel executors
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAIN = ["--brokers", "4", "--max-depth", "12"]                 # issue 13's measurement config
KERNEL = ["--brokers", "4", "--bound", "records=2", "--max-depth", "18"]   # 48.3 million states (issue 40)
TINY = ["--brokers", "2", "--bound", "lossy_crashes=0", "--bound", "isr_shrinks=1"]   # levels of a few dozen states


def status_kb(pid: int, field: str) -> int:
    """A kB field of /proc/PID/status (VmHWM: peak resident set; VmRSS: now), 0 if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _hwm(pid: int) -> int:
    return status_kb(pid, "VmHWM")


def children(pid: int) -> list[int]:
    """The children of every thread of `pid` (a JVM starts PySpark's workers from a thread of
    its own, which /proc/PID/task/PID/children, the main thread's, does not list)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _jvms(pid: int) -> list[int]:
    """The JVMs under a driver (spark-submit's launcher JVM first, then the one it execs)."""
    found, todo = [], children(pid)
    while todo:
        c = todo.pop()
        try:
            if b"java" in Path(f"/proc/{c}/cmdline").read_bytes().split(b"\0")[0]:
                found.append(c)
        except OSError:
            continue
        todo.extend(children(c))
    return found


def cli(command: str, args: list[str], out: Path, extra: list[str] = ()) -> dict:
    """One CLI run: wall seconds, the engine's report, peak RSS of the driver and its JVM."""
    argv = [sys.executable, "-m", "verifier.cli", command, *args, "--out", str(out), "-q", *extra]
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = {"driver_kb": 0, "jvm_kb": 0}
    done = threading.Event()

    def watch():
        while not done.is_set():
            peak["driver_kb"] = max(peak["driver_kb"], _hwm(proc.pid))
            for jvm in _jvms(proc.pid):
                peak["jvm_kb"] = max(peak["jvm_kb"], _hwm(jvm))
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    stdout, stderr = proc.communicate()
    done.set()
    watcher.join()
    wall = time.monotonic() - t0
    if proc.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}\n{stderr[-2000:]}")
    summary = json.loads(max(out.glob(f"{command}-*/summary.json"), key=lambda p: p.stat().st_mtime).read_text())
    counts = summary["counts"]
    return {"command": f"kraft-verify {command} {' '.join(args + list(extra))}", "wall_seconds": round(wall, 2),
            "seconds": counts["seconds"], "distinct_states": counts["distinct_states"],
            "transitions": counts["transitions"], "states_per_level": counts["states_per_level"],
            "states_per_second": round(counts["distinct_states"] / counts["seconds"]),
            "driver_peak_mb": round(peak["driver_kb"] / 1024, 1), "jvm_peak_mb": round(peak["jvm_kb"] / 1024, 1)}


def per_level(checkpoint: Path) -> list[dict]:
    """Seconds per level from a spark-check manifest, with the level's size and the visited set
    it was checked against."""
    levels = json.loads((checkpoint / "manifest.json").read_text())["levels"]
    rows, visited, before = [], 0, 0.0
    for meta in levels:
        seconds = meta["totals"]["seconds"]
        rows.append({"level": meta["level"], "new": meta["states"], "visited_before": visited,
                     "seconds": round(seconds - before, 3), **({"tasks": meta["tasks"]} if "tasks" in meta else {})})
        visited += meta["states"]
        before = seconds
    return rows


def fit(levels: list[dict]) -> dict:
    """Least squares over the levels run as Spark jobs (frontier of at least --driver-levels'
    default, 5000 states), after the first (which also starts the Python workers): seconds =
    fixed + per_frontier x (states of the level expanded) + per_new x (states written)."""
    rows = [(1.0, levels[k - 1]["new"], levels[k]["new"], levels[k]["seconds"])
            for k in range(1, len(levels)) if levels[k - 1]["new"] >= 5000][1:]
    n = 3
    m = [[sum(r[i] * r[j] for r in rows) for j in range(n)] + [sum(r[i] * r[n] for r in rows)] for i in range(n)]
    for c in range(n):               # Gauss-Jordan on the normal equations
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    fixed, frontier, new = (m[i][n] / m[i][i] for i in range(n))
    worst = max(abs(fixed + frontier * r[1] + new * r[2] - r[3]) for r in rows)
    return {"levels_fitted": len(rows), "fixed_seconds": round(fixed, 3),
            "us_per_frontier_state": round(frontier * 1e6, 2), "us_per_new_state": round(new * 1e6, 2),
            "worst_residual_seconds": round(worst, 3)}


def spark(args: list[str], master: str, work: Path, partitions: int | None = None, checkpoint: bool = True,
          driver_memory: str | None = None) -> dict:
    ck = Path(tempfile.mkdtemp(dir=work, prefix="ck-"))
    extra = ["--master", master] + (["--checkpoint-dir", str(ck)] if checkpoint else [])
    if driver_memory:             # on local[N] the executors run in the driver's JVM
        extra += ["--driver-memory", driver_memory]
    if partitions:
        extra += ["--partitions", str(partitions)]
    row = cli("spark-check", args, work / "out", extra)
    if not checkpoint:
        return row
    row["levels"] = per_level(ck)
    if sum(1 for level in row["levels"] if level["new"] >= 5000) >= 8:
        row["per_level_fit"] = fit(row["levels"])
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    ap.add_argument("--only", choices=["overhead", "main", "large", "kernel"], action="append",
                    help="run only these parts (default: overhead, visited and main)")
    ap.add_argument("--large", default="--brokers 4",
                    help="the config of the 'large' part, as one argument (default '--brokers 4'), run by check "
                         "--workers 2 and spark-check local[2]: the driver's memory against the main run's, and "
                         "per-level time up to a larger visited set")
    args = ap.parse_args()
    large = args.large.split()
    parts = args.only or ["overhead", "main"]
    results: dict = {"note": "one invocation", "parts": {}}
    parts_out = results["parts"]

    def keep(name: str, result) -> None:
        parts_out[name] = {"command": f".venv/bin/python bench/spark_bench.py --only {name}",
                           "cpu_count": os.cpu_count(), "result": result}
    with tempfile.TemporaryDirectory(prefix="spark-bench-") as tmp:
        work = Path(tmp)
        (work / "out").mkdir()
        if "overhead" in parts:
            row = spark(TINY + ["--driver-levels", "0"], "local[2]", work)     # every level a Spark job
            levels = row["levels"][2:]      # level 1's job also starts the Python workers
            row["first_job_seconds"] = row["levels"][1]["seconds"]
            row["seconds_per_level"] = round(sum(r["seconds"] for r in levels) / len(levels), 3)
            keep("overhead", row)
            print(json.dumps({k: v for k, v in row.items() if k != "levels"}), flush=True)
        if "main" in parts:
            runs = [("check --workers 1", lambda: cli("check", MAIN, work / "out", ["--workers", "1"])),
                    ("check --workers 2", lambda: cli("check", MAIN, work / "out", ["--workers", "2"])),
                    ("spark-check local[2], no checkpoint", lambda: spark(MAIN, "local[2]", work, checkpoint=False)),
                    ("spark-check local[2], checkpoint", lambda: spark(MAIN, "local[2]", work)),
                    ("spark-check namespace cluster, HDFS", lambda: _cluster(MAIN))]
            keep("main", _side_by_side(runs))
        if "kernel" in parts:         # both with the kernel: check's threads, spark-check's executors
            runs = [("check --workers 2", lambda: cli("check", KERNEL, work / "out", ["--workers", "2"])),
                    ("spark-check local[2], no checkpoint",
                     lambda: spark(KERNEL, "local[2]", work, checkpoint=False, driver_memory="6g")),
                    ("spark-check local[2], no checkpoint, --exchange shuffle",
                     lambda: spark(KERNEL + ["--exchange", "shuffle"], "local[2]", work, checkpoint=False,
                                   driver_memory="6g")),
                    ("spark-check local[2], checkpoint", lambda: spark(KERNEL, "local[2]", work, driver_memory="6g"))]
            keep("kernel", _side_by_side(runs))
        if "large" in parts:
            runs = [("check --workers 2", lambda: cli("check", large, work / "out", ["--workers", "2"])),
                    ("spark-check local[2]", lambda: spark(large, "local[2]", work))]
            keep("large", _side_by_side(runs))
    if args.json:                 # parts not run this time keep their earlier results
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            earlier = json.loads(path.read_text()).get("parts", {})
        except (OSError, ValueError):
            earlier = {}
        results["parts"] = {**earlier, **parts_out}
        results["note"] = "each part from its own invocation; the runs within a part side by side in one"
        path.write_text(json.dumps(results, indent=1) + "\n")
    return 0


def _side_by_side(runs) -> list[dict]:
    rows = []
    for name, run in runs:
        row = dict(run(), engine=name)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k not in ("levels", "states_per_level")}), flush=True)
    first = rows[0]
    for row in rows:
        if (row["distinct_states"], row["transitions"], row["states_per_level"]) != \
           (first["distinct_states"], first["transitions"], first["states_per_level"]):
            raise SystemExit(f"{row['engine']} counted differently from {first['engine']}")
        row["vs_first"] = round(row["states_per_second"] / first["states_per_second"], 2)
    return rows


def _cluster(args: list[str]) -> dict:
    """The driver in its own namespace too; its peak RSS is measured from outside."""
    from spark.cluster import Cluster
    base = Path(f"/var/tmp/kraft-verify-bench-cluster-{os.getpid()}")
    with Cluster(base) as c:
        out = base / "out"
        argv = [sys.executable, "-m", "verifier.cli", "spark-check", "--master", c.master_url, *args, "-q",
                "--checkpoint-dir", f"{c.hdfs_url}/ck", "--out", str(out)]
        t0 = time.monotonic()
        proc = c.driver(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, err = proc.communicate()
        wall = time.monotonic() - t0
        if proc.returncode not in (0, 1, 3):
            raise SystemExit(f"the cluster run failed: {err.decode()[-500:]}")
        summary = json.loads(next(out.glob("*/summary.json")).read_text())
    shutil.rmtree(base, ignore_errors=True)         # its HDFS disks and logs
    counts = summary["counts"]
    return {"command": "kraft-verify spark-check " + " ".join(argv[4:]), "wall_seconds": round(wall, 2),
            "seconds": counts["seconds"], "distinct_states": counts["distinct_states"],
            "transitions": counts["transitions"], "states_per_level": counts["states_per_level"],
            "states_per_second": round(counts["distinct_states"] / counts["seconds"])}


if __name__ == "__main__":
    sys.exit(main())
