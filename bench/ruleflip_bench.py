"""The rule-flip gate against real clusters (BENCHMARKS.md, "The rule-flip gate"; make cluster-walks).

    python bench/ruleflip_bench.py --releases 4.4.0,3.9.2 --json bench/results/ruleflip.json

A broker-side rule flipped from Kafka's value must make the model diverge from a real cluster,
or be shown to make no difference a cluster can show. For each release and each rule with
`side = "broker"` in specs/catalogue.toml (the catalogue's broker-side mutants are such flips),
flipped from the release's value: the shortest run of steps a harness can drive after which the
flipped model and the release's part (verifier/engines/cluster/ruleflip.py), written as a
scenario file and acted out on a fresh real cluster by
`kraft-verify cluster-conform --kafka V --flag RULE=VALUE FILE --shrink 0`.

A row passes when the cluster diverges at the run's last step (the steps before it, the common
run, agree), or when no run within the search's bounds tells the two apart, with the reason.
Exit 1 if a flipped model agrees with a real cluster on its case or diverges elsewhere than at
the step that parts the models; 2 if a cluster could not be had.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specs import Model  # noqa: E402
from specs.catalogue import MUTANTS, RELEASES  # noqa: E402
from verifier.engines.cluster.ruleflip import distinguish, flips  # noqa: E402


def shown(path) -> str:
    """A path as the results file records it: from the repository's root when under it, else its
    name, so no machine's own directories are written into a committed result."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def mutant_of(rule: str, value) -> str:
    """The catalogue's mutant that is exactly this flip ('' if none)."""
    return next((m.name for m in MUTANTS.values() if dict(m.changes) == {rule: value}), "")


def act_out(version: str, rule: str, value, scenario: Path, out: Path) -> dict:
    """cluster-conform with the flip on the case: its verdict, where it diverged, its time."""
    flag = f"{rule}={str(value).lower()}"
    args = [sys.executable, "-m", "verifier.cli", "cluster-conform", "--kafka", version, "--flag", flag,
            str(scenario), "--shrink", "0", "--out", str(out)]
    start = time.monotonic()
    p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    row = {"command": f"kraft-verify cluster-conform --kafka {version} --flag {flag} {scenario.name} --shrink 0",
           "exit_code": p.returncode, "cluster_seconds": round(time.monotonic() - start, 1)}
    report = next((ln.split("report: ", 1)[1] for ln in p.stdout.splitlines() if ln.startswith("report: ")), None)
    if report is None or p.returncode in (2, 3):
        row["error"] = ((p.stderr or p.stdout).strip().splitlines() or ["no output"])[-1]
        return row
    case = json.loads((Path(report) / "cluster.json").read_text())["details"]["cases"][0]
    row["report"] = shown(report)
    row["divergence"] = case["divergence"]
    row["skipped"] = case["skipped"]
    # driven steps the cluster did not take (explain.MAY_BE_LEFT_OUT) and what it did instead: a
    # case that agrees this way was acted out along another run than the one that parts the models
    row["not_taken"] = [f"{s['step']} (the cluster: {', '.join(s['taken_by_the_cluster']) or 'nothing'})"
                        for s in case["steps"] if not s["taken"]]
    return row


