"""Where a state's time goes in the compiled search, phase by phase, on one level of
`--brokers 5`: its rows' successors, their fingerprints, their step properties, their state
properties and their insertion into a fresh visited table, each timed alone in ns a row of the
level (best of 5). With `--old TREE` each round runs the bench under the older checkout's code
(PYTHONPATH) and then under this one's, alternating, so that the two trees' phases are
compared side by side (speed drifts up to 40% within minutes on this machine).

    .venv/bin/python bench/phase_bench.py --depth 10
    git worktree add /tmp/old <older commit>
    .venv/bin/python bench/phase_bench.py --depth 10 --old /tmp/old --rounds 3 --json OUT.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("successors", "fingerprints", "step properties", "state properties", "visited insert")


def measure(depth: int, pairs: int) -> dict:
    """The phases of the tree on sys.path, in ns a row of level depth + 1's parents."""
    import numpy as np
    from numba import njit

    from specs import Model
    from specs.config import make_config
    from specs.kernel.events import MISS
    from specs.kernel import properties
    from specs.kernel.properties import ALL_STATE, ALL_STEP, state_violations
    step_violations = getattr(properties, "step_verdict", properties.step_violations)   # as the search asks it
    from specs.kernel.successors import BOUNDED, successors
    from verifier.cli import binding
    from verifier.core.rowhash import child_hash
    from verifier.core.settings import Limits, Options, Settings
    from verifier.engines.kernel import Search
    from verifier.engines.kernel.visited import visit

    @njit
    def expand(frontier, rows, lay, cv, plan, tables, out, labels, key, work, params, parents, kids, actions, at):
        """Every successor of frontier[at[0]:rows] after the at[1] kept (parents: their rows;
        actions: their steps): True, or False at an event the table lacks (at: where it was)."""
        m = at[1]
        for i in range(at[0], rows):
            n = successors(frontier[i], lay, cv, plan, tables, BOUNDED, -1, out, labels, key, work, params)
            if n == MISS:
                at[0], at[1] = i, m
                return False
            for j in range(n):
                if m < len(kids):
                    parents[m], kids[m], actions[m] = i, out[j], labels[j, 0]
                m += 1
        at[0], at[1] = rows, m
        return True

    @njit
    def fingerprints(frontier, fps, parents, kids, m, into):
        for i in range(m):
            p = parents[i]
            into[i, 0], into[i, 1] = child_hash(frontier[p], fps[p, 0], fps[p, 1], kids[i])

    @njit
    def steps(frontier, parents, kids, actions, m, lay, facts):
        s = 0
        for i in range(m):
            s += step_violations(frontier[parents[i]], actions[i], kids[i], lay, facts, ALL_STEP)
        return s

    @njit
    def states(kids, m, lay, facts):
        s = 0
        for i in range(m):
            s += state_violations(kids[i], lay, facts, ALL_STATE)
        return s

    @njit
    def insert(table, kfps, m):
        s = 0
        for i in range(m):
            s += visit(table, kfps[i, 0], kfps[i, 1])
        return s

    search = Search(Model(make_config(replicas=[1, 2, 3, 4, 5]), symmetry=True), binding.properties(),
                    Settings(limits=Limits(max_depth=depth), options=Options()), None, 1)
    search.run()
    frontier, fps = search._levels[0][0].array[:len(search._frontier_fp)], search._frontier_fp
    k = search.k
    lay, cv, plan = k.layout.lay, k.cv, k.plan
    rows = min(len(frontier), pairs // 8)
    parents = np.zeros(pairs, dtype=np.int64)
    kids = np.zeros((pairs, k.layout.width), dtype=np.int32)
    actions = np.zeros(pairs, dtype=np.int64)
    at = np.zeros(2, dtype=np.int64)
    while not expand(frontier, rows, lay, cv, plan, k.table_args(), k.out, k.labels, k.key, k.work, k.params,
                     parents, kids, actions, at):
        k.tables.fill(k.key)              # an event the table lacked: the algebra, then on
    tables, m = k.table_args(), int(at[1])  # (re-read: a fill may grow the tables)
    if m > pairs:
        raise SystemExit(f"{m:,} successors of {rows:,} rows: raise --pairs")
    into = np.zeros((m, 2), dtype=np.uint64)
    facts = tables[3]
    run = {
        "successors": lambda: expand(frontier, rows, lay, cv, plan, tables, k.out, k.labels, k.key, k.work,
                                     k.params, parents, kids, actions, np.zeros(2, dtype=np.int64)),
        "fingerprints": lambda: fingerprints(frontier, fps, parents, kids, m, into),
        "step properties": lambda: steps(frontier, parents, kids, actions, m, lay, facts),
        "state properties": lambda: states(kids, m, lay, facts),
        "visited insert": lambda: insert(np.zeros((1 << (2 * m).bit_length(), 2), dtype=np.uint64), into, m),
    }
    best = {}
    for _ in range(5):
        for name in PHASES:
            t0 = time.perf_counter()
            run[name]()
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - t0)
    return {"rows": rows, "successors_a_row": round(m / rows, 2), "width": int(k.layout.width),
            "ns_a_row": {name: round(best[name] / rows * 1e9) for name in PHASES},
            "total_ns_a_row": round(sum(best.values()) / rows * 1e9)}


def in_tree(tree: Path, depth: int, pairs: int) -> dict:
    """measure() in a fresh process running `tree`'s code."""
    cmd = [sys.executable, __file__, "--depth", str(depth), "--pairs", str(pairs), "--raw"]
    proc = subprocess.run(cmd, cwd=tree, env=dict(os.environ, PYTHONPATH=str(tree)), capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--pairs", type=int, default=4_000_000, help="successors kept (at most)")
    ap.add_argument("--old", help="an older checkout, run alternately with this one")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--raw", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.raw:
        print(json.dumps(measure(args.depth, args.pairs)))
        return 0
    rounds = []
    for r in range(args.rounds if args.old else 1):
        row = {"round": r + 1}
        if args.old:
            row["old"] = in_tree(Path(args.old), args.depth, args.pairs)
        row["new"] = in_tree(ROOT, args.depth, args.pairs)
        if args.old:
            row["new_vs_old"] = {name: round(row["old"]["ns_a_row"][name] / row["new"]["ns_a_row"][name], 2)
                                 for name in PHASES}
            row["new_vs_old"]["total"] = round(row["old"]["total_ns_a_row"] / row["new"]["total_ns_a_row"], 2)
        rounds.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"command": " ".join(sys.argv), "rounds": rounds}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
