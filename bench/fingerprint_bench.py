"""A successor's fingerprint from its parent's (`verifier/core/rowhash.child_hash`) against
the one-loop form it replaced, on real (parent, successor) pairs, side by side in one run.

The pairs are one level's: `--brokers 5` searched to depth N on one thread, the next level's
successors written out (about 4 of a row's 83 fields change a step). Each form hashes every
pair; the best of 5 alternating timings of each is printed, in ns a pair, with the ratio.

    .venv/bin/python bench/fingerprint_bench.py --depth 11
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from numba import njit

from specs import Model
from specs.config import make_config
from specs.kernel.events import MISS
from specs.kernel.successors import BOUNDED, successors
from verifier.cli import binding
from verifier.core.rowhash import SEED_A, SEED_B, _field, child_hash
from verifier.core.settings import Limits, Options, Settings
from verifier.engines.kernel import Search


@njit(cache=False)
def one_loop(parent, a, b, t):
    """child_hash before 46afc23: LLVM turned the `if` into masked vector code hashing every field."""
    ha, hb = np.uint64(a), np.uint64(b)
    for j in range(len(t)):
        if t[j] != parent[j]:
            ha += _field(j, t[j], SEED_A) - _field(j, parent[j], SEED_A)
            hb += _field(j, t[j], SEED_B) - _field(j, parent[j], SEED_B)
    return ha, hb


@njit(cache=False)
def _collect(frontier, lay, cv, plan, tables, out, labels, key, work, params, parents, kids, at, limit):
    """Successor rows of frontier[at[0]:] into kids (parents: their rows' index), until MISS or full."""
    m, pos = at[1], at[0]
    while pos < len(frontier) and m < limit - len(out):
        n = successors(frontier[pos], lay, cv, plan, tables, BOUNDED, -1, out, labels, key, work, params)
        if n == MISS:
            at[0], at[1] = pos, m
            return False
        for j in range(n):
            parents[m] = pos
            kids[m] = out[j]
            m += 1
        pos += 1
    at[0], at[1] = pos, m
    return True


def _timer(fn):
    @njit(cache=False)
    def loop(frontier, fps, parents, kids, m):
        s = np.uint64(0)
        for i in range(m):
            a, b = fn(frontier[parents[i]], fps[parents[i], 0], fps[parents[i], 1], kids[i])
            s += a ^ b
        return s
    return loop


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depth", type=int, default=11)
    ap.add_argument("--pairs", type=int, default=2_000_000)
    args = ap.parse_args()
    settings = Settings(limits=Limits(max_depth=args.depth), options=Options())
    search = Search(Model(make_config(replicas=[1, 2, 3, 4, 5]), symmetry=True), binding.properties(), settings,
                    None, 1)
    search.run()
    frontier, fps = search._levels[0][0].array[:len(search._frontier_fp)], search._frontier_fp
    k = search.k
    parents = np.zeros(args.pairs, dtype=np.int64)
    kids = np.zeros((args.pairs, k.layout.width), dtype=np.int32)
    at = np.zeros(2, dtype=np.int64)
    while not _collect(frontier, k.layout.lay, k.cv, k.plan, k.table_args(), k.out, k.labels, k.key, k.work,
                       k.params, parents, kids, at, args.pairs):
        k.tables.fill(k.key)              # an event the table lacked: the algebra, then on
    m = int(at[1])
    forms = {"one loop (before)": _timer(one_loop), "changed fields only": _timer(child_hash)}
    sums = {name: int(loop(frontier, fps, parents, kids, m)) for name, loop in forms.items()}
    if len(set(sums.values())) != 1:
        print(f"the forms disagree: {sums}", file=sys.stderr)
        return 1
    best = {}
    for _ in range(5):
        for name, loop in forms.items():
            t0 = time.perf_counter()
            loop(frontier, fps, parents, kids, m)
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - t0)
    print(f"{m:,} pairs of --brokers 5's level {args.depth + 1}, row width {k.layout.width}")
    for name, seconds in best.items():
        print(f"{name}: {seconds / m * 1e9:.0f} ns a pair (best of 5)")
    names = list(best)
    print(f"ratio: {best[names[1]] / best[names[0]]:.2f}x the time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
