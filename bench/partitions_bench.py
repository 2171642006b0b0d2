"""Several partitions on the interpreted search: the steps joined in Python (specs/partitions.py)
against the compiled join (specs/kernel/lifted.py), alternating in this process, every count
compared. With --exhaust: the compiled search (`check --partitions N`, fresh processes) on the
default bounds with two partitions and a smaller-bounded config of three, each's states, levels,
time and peak RSS; and one partition's check (`--partitions 1`) against today's, every count,
level and verdict equal.

    .venv/bin/python bench/partitions_bench.py --rounds 2 --json bench/results/issue59/partitions.json
    .venv/bin/python bench/partitions_bench.py --exhaust --json bench/results/issue59/exhaust.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONFIGS = {   # name: (partitions, make_config's arguments)
    "two-replicas-lossy": (2, dict(replicas=(1, 2), min_isr=1, bounds={
        "records": 1, "fences": 1, "lossy_crashes": 1, "isr_shrinks": 0, "max_leader_epoch": 2,
        "max_partition_epoch": 3})),
    "three-replicas": (2, dict(bounds={"records": 1, "fences": 1, "lossy_crashes": 0, "isr_shrinks": 1,
                                       "max_leader_epoch": 2, "max_partition_epoch": 2})),
}


def one(parts: int, kw: dict, compiled: bool) -> dict:
    from invariants import REGISTRY
    from specs import PartitionsModel, lift_property, make_config
    from verifier.core.settings import Options
    from verifier.engines.bfs import explore
    model = PartitionsModel(make_config(partitions=parts, **kw), compiled=compiled)
    start = time.perf_counter()
    r = explore(model, [lift_property(p) for p in REGISTRY], options=Options(keep_going=True))
    seconds = time.perf_counter() - start
    return {"join": "compiled" if compiled else "python", "distinct_states": r.distinct_states,
            "transitions": r.transitions, "states_per_level": r.states_per_level, "seconds": round(seconds, 2),
            "states_per_second": round(r.distinct_states / seconds),
            "violated": sorted(r.counterexamples)}


EXHAUST = {   # name: check's arguments (the compiled search)
    "two partitions, default bounds": ["--partitions", "2"],
    "three partitions, no ISR shrink": ["--partitions", "3", "--bound", "isr_shrinks=0"],
}
EQUIVALENT = {"one partition, default bounds": (["--partitions", "1"], [])}


def check(args: list) -> dict:
    """`kraft-verify check` in a fresh process: its counts, levels, verdicts, engine and peak RSS."""
    import os
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as out:
        cmd = ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "verifier.cli", "check", "-q", "--out", out, *args]
        proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                              text=True)
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"{args}: exit {proc.returncode}: {proc.stderr[-2000:]}")
        summary = json.loads(next(Path(out).glob("*/summary.json")).read_text())
    c = summary["counts"]
    return {"args": args, "exit": proc.returncode, "engine": summary.get("engine"),
            "distinct_states": c["distinct_states"], "transitions": c["transitions"], "depth": c["depth"],
            "states_per_level": c["states_per_level"], "seconds": c["seconds"],
            "states_per_second": round(c["distinct_states"] / c["seconds"]),
            "peak_rss_mb": round(int(proc.stderr.strip().splitlines()[-1]) / 1024, 1),
            "verdicts": {i["name"]: i["status"] for i in summary["invariants"]}}


def exhaust() -> list:
    rows = []
    for name, args in EXHAUST.items():
        rows.append({"config": name, **check(args)})
        print(json.dumps(rows[-1]), flush=True)
    for name, (one, plain) in EQUIVALENT.items():
        a, b = check(one), check(plain)
        same = {k: a[k] == b[k] for k in ("exit", "distinct_states", "transitions", "states_per_level", "verdicts")}
        rows.append({"config": name, "partitions_1": a, "today": b, "equal": same})
        print(json.dumps(rows[-1]), flush=True)
        assert all(same.values()), f"{name}: --partitions 1 is not today's check: {same}"
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--exhaust", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.exhaust:
        rows = exhaust()
        if a.json:
            Path(a.json).parent.mkdir(parents=True, exist_ok=True)
            Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
        return 0
    one(*CONFIGS["two-replicas-lossy"], True)                 # compiled once before anything is timed
    rows = []
    for name, (parts, kw) in CONFIGS.items():
        for r in range(a.rounds):
            for compiled in ((True, False) if r % 2 == 0 else (False, True)):
                row = {"config": name, "round": r, **one(parts, kw, compiled)}
                rows.append(row)
                print(json.dumps(row), flush=True)
        counts = {(x["distinct_states"], x["transitions"], tuple(x["states_per_level"]), tuple(x["violated"]))
                  for x in rows if x["config"] == name}
        assert len(counts) == 1, f"{name}: the two joins disagree: {counts}"
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
