"""`make spark-check`, the overnight default, run to the end once with its peak memory
sampled from /proc every second: the driver's Python process, its JVM (in local mode the
executors' too) and the whole process tree (Python workers included). The figures go to
BENCHMARKS.md ("The overnight default"); the raw ones to the --json file. CPU seconds are
sampled from /proc too (each process's utime + stime, the last value seen), because the JVM
that make's child starts is never reaped by this process, so its rusage never counted it.

    .venv/bin/python bench/overnight_bench.py --json bench/results/overnight.json

Run it alone on the machine: it is the measurement. A rerun after a crash resumes (the
Makefile adds --resume when the checkpoint has a manifest); its wall time is then the
resumed part only, which the results say. `--kill-at N` makes the crash: once the manifest
names level N it waits `--kill-delay` seconds (in the middle of level N + 1) and SIGKILLs the
whole process tree, the driver, its JVM and the Python workers; run it again without the
option to resume. The machine's memory in use (MemTotal - MemAvailable) and the disk's
(statvfs of the project's file system, against its use at the start) are sampled too.

`--checkpoint URL` puts the checkpoint on a Hadoop file system (SPARK_CHECKPOINT=URL; HDFS
alone: `python -m spark.cluster hdfs 1`), where make cannot see a manifest: pass `--resume`
to resume. The level the kill waits for is then the last `level N:` line the run printed (a
level's line comes once the manifest names it), and the checkpoint's bytes are the run's own
figure (summary.json's `memory.disk_bytes`).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINT = ROOT / "reports" / "spark-checkpoint"     # the Makefile's SPARK_CHECKPOINT
sys.path.insert(0, str(ROOT / "bench"))

from spark_bench import children, status_kb  # noqa: E402


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children(p)
    return out


def _argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _cpu(pid: int):
    """((pid, start time), utime + stime in seconds) of a live process, or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    return (pid, fields[19]), (int(fields[11]) + int(fields[12])) / tick


def _size(top: Path) -> int:
    """Bytes of the files under `top` (the checkpoint the run leaves)."""
    return sum(p.stat().st_size for p in top.rglob("*") if p.is_file())


def _machine_mb() -> float:
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines() if ":" in line)
    return (int(info["MemTotal"].split()[0]) - int(info["MemAvailable"].split()[0])) / 1024


def _disk_used() -> int:
    st = os.statvfs(ROOT)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def _level_of(line: str) -> int:
    """N of a `level N: ...` progress line (printed once the manifest names level N), else -1."""
    head = line.split(":", 1)[0].split()
    return int(head[1]) if len(head) == 2 and head[0] == "level" and head[1].isdigit() else -1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    ap.add_argument("--kill-at", type=int, help="SIGKILL the run once the manifest names this level")
    ap.add_argument("--kill-delay", type=float, default=30.0, help="seconds after that (default 30)")
    ap.add_argument("--checkpoint", help="a Hadoop URL for the checkpoint (default: the Makefile's, local)")
    ap.add_argument("--resume", action="store_true", help="resume the --checkpoint URL's run")
    args = ap.parse_args()
    make = ["make", "spark-check"]
    if args.checkpoint:
        make += [f"SPARK_CHECKPOINT={args.checkpoint}", f"RESUME={'--resume' if args.resume else ''}"]
        resumed = args.resume
    else:
        resumed = (CHECKPOINT / "manifest.json").exists()
    t0, started = time.monotonic(), time.time()
    proc = subprocess.Popen(make, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    named = [-1]                                      # the last level the run's lines named
    peak = {"driver_mb": 0.0, "jvm_mb": 0.0, "tree_mb": 0.0, "machine_mb": 0.0}
    disk0, disk_peak, killed = _disk_used(), 0, {}
    cpu_of: dict[tuple[int, str], float] = {}        # (pid, start time) -> CPU seconds last seen
    done = threading.Event()

    def watch():
        nonlocal disk_peak
        named_at = None
        while not done.is_set():
            tree = _tree(proc.pid)
            peak["machine_mb"] = max(peak["machine_mb"], _machine_mb())
            disk_peak = max(disk_peak, _disk_used() - disk0)
            if args.kill_at is not None and not killed:
                if named_at is None and named[0] >= args.kill_at:
                    named_at = time.monotonic()
                if named_at is not None and time.monotonic() - named_at >= args.kill_delay:
                    for p in tree:
                        try:
                            os.kill(p, 9)
                        except ProcessLookupError:
                            pass
                    killed.update(level=named[0] + 1, seconds=round(time.monotonic() - t0, 1))
                    continue
            total = sum(status_kb(p, "VmRSS") for p in tree) / 1024
            peak["tree_mb"] = max(peak["tree_mb"], total)
            for p in tree:
                seen = _cpu(p)
                if seen:
                    cpu_of[seen[0]] = seen[1]
                argv = _argv(p)
                if argv and argv[0].endswith("java"):
                    peak["jvm_mb"] = max(peak["jvm_mb"], status_kb(p, "VmHWM") / 1024)
                elif "spark-check" in argv and any(a.endswith("kraft-verify") for a in argv[:2]):
                    peak["driver_mb"] = max(peak["driver_mb"], status_kb(p, "VmHWM") / 1024)
            time.sleep(1.0)

    threading.Thread(target=watch, daemon=True).start()
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        named[0] = max(named[0], _level_of(line))
        print(line, end="", flush=True)
    code = proc.wait()
    done.set()
    wall = time.monotonic() - t0
    cpu = sum(cpu_of.values())
    # this run's summary only: a run that died without one must not borrow an earlier run's
    summaries = sorted((p for p in (ROOT / "reports").glob("spark-check-*/summary.json")
                        if p.stat().st_mtime >= started), key=lambda p: p.stat().st_mtime)
    summary = json.loads(summaries[-1].read_text()) if summaries else {}
    counts = summary.get("counts", {})
    result = {"command": " ".join(make), "exit_code": summary.get("exit_code"), "make_exit_code": code,
              "resumed": resumed, "wall_seconds": round(wall, 1),
              "cpu_seconds": round(cpu, 1),
              "engine_seconds": counts.get("seconds"), "distinct_states": counts.get("distinct_states"),
              "transitions": counts.get("transitions"), "depth": counts.get("depth"),
              "states_per_level": counts.get("states_per_level"), "result": summary.get("result"),
              "peak_mb": {k: round(v, 1) for k, v in peak.items()}, "cpu_count": os.cpu_count(),
              "disk_peak_bytes": disk_peak, "killed_in_level": killed or None,
              "checkpoint_bytes": summary.get("memory", {}).get("disk_bytes") if args.checkpoint
              else _size(CHECKPOINT) if CHECKPOINT.exists() else 0}
    print(json.dumps({k: v for k, v in result.items() if k != "states_per_level"}))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
