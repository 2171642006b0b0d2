"""Where two threads' time goes in the compiled search's rounds (verifier/engines/kernel/parallel.py):
the wall time of the rounds' expansion phase against the threads' busy time in it, the settle
and number phases, the visited set's growth, and what is left (the rounds' glue in Python),
on one in-memory search with two threads. What the threads' line of issue 58 (two threads at
0.9x of two processes) is measured against: busy time is the work, the rest is what two
independent processes would not wait for.

    .venv/bin/python bench/rounds_bench.py --json OUT.json -- --brokers 4 --bound records=2 \\
        --bound fences=2 --bound max_partition_epoch=7 --max-depth 11
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _timed(owner, name: str, key: str, spent: collections.Counter, lock, calls=None) -> None:
    """Wrap owner.name so that its calls' seconds add up in spent[key] (from any thread), and
    their number in calls[key] if a Counter is given (bench/level_phases.py)."""
    fn = getattr(owner, name)

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            with lock:
                spent[key] += time.perf_counter() - t0
                if calls is not None:
                    calls[key] += 1
    setattr(owner, name, timed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    ap.add_argument("check_args", nargs="*", help="--brokers, --bound and --max-depth as check takes them (after --)")
    args = ap.parse_args()
    cfg_ap = argparse.ArgumentParser(prog="rounds_bench.py ... --")
    cfg_ap.add_argument("--brokers", type=int, default=3)
    cfg_ap.add_argument("--bound", action="append", default=[])
    cfg_ap.add_argument("--max-depth", type=int, required=True)
    c = cfg_ap.parse_args(args.check_args)
    from specs.config import make_config
    from verifier.cli import binding
    from verifier.core.settings import Limits, Options, Settings
    from verifier.engines.kernel import Search
    from verifier.engines.kernel import parallel

    bounds = {k: int(v) for k, v in (b.split("=", 1) for b in c.bound)}
    cfg, depth = make_config(replicas=list(range(1, c.brokers + 1)), bounds=bounds), c.max_depth
    spent, lock = collections.Counter(), threading.Lock()
    _timed(parallel.Rounds, "_round", "rounds", spent, lock)
    _timed(parallel.Rounds, "_expand_all", "expansion phase (wall)", spent, lock)
    _timed(parallel.Stretch, "expand", "threads busy expanding (summed)", spent, lock)
    _timed(parallel, "settle", "settle (summed over threads)", spent, lock)
    _timed(parallel, "number", "number (summed over threads)", spent, lock)
    _timed(Search, "_room", "visited set growth (wall)", spent, lock)
    from specs import Model
    warm = Search(Model(cfg, symmetry=True), binding.properties(),     # a cold kernel compiles here, not below
                  Settings(limits=Limits(max_depth=3), options=Options()), None, 2)
    warm.run()
    warm.close()
    spent.clear()
    search = Search(Model(cfg, symmetry=True), binding.properties(),
                    Settings(limits=Limits(max_depth=depth), options=Options()), None, 2)
    t0 = time.perf_counter()
    search.run()
    wall = time.perf_counter() - t0
    search.close()
    busy = spent["threads busy expanding (summed)"]
    expansion = spent["expansion phase (wall)"]
    row = {"check": args.check_args, "states": int(search.n_store), "wall_seconds": round(wall, 2),
           "states_per_second": round(search.n_store / wall),
           "seconds": {k: round(v, 2) for k, v in sorted(spent.items())},
           "threads_busy_share_of_expansion": round(busy / (2 * expansion), 3),
           "outside_the_expansion_phase_share_of_wall": round((wall - expansion) / wall, 3)}
    print(json.dumps(row, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps({"command": " ".join(sys.argv), **row}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
