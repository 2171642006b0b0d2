"""`check --estimate` against the truth: for configs whose exact counts an exhaustive run gives,
the forecast after a few seconds of search (one worker) next to the real distinct states and
depth. Every run is a fresh `kraft-verify check` process, one after another.

    .venv/bin/python bench/estimate_bench.py --seconds 5 --json bench/results/estimate.json
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = {
    "default": [],
    "kip-966": ["--preset", "kip-966"],
    "pre-kip-966": ["--preset", "pre-kip-966"],
    "pre-kip-903": ["--preset", "pre-kip-903"],
    "isr_shrinks=1": ["--bound", "isr_shrinks=1"],
    "any-candidate elections": ["--flag", "any_candidate_elections=true"],
    "hwm_requires_min_isr=false": ["--flag", "hwm_requires_min_isr=false"],
    "min ISR 1": ["--min-isr", "1"],
}


def _check(args: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "verifier.cli", "check", "-q", "--workers", "1", "--out", out, *args],
                       cwd=ROOT, capture_output=True, text=True)
        files = list(Path(out).glob("*/estimate.json")) or list(Path(out).glob("*/summary.json"))
        return json.loads(files[0].read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0, help="sampling time of each estimate")
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for name, cfg in CONFIGS.items():
        est = _check(cfg + ["--estimate", str(args.seconds)])
        truth = _check(cfg)["counts"]
        states = est["states"]
        row = {"config": name, "true_states": truth["distinct_states"], "true_depth": truth["depth"],
               "true_seconds": truth["seconds"], "predicted_states": states,
               "range": [est.get("states_low", states), est.get("states_high", states)],
               "predicted_depth": est["depth"], "predicted_seconds": est.get("seconds"), "exact": est["exact"],
               "sample_states": est["sample_states"]}
        row["within_range"] = row["range"][0] <= row["true_states"] <= row["range"][1]
        row["ratio"] = round(states / row["true_states"], 2)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"command": " ".join(sys.argv), "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