def gate_row(version: str, rule: str, value, out: Path, depth: int) -> dict:
    rel = RELEASES[version]
    start = time.monotonic()
    case = distinguish(rel.preset, rule, value, max_depth=depth)
    row = {"release": version, "rule": rule, "value": value, "mutant": mutant_of(rule, value),
           "search_seconds": round(time.monotonic() - start, 1), "states_searched": case.states}
    if case.trace is None:
        row.update(verdict="no difference a cluster can show", why=case.why_none)
        return row
    model = case.trace.model
    steps = [model.describe(lbl) for lbl, _ in case.trace.steps]
    row.update(bounds=case.bounds, steps=steps, parts_at=case.parts_at,
               release_takes_last_step=case.release_takes is not None)
    out.mkdir(parents=True, exist_ok=True)
    scenario = out / f"ruleflip-{version}-{rule}.json"
    scenario.write_text(json.dumps(Model.scenario(case.trace, f"ruleflip-{version}-{rule}",
                                                  f"bench/ruleflip_bench.py: {rule}={value} against Kafka {version}"),
                                   indent=2) + "\n")
    row["scenario"] = shown(scenario)
    row.update(act_out(version, rule, value, scenario, out))
    d = row.get("divergence")
    if row.get("error"):
        row["verdict"] = "error"
    elif d is None:
        row["verdict"] = "AGREES: the flip passes unseen" + (
            f" (the cluster took another run: {'; '.join(row['not_taken'])})" if row["not_taken"] else "")
    elif d["index"] >= case.parts_at:
        row["verdict"] = "diverges at the step that parts the models"
    else:
        row["verdict"] = (f"DIVERGES AT STEP {d['index']} of {len(steps)}: in the common run, before step "
                          f"{case.parts_at} that parts the models")
    return row


def markdown(rows: list[dict]) -> list[str]:
    """The table of BENCHMARKS.md ("The rule-flip gate"), one row per flip (tests hold the two
    to bench/results/ruleflip.json)."""
    out = ["| release | rule flipped (mutant) | the case: the flipped model's run | a real cluster | "
           "where (model, Kafka) | search | cluster |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        flip = f"`{r['rule']}={str(r['value']).lower()}`" + (f" ({r['mutant']})" if r["mutant"] else "")
        d = r.get("divergence")
        where = ("; ".join(f"{f['field']}: {json.dumps(f['model'])}, {json.dumps(f['kafka'])}" for f in d["fields"])
                 if d else r.get("why", r.get("error", "")))
        steps = ", ".join(r["steps"]) if r.get("steps") else "none"
        verdict = r["verdict"] + (f" (step {d['index']}, {d['label']})" if d else "")
        cluster = f"{r['cluster_seconds']} s" if "cluster_seconds" in r else "-"
        out.append(f"| {r['release']} | {flip} | {steps} | {verdict} | {where} | {r['search_seconds']} s | {cluster} |")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--releases", default="4.4.0,3.9.2")
    ap.add_argument("--rules", default=None, help="comma-separated broker-side rules (default: all)")
    ap.add_argument("--depth", type=int, default=8, help="driven steps the search goes to (default 8)")
    ap.add_argument("--out", default=str(ROOT / "reports" / "ruleflip-bench"))
    ap.add_argument("--json", default=None)
    ap.add_argument("--markdown", default=None, metavar="JSON", help="print the table of a recorded run and exit")
    a = ap.parse_args()
    if a.markdown:
        print("\n".join(markdown(json.loads(Path(a.markdown).read_text())["rows"])))
        return 0
    rows = []
    for version in a.releases.split(","):
        if version not in RELEASES:
            print(f"unknown release {version}", file=sys.stderr)
            return 2
        for rule, value in flips(RELEASES[version].preset):
            if a.rules and rule not in a.rules.split(","):
                continue
            row = gate_row(version, rule, value, Path(a.out), a.depth)
            rows.append(row)
            where = (f" at step {row['divergence']['index']} ({row['divergence']['label']})"
                     if row.get("divergence") else "")
            print(f"{version} {rule}={str(value).lower()}{' (' + row['mutant'] + ')' if row['mutant'] else ''}: "
                  f"{row['verdict']}{where}" + (f": {row['why']}" if row.get("why") else "")
                  + (f" ERROR {row['error']}" if row.get("error") else ""), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"depth": a.depth, "rows": rows}, indent=2, default=str) + "\n")
    if any(r["verdict"] == "error" for r in rows):
        return 2
    return 1 if any(r["verdict"].startswith(("AGREES", "DIVERGES AT")) for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
