"""Checkpoints on the kernel against a plain check, side by side in one run, fresh processes.

    python bench/checkpoint_bench.py --json bench/results/issue57/checkpoint.json [--brokers 4]

Three ways to the same answer, each under /usr/bin/time (wall seconds, peak RSS):
- plain: `check --brokers N`;
- saved: the same with `--checkpoint-dir D --checkpoint-every 3` (a save at a level's end
  every 3 s, and one at the end), run through;
- stopped and resumed: `--checkpoint-dir D --time-budget 6` (exit 3, a save inside a level),
  then `--checkpoint-dir D --resume` to the end; the two processes' wall seconds added.
Each must end with the plain run's distinct states, transitions, levels and terminal states
(exit 1 if not); the ratios to the plain run are what issue 57 asks within 1.5x.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(args: list, out: Path) -> dict:
    cmd = ["/usr/bin/time", "-f", "TIME %e %M", sys.executable, "-m", "verifier.cli", "check", *args, "-q",
           "--out", str(out)]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall, rss = re.search(r"TIME ([\d.]+) (\d+)", r.stderr).groups()
    summary = json.loads(sorted(out.glob("*/summary.json"), key=lambda p: p.stat().st_mtime)[-1].read_text())
    c = summary["counts"]
    return {"exit": r.returncode, "wall": float(wall), "rss_mb": int(rss) // 1024, "search_seconds": c.get("seconds"),
            "counts": [c["distinct_states"], c["transitions"], c["states_per_level"], c["terminal_states"]]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", default="4")
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    base = ["--brokers", args.brokers]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plain = _run(base, tmp / "o1")
        saved = _run([*base, "--checkpoint-dir", str(tmp / "ck1"), "--checkpoint-every", "3"], tmp / "o2")
        stopped = _run([*base, "--checkpoint-dir", str(tmp / "ck2"), "--time-budget", "6"], tmp / "o3")
        manifest = json.loads((tmp / "ck2" / "manifest.json").read_text())
        resumed = _run([*base, "--checkpoint-dir", str(tmp / "ck2"), "--resume"], tmp / "o4")
        size = sum(p.stat().st_size for p in (tmp / "ck1").iterdir())
        shutil.rmtree(tmp / "ck1")
    same = saved["counts"] == plain["counts"] == resumed["counts"]
    report = {"config": base, "plain": plain, "saved": saved, "stopped": stopped, "resumed": resumed,
              "stopped_at": {k: manifest[k] for k in ("states", "depth", "position")},
              "checkpoint_bytes": size, "same_counts": same,
              "ratio_saved": round(saved["wall"] / plain["wall"], 2),
              "ratio_stopped_and_resumed": round((stopped["wall"] + resumed["wall"]) / plain["wall"], 2)}
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    print(f"plain {plain['wall']:.1f} s; with checkpoints every 3 s {saved['wall']:.1f} s "
          f"({report['ratio_saved']}x); stopped at {manifest['states']:,} states "
          f"({stopped['wall']:.1f} s) and resumed ({resumed['wall']:.1f} s): "
          f"{report['ratio_stopped_and_resumed']}x; checkpoint {size / 1e6:.0f} MB; same counts: {same}")
    return 0 if same and stopped["exit"] == 3 and plain["exit"] == saved["exit"] == resumed["exit"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
