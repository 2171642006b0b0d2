"""The scale ladder: from the default config towards realistic ones, one bound at a time.

Per config: `check --estimate` (a forecast from a short sample), then the exhaustive run with 2
and with 1 worker, each a fresh process, one after another (never two at once: the machine
has two cores). A run that the time budget stops is recorded as stopped, with what it reached,
and the rung keeps the forecast as its estimate (the one-worker run is then skipped: it would
be slower still). Peak memory is the largest sum of the resident
set sizes of the check process and its workers, sampled every half second from /proc.

Results are appended to a JSON-lines file as each run ends, so a long ladder that is stopped
keeps what it measured; `--missing` finishes it, `--only NAME` reruns one rung, `--estimates-only` refreshes the
forecasts against the exact counts already in the file, and `--table` prints the file as the
markdown table of BENCHMARKS.md.

    .venv/bin/python bench/ladder_bench.py --jsonl bench/results/ladder.jsonl
    .venv/bin/python bench/ladder_bench.py --jsonl bench/results/ladder.jsonl --table
    .venv/bin/python bench/ladder_bench.py --jsonl ladder-disk.jsonl --visited disk   # issue 58's ladder
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LADDER = {
    "default": [],
    "records=2": ["--bound", "records=2"],
    "brokers 4": ["--brokers", "4"],
    "crashes=1": ["--bound", "crashes=1"],
    "clean_shutdowns=1": ["--bound", "clean_shutdowns=1"],
    "fences=2": ["--bound", "fences=2"],
    "admin_elections=1, config_changes=1": ["--bound", "admin_elections=1", "--bound", "config_changes=1"],
    "brokers 5": ["--brokers", "5"],
    # the rungs the compiled kernel (issue 39) was to make reachable
    "records=3": ["--bound", "records=3"],
    "fences=2, lossy_crashes=2": ["--bound", "fences=2", "--bound", "lossy_crashes=2"],
    "brokers 6": ["--brokers", "6"],
}


def _tree_rss_kb(pid: int) -> int:
    """Resident set size of a process and all its descendants, in KB."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, []))
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def check(args: list[str], workers: int, budget: float, estimate: float | None = None,
          max_states: int | None = None, visited: str = "memory") -> dict:
    """One `kraft-verify check` process: its summary (or estimate), its peak memory and (with
    `visited` disk) its bytes a state on disk at the end and at the peak."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "verifier.cli", "check", "-q", "--out", out, "--workers", str(workers), *args]
        cmd += ["--visited", visited] if estimate is None else []
        # a forecast takes its own sampling time; check refuses a budget beside --estimate
        cmd += ["--estimate", str(estimate)] if estimate is not None else ["--time-budget", str(budget)]
        cmd += ["--max-states", str(max_states)] if max_states is not None and estimate is None else []
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        peak = [0]

        def sample():
            while proc.poll() is None:
                peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
                time.sleep(0.5)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, err = proc.communicate()
        sampler.join()
        if proc.returncode < 0:       # killed (the OOM killer sends SIGKILL): recorded, the ladder goes on
            return {"result": "killed", "exit": proc.returncode, "signal": signal.Signals(-proc.returncode).name,
                    "distinct_states": None, "seconds": time.monotonic() - started,
                    "peak_rss_mb": round(peak[0] / 1024, 1), "stop_reason": "killed"}
        if proc.returncode not in (0, 1, 3):
            raise RuntimeError(err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}")
        name = "estimate.json" if estimate is not None else "summary.json"
        report = json.loads(next(Path(out).glob(f"*/{name}")).read_text())
    if estimate is not None:
        keys = ("exact", "states", "states_low", "states_high", "depth", "depth_low", "depth_high", "seconds",
                "seconds_low", "seconds_high", "sample_seconds", "sample_states")
        return {k: report.get(k) for k in keys}
    c, memory = report["counts"], report.get("memory") or {}
    return {"result": report["result"], "exit": proc.returncode, "distinct_states": c["distinct_states"],
            "transitions": c["transitions"], "depth": c["depth"], "seconds": c["seconds"],
            "states_per_second": round(c["distinct_states"] / max(c["seconds"], 1e-9)),
            "peak_rss_mb": round(peak[0] / 1024, 1), "stop_reason": report.get("stop_reason") or "",
            "states_per_level": c["states_per_level"], "visited": visited,
            "disk_bytes_per_state": memory.get("disk_bytes_per_state"),
            "disk_peak_bytes_per_state": memory.get("disk_peak_bytes_per_state")}


def _fmt_states(n) -> str:
    return f"{n:,}" if n is not None else "-"


def _latest(path: Path) -> dict:
    """The latest measurement of each (rung, kind, workers) in the JSON-lines file."""
    latest: dict = {}
    if path.exists():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            latest[(row["rung"], row["kind"], row["workers"])] = row
    return latest


def table(path: Path) -> str:
    """The ladder as a markdown table, from the latest measurement of each rung, kind and
    number of workers in the JSON-lines file."""
    latest = _latest(path)
    out = ["| config | distinct states | depth | 1 worker | 2 workers | 2 vs 1 | peak memory (1 / 2 workers) "
           "| on disk a state, end / peak | forecast after a sample (range) | forecast / truth |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for name in LADDER:
        est = latest.get((name, "estimate", 1))
        one, two = latest.get((name, "exhaustive", 1)), latest.get((name, "exhaustive", 2))
        if est is None and one is None and two is None:
            continue
        done = next((r for r in (one, two) if r is not None and r["exit"] in (0, 1)), None)
        if done is not None:
            states, depth = _fmt_states(done["distinct_states"]), str(done["depth"])
        else:
            reached = two or one
            states = (f"estimate {_fmt_states(est['states'])} ({_fmt_states(est['states_low'])} to "
                      f"{_fmt_states(est['states_high'])}); {_fmt_states(reached['distinct_states'])} reached "
                      f"in {reached['seconds']:.0f} s" if est and reached else "-")
            depth = f"estimate {est['depth']}" if est else "-"

        def timing(r):
            if r is None:
                return "not run"
            if r["result"] == "killed":
                return f"killed by {r['signal']} after {r['seconds']:.0f} s, no report"
            tail = "" if r["exit"] in (0, 1) else " (stopped by the time budget or --max-states)"
            return f"{r['seconds']:.0f} s, {r['states_per_second']:,}/s{tail}"
        ratio = (f"{two['states_per_second'] / one['states_per_second']:.2f}x"
                 if one and two and one["exit"] in (0, 1) and two["exit"] in (0, 1) else "-")
        memory = " / ".join(f"{r['peak_rss_mb']:.0f} MB" if r else "-" for r in (one, two))
        ran = two or one
        disk = ("-" if ran is None else "none (in memory)" if not ran.get("disk_bytes_per_state")
                else f"{ran['disk_bytes_per_state']:.1f} B / {ran['disk_peak_bytes_per_state']:.1f} B")
        if est is None:
            forecast = vs = "-"
        elif est["exact"]:
            forecast, vs = "exact (searched whole in the sample)", "1.00"
        else:
            forecast = (f"{_fmt_states(est['states'])} ({_fmt_states(est['states_low'])} to "
                        f"{_fmt_states(est['states_high'])}), {est['sample_seconds']:.0f} s sample")
            vs = f"{est['states'] / done['distinct_states']:.2f}" if done else "no truth"
        out.append(f"| {name} | {states} | {depth} | {timing(one)} | {timing(two)} | {ratio} | {memory} "
                   f"| {disk} | {forecast} | {vs} |")
    return "\n".join(out)


def _commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jsonl", required=True, help="append one JSON line per measurement")
    ap.add_argument("--budget", type=float, default=3600.0, help="time budget of each exhaustive run (s)")
    ap.add_argument("--sample", type=float, default=30.0, help="sampling time of each estimate (s)")
    ap.add_argument("--max-states", type=int, help="stop an exhaustive run there (a rung too big for memory)")
    ap.add_argument("--visited", choices=("memory", "disk"), default="memory",
                    help="the exhaustive runs' visited set (check --visited): disk records bytes a state on disk")
    ap.add_argument("--only", action="append", help="a rung's name (repeatable)")
    ap.add_argument("--estimates-only", action="store_true")
    ap.add_argument("--table", action="store_true", help="print the file as a markdown table and stop")
    ap.add_argument("--missing", action="store_true",
                    help="run only the measurements the file does not hold yet (to finish a stopped ladder)")
    args = ap.parse_args()
    if args.table:
        print(table(Path(args.jsonl)))
        return 0
    unknown = set(args.only or ()) - set(LADDER)
    if unknown:
        print(f"unknown rung: {', '.join(sorted(unknown))} (known: {', '.join(LADDER)})", file=sys.stderr)
        return 2
    out = Path(args.jsonl)
    held = _latest(out) if args.missing else {}
    for name, cfg in LADDER.items():
        if args.only and name not in args.only:
            continue
        row: dict = {}
        runs = [("estimate", 1)] + ([] if args.estimates_only else [("exhaustive", 2), ("exhaustive", 1)])
        for kind, workers in runs:
            if (name, kind, workers) in held:
                row = held[(name, kind, workers)]
                continue
            if kind == "exhaustive" and workers == 1 and row.get("exit") == 3:
                print(f"{name}: 2 workers did not finish within the budget; 1 worker is not run", flush=True)
                continue
            row = {"rung": name, "args": cfg, "kind": kind, "workers": workers, "commit": _commit(),
                   "cpu_count": os.cpu_count()}
            if kind == "estimate":
                row.update(check(cfg, workers, args.budget, estimate=args.sample))
            else:
                row.update(check(cfg, workers, args.budget, max_states=args.max_states, visited=args.visited))
            print(json.dumps(row), flush=True)
            with out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
