"""Behaviour before and after a change: every row of the matrix (each preset under each
default bound set) and every mutant under the same bound sets, run through `kraft-verify check`
of two checkouts, compared on distinct states, transitions, states per level, terminal
states, each property's verdict and every counterexample trace (its operations, step by
step).

    python bench/equivalence.py run --tree OLD_CHECKOUT --json before.json
    python bench/equivalence.py run --tree .            --json after.json
    python bench/equivalence.py compare before.json after.json      # a markdown table; exit 1 on a difference
    python bench/equivalence.py compare --common before.json a.json b.json   # parts of a run, finished cases only
    python bench/equivalence.py run --tree . --engine kernel --json kernel.json   # every case on the compiled kernel
    python bench/equivalence.py run --tree . --no-rows --no-mutants --json sym.json   # the symmetric cases only

A run stopped part-way keeps the cases it finished in its JSON file and goes on from there when
started again with the same --json.

Each checkout runs with its own code (`python -m verifier.cli` from its directory). The rows use
the one-process search and the mutants two workers, so both searches are compared. A case is
described to the CLI as a config file (preset, replicas, min ISR, spare brokers, bounds), which
every version of the command line reads.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FIELDS = ("result", "distinct_states", "transitions", "states_per_level", "terminal_states")


def cases(rows: bool, mutants: bool, symmetric: bool = True) -> list[dict]:
    """The matrix's rows and each mutant under the same bound sets, as config files' contents;
    with `symmetric`, also kafka and each mutant at the default bounds with
    any_candidate_elections, where symmetry reduction is on (`@default+symmetric`: stop 67's
    bug, step properties judged on renamed successors, passed every case without them)."""
    from specs import MUTANTS, Model, make_config, mutant_config
    from verifier.studies.matrix import BOUND_SETS, DEFAULT_SETS, RELEASES, Row, row_config
    out = []
    if symmetric:
        base = make_config("kafka", bounds=dict(BOUND_SETS["default"]), flags={"any_candidate_elections": True})
        for name in [None, *(m for m in MUTANTS if not MUTANTS[m].liveness)]:
            cfg = base if name is None else mutant_config(base, name)
            if Model(cfg).symmetric:
                out.append({"id": f"{name or 'kafka'}@default+symmetric", "cfg": cfg, "workers": 2})
    for preset in RELEASES if rows else ():
        for bounds in DEFAULT_SETS:
            out.append({"id": f"{preset}@{bounds}", "cfg": row_config(Row(preset, bounds)), "workers": 1})
    for name in MUTANTS if mutants else ():
        if MUTANTS[name].liveness:
            continue                   # only check --liveness sees it
        for bounds in DEFAULT_SETS:
            base = row_config(Row("kafka", bounds))
            out.append({"id": f"{name}@{bounds}", "cfg": mutant_config(base, name), "workers": 2})
    return out


def toml_of(cfg) -> str:
    """The case as a config file: its preset (composed), mutant, shape and every bound."""
    from dataclasses import asdict
    from specs import explicit_flags
    lines = [f'preset = "{cfg.preset}"', f"replicas = {list(cfg.replicas)}", f"min_isr = {cfg.min_isr}"]
    lines += [f'mutant = "{cfg.mutant}"'] if cfg.mutant else []
    lines += [f"spare_brokers = {list(cfg.extra_brokers)}"] if cfg.extra_brokers else []
    lines += ["[bounds]"] + [f"{k} = {v}" for k, v in asdict(cfg.bounds).items()]
    flags = explicit_flags(cfg)
    lines += ["[flags]"] + [f"{k} = {json.dumps(v)}" for k, v in flags.items()] if flags else []
    return "\n".join(lines) + "\n"


def facts(summary: dict, out: Path) -> dict:
    counts = summary["counts"]
    got = {k: counts.get(k) for k in FIELDS[1:]}
    got["result"] = summary["result"]
    got["verdicts"] = {row["name"]: row["status"] for row in summary["invariants"]}
    got["deadlock"] = summary.get("deadlock", {}).get("found")
    traces = {}
    for name, cex in sorted(summary["counterexamples"].items()):
        data = json.loads((out / cex["scenario"]).read_text())
        traces[name] = [step for step in data["steps"] if "op" in step]
    got["traces"] = traces
    return got


def run(tree: Path, which: list[dict], python: str, json_out: Path, engine: str | None = None,
        workers: int | None = None) -> dict:
    """Each case's facts, the JSON file rewritten after every case (a long run stopped keeps
    what it has; the same command goes on from it)."""
    results = json.loads(json_out.read_text()) if json_out.exists() else {}
    env = dict(os.environ, PYTHONPATH=str(tree), COLUMNS="200")
    for i, case in enumerate(which, 1):
        if case["id"] in results and "error" not in results[case["id"]]:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "case.toml"
            config.write_text(toml_of(case["cfg"]))
            started = time.monotonic()
            count = workers or (1 if engine else case["workers"])
            chosen = ["--engine", engine] if engine else []
            proc = subprocess.run([python, "-m", "verifier.cli", "check", "--config", str(config), "--workers",
                                   str(count), *chosen, "--out", str(Path(tmp) / "out"), "-q"],
                                  cwd=tree, env=env, capture_output=True, text=True)
            runs = list((Path(tmp) / "out").glob("*/summary.json"))
            if proc.returncode not in (0, 1) or len(runs) != 1:
                results[case["id"]] = {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"}
            else:
                results[case["id"]] = facts(json.loads(runs[0].read_text()), runs[0].parent)
            print(f"[{i}/{len(which)}] {case['id']}: {results[case['id']].get('distinct_states', 'ERROR')} states, "
                  f"{time.monotonic() - started:.1f}s", flush=True)
            json_out.write_text(json.dumps(results, indent=1) + "\n")
    return results


def compare(before: dict, after: dict, common: bool = False) -> tuple[list[str], int]:
    """The table and how many cases differ; `common`: only the cases both runs finished (a run
    stopped part-way), the others counted in a last line."""
    left_out = 0
    if common:
        both = set(before) & set(after)
        left_out = len(set(before) | set(after)) - len(both)
        before = {k: v for k, v in before.items() if k in both}
        after = {k: v for k, v in after.items() if k in both}
    lines = ["| case | states | transitions | states per level | terminal | verdicts | traces |",
             "|---|---|---|---|---|---|---|"]
    differ = 0
    for case in sorted(set(before) | set(after)):
        a, b = before.get(case), after.get(case)
        if a is None or b is None or "error" in a or "error" in b:
            lines.append(f"| {case} | missing or failed: {(a or {}).get('error', a is None)} / "
                         f"{(b or {}).get('error', b is None)} | | | | | |")
            differ += 1
            continue
        same = [a[k] == b[k] for k in ("distinct_states", "transitions", "states_per_level", "terminal_states")]
        same += [a["verdicts"] == b["verdicts"] and a["result"] == b["result"] and a["deadlock"] == b["deadlock"],
                 a["traces"] == b["traces"]]
        differ += not all(same)
        cells = [f"{a['distinct_states']:,}" if same[0] else f"{a['distinct_states']:,} -> {b['distinct_states']:,}",
                 f"{a['transitions']:,}" if same[1] else f"{a['transitions']:,} -> {b['transitions']:,}"]
        cells += ["same" if s else "DIFFERENT" for s in same[2:4]]
        cells += [f"same ({len(a['verdicts'])}, {sum(v == 'violated' for v in a['verdicts'].values())} violated)"
                  if same[4] else "DIFFERENT",
                  f"same ({len(a['traces'])})" if same[5] else "DIFFERENT"]
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"{len(set(before) | set(after))} cases, {differ} with a difference"
                 + (f"; {left_out} cases left out (not finished by both runs)" if left_out else ""))
    return lines, differ


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("--tree", type=Path, required=True, help="the checkout whose code runs")
    r.add_argument("--json", required=True)
    r.add_argument("--python", default=sys.executable)
    r.add_argument("--no-rows", action="store_true")
    r.add_argument("--no-mutants", action="store_true")
    r.add_argument("--no-symmetric", action="store_true", help="leave out the @default+symmetric cases")
    r.add_argument("--workers", type=int, help="every case with this many workers (any checkout)")
    r.add_argument("--engine", choices=("kernel", "python"),
                   help="pass --engine to check, every case with one worker (kernel: the compiled kernel; "
                        "python: the one-process search); a checkout before the kernel has no such option")
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after", nargs="+", help="one run's JSON, or several that together make it")
    c.add_argument("--common", action="store_true", help="only the cases both sides finished")
    args = ap.parse_args()
    if args.what == "run":
        which = cases(not args.no_rows, not args.no_mutants, not args.no_symmetric)
        run(args.tree.resolve(), which, args.python, Path(args.json), args.engine, args.workers)
        return 0
    after: dict = {}
    for part in args.after:
        after.update(json.loads(Path(part).read_text()))
    lines, differ = compare(json.loads(Path(args.before).read_text()), after, args.common)
    print("\n".join(lines))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
