"""Where `check --visited disk`'s wall time goes: one run in this process, with a timer around
each part of a level (the expansion, the rounds' settling and numbering, the candidates
written out, the level's end, the table seeded) and each thread's busy time in the rounds.

    .venv/bin/python bench/level_phases.py --json OUT.json -- --workers 2 --brokers 4 --max-depth 12

A part's time includes the parts it calls (`_stretch` holds `_round`, which holds
`_expand_all`); the controller-event fills run on the main thread, during the threads'
expansion. Everything after `--` is passed to `kraft-verify check --visited disk`.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PARTS = ("_level", "_stretch", "_flush", "_filtered", "_open", "_seen", "_write")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    ap.add_argument("check", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    from specs.kernel.tables import Tables
    from verifier.cli import main as cli
    from verifier.engines.kernel import external, parallel, stretch

    from rounds_bench import _timed
    seconds, calls, busy, lock = Counter(), Counter(), defaultdict(float), threading.Lock()
    for name in PARTS:
        _timed(external.External, name, name, seconds, lock, calls)
    for name in ("_round", "_expand_all"):
        _timed(parallel.Rounds, name, name, seconds, lock, calls)
    _timed(Tables, "fill", "fill (main thread)", seconds, lock, calls)
    expand = stretch.Stretch.expand

    def counted(self, *args, **kw):
        start = time.perf_counter()
        try:
            return expand(self, *args, **kw)
        finally:
            busy[threading.get_ident()] += time.perf_counter() - start
    stretch.Stretch.expand = counted
    args = [x for x in a.check if x != "--"]
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        code = cli(["check", "--visited", "disk", "-q", "--out", out, *args])
        wall = time.perf_counter() - start
        summary = json.loads(next(Path(out).glob("*/summary.json")).read_text())
    row = {"args": args, "exit": code, "wall_seconds": round(wall, 2),
           "distinct_states": summary["counts"]["distinct_states"], "search_seconds": summary["counts"]["seconds"],
           "parts": {k: {"seconds": round(v, 2), "calls": calls[k]} for k, v in sorted(seconds.items(),
                                                                                    key=lambda kv: -kv[1])},
           "thread_busy_in_rounds": sorted(round(v, 2) for v in busy.values())}
    print(json.dumps(row, indent=1), file=sys.stderr)      # (the check prints its own report to stdout)
    if a.json:
        Path(a.json).write_text(json.dumps(row, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
