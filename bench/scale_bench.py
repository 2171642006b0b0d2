"""The exhaustive checker at scale, side by side in one run: states per second with 1 and 2
workers, against the code of an older git ref, and peak memory per visited state.

Every measurement is a fresh `kraft-verify check` process, run one after another (never two
at once: the machine has two cores), timed from its summary.json; peak RSS comes from GNU
time (`/usr/bin/time -f %M`, the largest process: the coordinator or a worker).

    .venv/bin/python bench/scale_bench.py --ref-tree /tmp/ref --json bench/results/scale.json
        (--ref-tree: a checkout of the older code, e.g. `git worktree add /tmp/ref 2cd4544`)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = {
    "default": [],
    "brokers 4, depth 12": ["--brokers", "4", "--max-depth", "12"],
}
MEMORY = ("brokers 4, depth 13", ["--brokers", "4", "--max-depth", "13"])


def run(tree: Path, args: list[str], workers) -> dict:
    """One check in a fresh process: counts, seconds and peak RSS."""
    with tempfile.TemporaryDirectory() as out:
        extra = ["--workers", str(workers)] if workers else []
        cmd = ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "verifier.cli", "check", "-q", "--out", out,
               *args, *extra]
        env = dict(os.environ, PYTHONPATH=str(tree))
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
        if proc.returncode not in (0, 1, 3):
            raise RuntimeError(proc.stderr)
        summary = json.loads(next(Path(out).glob("*/summary.json")).read_text())
    c = summary["counts"]
    return {"distinct_states": c["distinct_states"], "transitions": c["transitions"], "depth": c["depth"],
            "seconds": c["seconds"], "states_per_second": round(c["distinct_states"] / c["seconds"]),
            "peak_rss_mb": round(int(proc.stderr.strip().splitlines()[-1]) / 1024, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref-tree", help="a checkout of older code to compare one-core speed with")
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for name, cfg in CONFIGS.items():
        row = {"config": name, "args": cfg}
        for workers in (1, 2):
            row[f"workers_{workers}"] = run(ROOT, cfg, workers)
        if args.ref_tree:
            row["ref"] = run(Path(args.ref_tree), cfg, None)
        one, two = row["workers_1"], row["workers_2"]
        row["speedup_2_vs_1"] = round(two["states_per_second"] / one["states_per_second"], 2)
        if "ref" in row:
            row["speedup_1_vs_ref"] = round(one["states_per_second"] / row["ref"]["states_per_second"], 2)
        rows.append(row)
        print(json.dumps(row), flush=True)
    name, cfg = MEMORY
    base = run(ROOT, ["--brokers", "4", "--max-depth", "1"], 1)
    big = run(ROOT, cfg, 1)
    memory = {"config": name, "args": cfg, "run": big, "startup_rss_mb": base["peak_rss_mb"],
              "rss_growth_bytes_per_state": round((big["peak_rss_mb"] - base["peak_rss_mb"]) * 2**20
                                                  / big["distinct_states"])}
    print(json.dumps(memory), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"command": " ".join(sys.argv), "cpu_count": os.cpu_count(),
                                               "rows": rows, "memory": memory}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
