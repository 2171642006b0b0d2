"""Several partitions on the interpreted search: the steps joined in Python (specs/partitions.py)
against the compiled join (specs/kernel/lifted.py), alternating in this process, every count
compared; and how far a time budget takes the default bounds.

    .venv/bin/python bench/partitions_bench.py --rounds 2 --json bench/results/issue59/partitions.json
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json")
    a = ap.parse_args()
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
