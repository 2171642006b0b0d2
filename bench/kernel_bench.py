"""The compiled kernel against the code before it, side by side in one run, fresh processes.

    python bench/kernel_bench.py run --before-tree CHECKOUT --json kernel.json [--only NAME ...]
    python bench/kernel_bench.py table kernel.json          # the markdown table BENCHMARKS.md shows

Per config: `check --workers 1` of the checkout before the kernel (the one-process Python
search) and `check --engine kernel` of this tree, each under /usr/bin/time -v (wall time,
peak RSS), and their distinct states, transitions, states per level, terminal states and
verdicts, which must be equal where both ran to the end (exit 1 if not). A config marked
`budget` runs the code before only for that many seconds: its states/s is then the rate over
the part it searched, said so in the table, and only the kernel's counts are given.

Also measured in the same run: the kernel's compile time (a cold cache directory, then warm),
and this machine's two-process ceiling: one CPU-bound Python loop alone against two at once
(what any two-core design can show here).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# name, check's arguments, seconds the code before may run (None: to the end)
CONFIGS = [
    ("default", [], None),
    ("brokers 4, depth 12", ["--brokers", "4", "--max-depth", "12"], None),
    ("records=2", ["--bound", "records=2"], None),
    ("brokers 4", ["--brokers", "4"], None),
    ("overnight: brokers 4, records=2", ["--brokers", "4", "--bound", "records=2"], 120),
    ("brokers 5", ["--brokers", "5"], 120),
    # brokers 5 to the end does not fit this machine (more than 80 million states); its first
    # eleven levels (5.3 million states) do, for both, so their counts can be compared
    ("brokers 5, depth 11", ["--brokers", "5", "--max-depth", "11"], None),
]


def timed(cmd: list[str], cwd: Path, env: dict) -> dict:
    """Run under /usr/bin/time -v: exit code, wall seconds, peak RSS in MB, stdout."""
    started = time.monotonic()
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], cwd=cwd, env=env, capture_output=True, text=True)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    return {"exit": proc.returncode, "wall": time.monotonic() - started,
            "rss_mb": int(rss.group(1)) // 1024 if rss else None, "stdout": proc.stdout, "stderr": proc.stderr[-2000:]}


def facts(out: Path) -> dict:
    runs = list(out.glob("*/summary.json"))
    if len(runs) != 1:
        return {}
    s = json.loads(runs[0].read_text())
    c = s["counts"]
    return {"result": s["result"], "distinct_states": c.get("distinct_states"), "transitions": c.get("transitions"),
            "search_seconds": c.get("seconds"),
            "states_per_level": c.get("states_per_level"), "terminal_states": c.get("terminal_states"),
            "verdicts": {row["name"]: row["status"] for row in s["invariants"]}}


def check(tree: Path, python: str, args: list[str], extra: list[str], cache: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), COLUMNS="200", KRAFT_VERIFY_CACHE=str(cache))
    with tempfile.TemporaryDirectory() as tmp:
        got = timed([python, "-m", "verifier.cli", "check", *args, *extra, "--out", tmp, "-q"], tree, env)
        got.update(facts(Path(tmp)))
    got.pop("stdout")
    return got


def pair(tree: Path, python: str, args: list[str], extra: list[str], cache: Path) -> dict:
    """Two of the same check at once, in two processes: their wall time (the most two
    independent processes of this very work get from this machine's two cores)."""
    from concurrent.futures import ThreadPoolExecutor
    started = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda _: check(tree, python, args, extra, cache), range(2)))
    return {"wall": time.monotonic() - started, "walls": [r["wall"] for r in runs],
            "distinct_states": [r.get("distinct_states") for r in runs]}


def compile_times(python: str) -> dict:
    """The kernel's compile time: a run of one level with an empty cache, then again."""
    with tempfile.TemporaryDirectory() as cache:
        cold = check(ROOT, python, ["--max-depth", "1"], ["--engine", "kernel"], Path(cache))
        warm = check(ROOT, python, ["--max-depth", "1"], ["--engine", "kernel"], Path(cache))
    return {"cold_seconds": round(cold["wall"], 1), "warm_seconds": round(warm["wall"], 1)}


_LOOP = "x = 0\nfor i in range(60_000_000):\n    x += i & 7\n"


def ceiling(python: str) -> dict:
    """One CPU-bound loop alone, then two at once: the work two processes do together here."""
    def run(n: int) -> float:
        started = time.monotonic()
        procs = [subprocess.Popen([python, "-c", _LOOP]) for _ in range(n)]
        for p in procs:
            p.wait()
        return time.monotonic() - started
    alone, both = run(1), run(2)
    return {"alone_seconds": round(alone, 2), "two_seconds": round(both, 2), "two_process_speedup": round(2 * alone / both, 2)}


