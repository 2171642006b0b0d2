"""`check --visited memory` beside `check --visited disk` on one config, one after the other in
one invocation (speed drifts up to 40% on this machine: compare within a run): wall time, the
search's own seconds and states/s, peak resident memory (`/usr/bin/time -v`), bytes a state on
disk, and whether every count agrees.

    .venv/bin/python bench/visited_bench.py --json bench/results/visited.json -- --brokers 5
    .venv/bin/python bench/visited_bench.py --order disk,memory -- --brokers 4 --bound records=2

Everything after `--` is passed to `kraft-verify check` (one thread: --visited disk runs on one).
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEYS = ("distinct_states", "transitions", "depth", "states_per_level", "terminal_states")


def one(visited: str, args: list) -> dict:
    out = Path(tempfile.mkdtemp(prefix=f"visited-bench-{visited}-"))
    cmd = ["/usr/bin/time", "-v", str(ROOT / ".venv/bin/kraft-verify"), "check", "--workers", "1",
           "--visited", visited, "-q", "--out", str(out), *args]
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    summary = json.loads(next(out.glob("*/summary.json")).read_text())
    counts = summary["counts"]
    return {"visited": visited, "exit": p.returncode, "wall_seconds": round(wall, 1),
            "seconds": counts["seconds"], "states_per_second": counts["states_per_second"],
            "peak_rss_mb": int(rss.group(1)) // 1024 if rss else None,
            "disk_bytes_per_state": summary["memory"]["disk_bytes_per_state"],
            **{k: counts[k] for k in KEYS}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--order", default="memory,disk", help="which runs first (default memory,disk)")
    ap.add_argument("check_args", nargs="*", help="arguments of kraft-verify check, after --")
    a = ap.parse_args()
    rows = [one(v, a.check_args) for v in a.order.split(",")]
    same = all(r[k] == rows[0][k] for r in rows for k in KEYS)
    base = next(r for r in rows if r["visited"] == "memory")
    print(f"check {' '.join(a.check_args)}: every count the same: {same}")
    print("| --visited | states | wall | search, states/s | vs memory | peak RSS | disk a state |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['visited']} | {r['distinct_states']:,} | {r['wall_seconds']} s | {r['seconds']:.1f} s, "
              f"{r['states_per_second']:,.0f} | {r['states_per_second'] / base['states_per_second']:.2f}x | "
              f"{r['peak_rss_mb']:,} MB | {r['disk_bytes_per_state']} B |")
    if a.json:
        Path(a.json).write_text(json.dumps({"args": a.check_args, "same": same, "rows": rows}, indent=1) + "\n")
    return 0 if same and all(r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
