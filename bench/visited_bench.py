"""`check --visited memory` beside `check --visited disk` on one config, one after the other in
one invocation (speed drifts up to 40% on this machine: compare within a run): wall time, the
search's own seconds and states/s, peak resident memory (`/usr/bin/time -v`), bytes a state on
disk (at the end, and the disk search's peak), and whether every count agrees.

    .venv/bin/python bench/visited_bench.py --json bench/results/visited.json -- --brokers 5
    .venv/bin/python bench/visited_bench.py --order disk,memory -- --brokers 4 --bound records=2
    .venv/bin/python bench/visited_bench.py --order disk,disk:2,disk:1x2 -- --brokers 4

A run is `visited[:threads]` (one thread unless given), or `visited:1x2`: two one-thread
processes at once (their states/s summed, the larger wall and peak): what the issue compares
two threads with. Everything after `--` is passed to `kraft-verify check`.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEYS = ("distinct_states", "transitions", "depth", "states_per_level", "terminal_states")


def _start(visited: str, threads: int, args: list) -> tuple:
    out = Path(tempfile.mkdtemp(prefix=f"visited-bench-{visited}-"))
    cmd = ["/usr/bin/time", "-v", str(ROOT / ".venv/bin/kraft-verify"), "check", "--workers", str(threads),
           "--visited", visited, "-q", "--out", str(out), *args]
    return out, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _row(run: str, out: Path, p: subprocess.Popen, start: float) -> dict:
    _, err = p.communicate()
    wall = time.monotonic() - start
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    summary = json.loads(next(out.glob("*/summary.json")).read_text())
    counts = summary["counts"]
    return {"run": run, "visited": run.split(":")[0], "exit": p.returncode, "wall_seconds": round(wall, 1),
            "seconds": counts["seconds"], "states_per_second": counts["states_per_second"],
            "peak_rss_mb": int(rss.group(1)) // 1024 if rss else None,
            "disk_bytes_per_state": summary["memory"]["disk_bytes_per_state"],
            "disk_peak_bytes_per_state": summary["memory"].get("disk_peak_bytes_per_state", 0),
            **{k: counts[k] for k in KEYS}}


def one(run: str, args: list) -> dict:
    visited, _, how = run.partition(":")
    copies, threads = (2, 1) if how == "1x2" else (1, int(how or 1))
    start = time.monotonic()
    started = [_start(visited, threads, args) for _ in range(copies)]
    rows = [_row(run, out, p, start) for out, p in started]
    row = rows[0]
    if copies > 1:          # two processes: their rates add up, the slower one's wall
        row.update(states_per_second=sum(r["states_per_second"] for r in rows),
                   wall_seconds=max(r["wall_seconds"] for r in rows),
                   seconds=max(r["seconds"] for r in rows), peak_rss_mb=max(r["peak_rss_mb"] or 0 for r in rows),
                   each_states_per_second=[r["states_per_second"] for r in rows])
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--order", default="memory,disk", help="the runs, in order (default memory,disk)")
    ap.add_argument("check_args", nargs="*", help="arguments of kraft-verify check, after --")
    a = ap.parse_args()
    rows = [one(v, a.check_args) for v in a.order.split(",")]
    same = all(r[k] == rows[0][k] for r in rows for k in KEYS)
    base = next((r for r in rows if r["run"] in ("memory", "memory:1")), rows[0])
    print(f"check {' '.join(a.check_args)}: every count the same: {same}")
    print(f"| run | states | wall | search, states/s | vs {base['run']} | peak RSS | disk a state, end / peak |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['run']} | {r['distinct_states']:,} | {r['wall_seconds']} s | {r['seconds']:.1f} s, "
              f"{r['states_per_second']:,.0f} | {r['states_per_second'] / base['states_per_second']:.2f}x | "
              f"{r['peak_rss_mb']:,} MB | {r['disk_bytes_per_state']} B / {r['disk_peak_bytes_per_state']} B |")
    if a.json:
        Path(a.json).write_text(json.dumps({"args": a.check_args, "same": same, "rows": rows}, indent=1) + "\n")
    return 0 if same and all(r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
