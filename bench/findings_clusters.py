"""Every finding's scenario file acted out on a real cluster of every release cluster-conform
starts (3.9.2, 4.0.2, 4.4.0), and what each run showed, kept as data: docs/FINDINGS.md's "on a
real cluster" lines are made from this file (bench/doc_figures.py, `findings-cluster`), not typed.

    .venv/bin/python bench/findings_clusters.py --json bench/results/issue61/findings-clusters.json

A run is `kraft-verify cluster-conform --kafka V FILE` on a fresh cluster; its row keeps the
verdict (agrees, diverges, not drivable), the properties the model breaks on the way and at which
step, the acknowledged records lost and kept, and what a consumer reads. About a minute a run.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FINDINGS = ROOT / "specs" / "scenarios" / "findings"
RELEASES = ("3.9.2", "4.0.2", "4.4.0")


def one(version: str, path: Path) -> dict:
    with tempfile.TemporaryDirectory() as out:
        start = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "verifier.cli", "cluster-conform", "--kafka", version, str(path),
                            "--out", out], cwd=ROOT, capture_output=True, text=True)
        row = {"release": version, "file": str(path.relative_to(ROOT)), "exit": p.returncode,
               "seconds": round(time.monotonic() - start, 1)}
        found = list(Path(out).glob("*/cluster.json"))
        if not found:             # refused before a cluster started: a file a real cluster cannot take, say
            why = (p.stderr.strip().splitlines() or [""])[-1]
            drivable = "not drivable on a real cluster: " not in why
            return {**row, "verdict": "no run" if drivable else "not drivable",
                    "why": why if drivable else why.split("not drivable on a real cluster: ", 1)[1]}
        case = json.loads(found[0].read_text())["details"]["cases"][0]
    verdict = ("not drivable" if case["not_drivable"] else "diverges" if case["divergence"] else "agrees")
    return {**row, "verdict": verdict, "why": case["not_drivable"] or "",
            "steps": len(case["steps"]), "model_violates": case["model_violates"] or {},
            "acknowledged_lost": case["acknowledged_lost"], "acknowledged_kept": case["acknowledged_kept"],
            "consumer_reads": case["consumer_reads"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", required=True)
    p.add_argument("--releases", default=",".join(RELEASES))
    args = p.parse_args(argv)
    rows = []
    for path in sorted(FINDINGS.glob("*.json")):
        for version in args.releases.split(","):
            rows.append(one(version, path))
            print(json.dumps(rows[-1]), flush=True)
    Path(args.json).write_text(json.dumps({"releases": args.releases.split(","), "runs": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
