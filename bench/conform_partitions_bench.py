"""conform with a topic of two partitions against every release (issue 59): the `two-partitions`
walk set (verifier/engines/conform/sets.py) walked for --steps walk steps per release, each run's
exit, steps compared, per-action counts and errors answered.

    .venv/bin/python bench/conform_partitions_bench.py --steps 10000 --json bench/results/issue59/conform-partitions.json
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=59)
    ap.add_argument("--json")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from specs import RELEASES
    rows = []
    for version in sorted(RELEASES):
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run([sys.executable, "-m", "verifier.cli", "conform", "--kafka", version, "--bound-set",
                                   "two-partitions", "--steps", str(a.steps), "--seed", str(a.seed), "-q", "--out",
                                   out], cwd=ROOT, capture_output=True, text=True)
            found = list(Path(out).glob("*/conform.json"))
            if not found:
                raise RuntimeError(f"{version}: exit {proc.returncode}: {proc.stderr[-1500:]}")
            summary = json.loads(found[0].read_text())
        d = summary["details"]
        row = {"kafka": version, "exit": proc.returncode, "result": summary["result"],
               "stop_reason": summary["stop_reason"], "walks": summary["counts"]["walks"],
               "walk_steps": summary["counts"]["walk_steps"], "seconds": summary["counts"]["seconds"],
               "steps_per_second": summary["counts"]["steps_per_second"], "diverged": d["divergence"] is not None,
               "per_action": d["steps_per_action"], "errors": d["errors_seen"]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if not any(r["diverged"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