def run(args) -> int:
    results = json.loads(Path(args.json).read_text()) if Path(args.json).exists() else {}
    results.setdefault("machine", {}).update(ceiling(args.python))
    results["compile"] = compile_times(args.python)
    print(json.dumps({"machine": results["machine"], "compile": results["compile"]}), flush=True)
    cache = Path(tempfile.mkdtemp(prefix="kernel-bench-"))
    for workers in ("1", "2"):      # compile once, apart: a whole small check reaches every compiled path
        check(ROOT, args.python, [], ["--engine", "kernel", "--workers", workers], cache)
    differ = 0
    for name, cli, budget in CONFIGS:
        if args.only and name not in args.only:
            continue
        row = results.setdefault("configs", {}).setdefault(name, {"args": cli})
        before_args = cli + (["--time-budget", str(budget)] if budget else [])
        row["before"] = check(args.before_tree.resolve(), args.python, before_args, ["--workers", "1"], cache)
        row["kernel"] = check(ROOT, args.python, cli, ["--engine", "kernel", "--workers", "1"], cache)
        row["kernel2"] = check(ROOT, args.python, cli, ["--engine", "kernel", "--workers", "2"], cache)
        row["budget"] = budget
        if budget is None:         # the threads' own ceiling: two one-thread kernel runs at once
            row["kernel_pair"] = pair(ROOT, args.python, cli, ["--engine", "kernel", "--workers", "1"], cache)
        row["threads_same"] = all(row["kernel"].get(f) == row["kernel2"].get(f) for f in
                                  ("result", "distinct_states", "transitions", "states_per_level", "terminal_states",
                                   "verdicts"))
        differ += not row["threads_same"]
        b, k = row["before"], row["kernel"]
        if budget is None:
            same = all(b.get(f) == k.get(f) for f in ("result", "distinct_states", "transitions", "states_per_level",
                                                          "terminal_states", "verdicts"))
            row["same"] = same
            differ += not same
        print(f"{name}: before {b.get('distinct_states')} states {b['wall']:.1f}s, kernel {k.get('distinct_states')} "
              f"states {k['wall']:.1f}s, 2 threads {row['kernel2']['wall']:.1f}s"
              f"{', two processes at once ' + format(row['kernel_pair']['wall'], '.1f') + 's' if budget is None else ''}"
              f"{'' if budget else ', same' if row['same'] else ', DIFFERENT'}", flush=True)
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 1 if differ else 0


def table(path: str) -> list[str]:
    data = json.loads(Path(path).read_text())
    m, c = data["machine"], data["compile"]
    lines = [f"Two CPU-bound processes here do {m['two_process_speedup']}x the work of one "
             f"({m['alone_seconds']} s alone, {m['two_seconds']} s for two at once). Kernel compile: "
             f"{c['cold_seconds']} s with a cold cache, {c['warm_seconds']} s warm (a one-level check each). Ratios of "
             f"states/s; the wall time includes the interpreter's start-up and the report.", "",
             "| config | distinct states | before (1 process): wall, states/s, peak RSS | kernel, 1 thread: wall, "
             "states/s, peak RSS | kernel / before | kernel, 2 threads: wall, peak RSS | 2 threads / 1 "
             "| two 1-thread processes at once: wall, their speedup | threads / processes "
             "| search alone (no start-up, no report): before, kernel 1 thread, ratio "
             "| same counts and verdicts (before, threads) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in data["configs"].items():
        b, k = row["before"], row["kernel"]
        rate_b = (b.get("distinct_states") or 0) / b["wall"]
        rate_k = (k.get("distinct_states") or 0) / k["wall"]
        part = f" (first {row['budget']} s: {b.get('distinct_states'):,} states)" if row["budget"] else ""
        k2 = row["kernel2"]
        same = "n/a (budget)" if row["budget"] else "yes" if row["same"] else "NO"
        threads = k["wall"] / k2["wall"]
        two = row.get("kernel_pair")
        both = 2 * k["wall"] / two["wall"] if two else None
        pair_cells = (f"{two['wall']:.1f} s, {both:.2f}x | {threads / both:.2f}" if two else "not run (too big for two "
                      "at once) | n/a")
        sb, sk = b.get("search_seconds"), k.get("search_seconds")
        search = (f"{sb:.1f} s, {sk:.1f} s, {(k.get('distinct_states') or 0) / sk / ((b.get('distinct_states') or 0) / sb):.1f}x"
                  if sb and sk else "not recorded")
        lines.append(f"| {name} | {k.get('distinct_states') or 0:,} | {b['wall']:.0f} s, {rate_b:,.0f}/s, "
                     f"{b['rss_mb']:,} MB{part} | {k['wall']:.1f} s, {rate_k:,.0f}/s, {k['rss_mb']:,} MB | "
                     f"{rate_k / rate_b:.1f}x | {k2['wall']:.1f} s, {k2['rss_mb']:,} MB | {threads:.2f}x "
                     f"| {pair_cells} | {search} | {same}, {'yes' if row['threads_same'] else 'NO'} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("--before-tree", type=Path, required=True, help="a checkout before the kernel")
    r.add_argument("--json", required=True)
    r.add_argument("--python", default=sys.executable)
    r.add_argument("--only", action="append", help="only this config (repeatable)")
    t = sub.add_parser("table")
    t.add_argument("json")
    args = ap.parse_args()
    if args.what == "run":
        return run(args)
    print("\n".join(table(args.json)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
