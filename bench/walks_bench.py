"""`check --simulate` on the compiled kernel against the same walks in Python, side by side.

    python bench/walks_bench.py --json walks.json        # runs, then prints the markdown table

Per config: `check --simulate N --depth D --seed S` with `--engine python` and with `--engine
kernel`, one after another in fresh processes (never two at once: the machine has two cores),
each under /usr/bin/time -v. The two make the same walks (verifier/engines/kernel/walks.py),
so their distinct states, walk steps, terminal states and depth must be equal (exit 1 if not);
the figure is the ratio of walk steps a second, by wall time and by the engines' own time.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from kernel_bench import timed  # noqa: E402  (a run under /usr/bin/time -v: exit, wall, peak RSS)

# name, check's arguments
CONFIGS = [
    ("default, 20,000 walks", ["--simulate", "20000", "--depth", "100", "--seed", "1"]),
    ("brokers 5, 5,000 walks", ["--brokers", "5", "--simulate", "5000", "--depth", "200", "--seed", "1"]),
    ("hwm_requires_min_isr=false (a violation, shrunk)", ["--flag", "hwm_requires_min_isr=false", "--simulate",
                                                          "2000", "--depth", "100", "--seed", "0"]),
]
SAME = ("result", "distinct_states", "transitions", "terminal_states", "depth")


def one(python: str, args: list[str], engine: str) -> dict:
    with tempfile.TemporaryDirectory() as out:
        got = timed([python, "-m", "verifier.cli", "check", *args, "--engine", engine, "--out", out, "-q"], ROOT,
                    dict(os.environ))
        runs = list(Path(out).glob("*/summary.json"))
        summary = json.loads(runs[0].read_text()) if len(runs) == 1 else {}
    counts = summary.get("counts", {})
    return {"exit": got["exit"], "wall": round(got["wall"], 2), "rss_mb": got["rss_mb"],
            "engine": summary.get("engine"), "result": summary.get("result"), "seconds": counts.get("seconds"),
            **{k: counts.get(k) for k in SAME[1:]}}


def table(data: dict) -> list[str]:
    lines = ["| config | distinct states | walk steps | python: wall, engine time | kernel: wall, engine time "
             "| kernel / python, walk steps a second: wall, engine time | the same walks |", "|---|---|---|---|---|---|---|"]
    for name, row in data.items():
        p, k = row["python"], row["kernel"]
        lines.append(f"| {name} | {k['distinct_states']:,} | {k['transitions']:,} | {p['wall']:.1f} s, {p['seconds']:.1f} s "
                     f"| {k['wall']:.1f} s, {k['seconds']:.2f} s | {p['wall'] / k['wall']:.1f}x, "
                     f"{p['seconds'] / k['seconds']:.0f}x | {'yes' if row['same'] else 'NO'} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", required=True)
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    one(args.python, ["--simulate", "10", "--depth", "10"], "kernel")      # the compile, outside the figures
    data, differ = {}, 0
    for name, cli in CONFIGS:
        row = data[name] = {"args": cli, "python": one(args.python, cli, "python"),
                            "kernel": one(args.python, cli, "kernel")}
        row["same"] = all(row["python"][f] == row["kernel"][f] for f in SAME)
        row["engines"] = [row["python"]["engine"], row["kernel"]["engine"]]
        differ += not row["same"] or row["engines"] != ["simulate", "kernel-simulate"]
        print(f"{name}: python {row['python']['wall']:.1f}s, kernel {row['kernel']['wall']:.1f}s, "
              f"{'same' if row['same'] else 'DIFFERENT'}", flush=True)
        Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    print("\n".join(table(data)))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
