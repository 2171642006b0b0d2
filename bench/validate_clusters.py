"""Every real cluster's own metadata log validated: each finding's file and seeded walks acted
out on real 3.9.2, 4.0.2 and 4.4.0 clusters by cluster-conform, which keeps each case's
controller log; then `validate-log` on every kept log against the same release. The rows are
data: docs/validate.md's table is made from this file (bench/doc_figures.py, `validate-clusters`).

    .venv/bin/python bench/validate_clusters.py --json bench/results/issue60/validate-clusters.json

A row: the release, what was driven (a finding's file, or walk i of a seed), cluster-conform's
exit, and validate-log's: its exit, the records read, whether every change was explained, and
every check broken with its partition and offset. About a minute a cluster; never beside another
heavy job (the clusters take both cores).
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


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verifier.cli", *args], cwd=ROOT, capture_output=True, text=True)


def _why(p: subprocess.CompletedProcess) -> str:
    """The run's last line on stderr, its paths relative to the checkout."""
    return (p.stderr.strip().splitlines() or [""])[-1].replace(f"{ROOT}/", "")


def validated(version: str, log: Path) -> dict:
    with tempfile.TemporaryDirectory() as out:
        p = _cli("validate-log", "--kafka", version, str(log), "-q", "--out", out)
        found = list(Path(out).glob("*/summary.json"))
        if not found:
            return {"validate_exit": p.returncode, "why": _why(p)}
        s = json.loads(found[0].read_text())
    broken = {v["name"]: v["detail"].split(":")[0] for v in s["invariants"] if v["status"] == "violated"}
    return {"validate_exit": p.returncode, "records": s["counts"]["records"],
            "explained": "EveryChangeExplained" not in broken, "broken": broken,
            "unclean_elections": s["details"]["findings_per_kind"].get("UncleanElection", 0)}


def driven(version: str, what: list[str], label: str) -> list[dict]:
    """cluster-conform with `what`, then validate-log on every case's kept log."""
    with tempfile.TemporaryDirectory() as out:
        start = time.monotonic()
        p = _cli("cluster-conform", "--kafka", version, *what, "--shrink", "0", "--out", out)
        row = {"release": version, "driven": label, "cluster_exit": p.returncode,
               "seconds": round(time.monotonic() - start, 1)}
        logs = sorted(Path(out).glob("*/metadata/case-*/__cluster_metadata-0"))
        if not logs:
            return [{**row, "why": _why(p)}]
        return [{**row, "case": log.parent.name, **validated(version, log)} for log in logs]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", required=True)
    p.add_argument("--releases", default=",".join(RELEASES))
    p.add_argument("--walks", type=int, default=2)
    p.add_argument("--seed", type=int, default=60)
    args = p.parse_args(argv)
    rows = []
    for version in args.releases.split(","):
        runs = [([str(path)], path.stem) for path in sorted(FINDINGS.glob("*.json"))]
        runs.append((["--walks", str(args.walks), "--seed", str(args.seed), "--depth", "30"],
                     f"{args.walks} walks, seed {args.seed}"))
        for what, label in runs:
            for row in driven(version, what, label):
                rows.append(row)
                print(json.dumps(row), flush=True)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"releases": args.releases.split(","), "runs": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
