"""Every command's report files before and after a change: a fixed list of small, fast
`kraft-verify` runs (check in its modes, mutants, fuzz, prove, replay, availability, matrix,
spark-check, conform) of a checkout, their summary.json, report.md, JUnit XML and the run
directory's other JSON files (counterexamples, lassos, CTIs, estimate, conform, availability,
matrix) and --dump-graph's .dot, stored with times and paths taken out, and two such captures
compared byte for byte. The mutants are the catalogue's, picked by the rule they break.

    python bench/outputs.py run --tree OLD_CHECKOUT --dest before/ [--python PY] [--only CASE ...]
    python bench/outputs.py run --tree .            --dest after/
    python bench/outputs.py compare before/ after/   # a markdown table, a diff per differing file; exit 1 on one

Each case is one process, `PY -c GC_OFF ARGS --out TMP/out --junit TMP/junit.xml` (the CLI) run from
the checkout with PYTHONPATH=checkout and COLUMNS=200 (a command without --out or --junit runs
without them; replay writes no report, so its stdout is kept instead). Seeds are fixed, so two runs
of the same tree give the same files. Under DEST/<case>/ a run leaves:

    case.json          exit code, the command (normalized), every file name the run wrote, the
                       layout (indent) of each JSON file; compared
    out/..., junit.xml, stdout.txt   the normalized files; compared
    run.json           wall seconds and the end of stderr; not compared

Normalization removes times and paths only:
  JSON: the value of a key naming a time, rate or memory figure (a word of the key among
    seconds/second/elapsed/started/finished/rate/rss/memory/mb/time/timestamp/duration/eta,
    e.g. seconds, bmc_seconds, states_per_second, memory; not *budget*, a limit the command
    line sets) becomes "<time>"; in matrix.json also `mac` (an HMAC over the row, its seconds
    included), `model` and `key` (hashes of the model's source files, which any edit changes)
    become "<hash>"; every string then goes through the text rules.
  text (every file and string): the run's temp dir -> <TMP>, the checkout -> <TREE>, the run id's
    timestamp and pid (check-kafka-20261128-061234-12345) -> check-kafka-TIMESTAMP-PID; JUnit
    time="..." / timestamp="..." -> "<time>"; a markdown metric row `| seconds | ... |`,
    `| states/s | ... |` (label naming a time, rate or memory) -> `| label | <time> |`; matrix.md's
    "model `<hex>`" -> "model `<hash>`"; a number with a unit of time, rate or memory (12s, 0.4 ms,
    42 MB, 19,666 distinct states/s) -> <time> / <rate>.
  A forecast of --estimate (a sample of so many seconds) keeps only its shape: every number is
    "<n>", every list of numbers (the sample's levels) "<numbers>".

Every process runs with Python's garbage collector off (GC_OFF). z3 numbers its terms and reuses
the numbers of terms Python has freed, and a model it returns (prove's CTIs, its BMC traces)
follows those numbers; Python frees z3 objects held in reference cycles whenever its collector
runs, which any allocation anywhere in the process moves. Measured on the code before issue 38:
the same `prove` run with 5,000 small dicts allocated before it gives 3 of its 6 CTIs different;
with the collector off, the same 6 whatever was allocated. The searches do not depend on it.
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SMALL = ["--bound", "fences=0", "--bound", "lossy_crashes=0"]          # 842 states
SCENARIOS = ["specs/scenarios/kip966-last-replica-standing.json",
             "specs/scenarios/kip966-last-replica-standing.pre-kip-966.json",
             "specs/scenarios/maximal-isr-hwm.mutant.json"]
PROVE = ["--max-brokers", "3", "--bmc-max-brokers", "2", "--depth", "4", "--self-check-samples", "10"]


def mutant_breaking(rule: str) -> str:
    """The catalogue's mutant that changes this rule alone (bench/ names no mutant itself)."""
    from specs import MUTANTS
    (name,) = [n for n, m in MUTANTS.items() if set(m.changes) == {rule}]
    return name


def cases() -> dict[str, dict]:
    """name -> args; "out"/"junit": the command takes --out / --junit; "stdout": keep its stdout;
    "shape": JSON numbers blanked (a sample of so many seconds). "{tmp}" in args is the run's temp dir."""
    mutant = mutant_breaking("elr_leader_must_be_unfenced")             # killed in 3 steps
    lasso = mutant_breaking("unfence_elects")                           # a liveness mutant: lassos
    spark = ["spark-check", "--master", "local[2]"]
    return {
        "check-default": {"args": ["check"]},
        "check-workers2-depth12": {"args": ["check", "--workers", "2", "--max-depth", "12"]},
        "check-mutant-stop-at-first": {"args": ["check", "--mutant", mutant, "--stop-at-first"]},
        "check-mutant-continue": {"args": ["check", "--mutant", mutant, "--continue"]},
        "check-mutant-full-state": {"args": ["check", "--mutant", mutant, "--stop-at-first", "--full-state",
                                             "--workers", "1"]},
        "check-preset-pre-kip-966": {"args": ["check", "--preset", "pre-kip-966", "--continue"]},
        "check-symmetry": {"args": ["check", "--flag", "any_candidate_elections=true", "--compare-symmetry",
                                    "--bound", "fences=0"]},
        "check-dump-graph": {"args": ["check", *SMALL, "--workers", "1", "--dump-graph", "{tmp}/graph.dot"]},
        "check-simulate": {"args": ["check", "--simulate", "200", "--depth", "30", "--seed", "7"]},
        "check-liveness": {"args": ["check", "--liveness", *SMALL]},
        "check-liveness-mutant": {"args": ["check", "--liveness", "--mutant", lasso, "--workers", "1"]},
        "check-estimate-exact": {"args": ["check", "--estimate", "20", "--workers", "1", *SMALL], "junit": False},
        "check-estimate-forecast": {"args": ["check", "--estimate", "2", "--workers", "1"], "junit": False,
                                    "shape": True},
        "check-max-states": {"args": ["check", "--max-states", "2000"]},
        "mutants-one": {"args": ["mutants", "--only", mutant]},
        "fuzz": {"args": ["fuzz", "--examples", "30", "--seed", "1"]},
        "fuzz-mutant": {"args": ["fuzz", "--mutant", mutant, "--examples", "100", "--seed", "1"]},
        "prove-small": {"args": ["prove", *PROVE]},
        "prove-proved": {"args": ["prove", *PROVE, "--invariant", "IsrElrDisjoint", "--invariant", "LeaderInIsr"]},
        "prove-n3": {"args": ["prove", "--max-brokers", "3"]},
        "prove-mutant": {"args": ["prove", "--mutant", mutant, *PROVE[:2], "--bmc-max-brokers", "3", *PROVE[4:]]},
        "replay": {"args": ["replay", "-v", "--check-invariants", *SCENARIOS], "out": False, "junit": False,
                   "stdout": True},
        "availability": {"args": ["availability", "--runs", "50", "--seed", "3", "--fault-steps", "10",
                                  "--heal-steps", "20"], "junit": False},
        "matrix": {"args": ["matrix", "--presets", "kafka-4.4,kafka-3.9,pre-kip-966", "--bound-sets",
                            "default,config", "--brokers", "2"], "junit": False},
        "spark-check": {"args": [*spark, "--max-depth", "10"]},
        "spark-check-mutant": {"args": [*spark, "--mutant", mutant, "--driver-levels", "0", "--max-depth", "8"]},
        "conform-walks": {"args": ["conform", "--kafka", "4.4.0", "--walks", "20", "--depth", "20", "--seed", "5"]},
        "conform-files": {"args": ["conform", "--kafka", "4.4.0", "specs/scenarios/kafka-rcmt-elr-clean-election.json",
                                   "specs/scenarios/kip966-last-replica-standing.json"]},
    }


KEPT = (".json", ".md", ".dot")          # report.html and spark.log are only listed
TIME_WORDS = {"seconds", "second", "elapsed", "started", "finished", "rate", "rss", "memory", "mb", "time",
              "timestamp", "duration", "eta"}
HASH_KEYS = {"matrix.json": {"mac", "model", "key"}}
RUN_ID = re.compile(r"(?<=-)\d{8}-\d{6}-\d+\b")
UNIT = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:s|ms| ms|MB| MB| seconds?)\b")
RATE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?((?: [a-z]+)+/s)\b")
METRIC_ROW = re.compile(r"^(\| *(?:[^|\n]*\b(?:seconds?|elapsed|time|memory|rss|MB)\b[^|\n]*|[^|\n]*/s) *\|)[^|\n]*\|$",
                        re.MULTILINE)           # a two-cell row: | metric | value |
JUNIT_TIME = re.compile(r'\b(time|timestamp)="[^"]*"')
SOURCE_HASH = re.compile(r"model `[0-9a-f]{16}`")


def time_key(name: str) -> bool:
    words = set(re.split(r"[_\W]+", name.lower()))
    return bool(words & TIME_WORDS) and "budget" not in words


def text_rules(text: str, tmp: str, tree: str) -> str:
    """Paths and run ids, then figures with a unit of time, rate or memory."""
    text = text.replace(tmp, "<TMP>").replace(tree, "<TREE>")
    text = RUN_ID.sub("TIMESTAMP-PID", text)
    text = RATE.sub(r"<rate>\1", text)
    return UNIT.sub("<time>", text)


def norm_json(value, tmp: str, tree: str, hashes: set, shape: bool):
    """Time keys blanked, strings through the text rules; `shape`: every number blanked."""
    if isinstance(value, dict):
        return {k: "<time>" if time_key(k) else "<hash>" if k in hashes else norm_json(v, tmp, tree, hashes, shape)
                for k, v in value.items()}
    if shape and isinstance(value, list) and all(isinstance(v, (int, float)) for v in value):
        return "<numbers>"       # how many levels a sample of so many seconds finished is a time too
    if isinstance(value, list):
        return [norm_json(v, tmp, tree, hashes, shape) for v in value]
    if isinstance(value, str):
        return text_rules(value, tmp, tree)
    if shape and isinstance(value, (int, float)) and not isinstance(value, bool):
        return "<n>"
    return value


def json_layout(text: str) -> str:
    """How the file was written (indent, ASCII escapes, final newline), so a change of layout
    is a difference even though the stored copy is rewritten."""
    data = json.loads(text)
    for indent in (None, 1, 2, 4):
        for ascii_ in (True, False):
            dumped = json.dumps(data, indent=indent, ensure_ascii=ascii_)
            if text in (dumped, dumped + "\n"):
                return f"indent={indent} ensure_ascii={ascii_} newline={text.endswith(chr(10))}"
    return "other"


def norm_text(name: str, text: str, tmp: str, tree: str) -> str:
    if name.endswith(".xml"):
        text = JUNIT_TIME.sub(r'\1="<time>"', text)
    if name.endswith(".md"):
        text = METRIC_ROW.sub(r"\1 <time> |", text)
        text = SOURCE_HASH.sub("model `<hash>`", text)
    return text_rules(text, tmp, tree)


def store(src: Path, dest: Path, tmp: str, tree: str, shape: bool) -> str:
    """The normalized copy of one file; returns the JSON layout ('' for text)."""
    text = src.read_text()
    dest.parent.mkdir(parents=True, exist_ok=True)
    if src.suffix == ".json":
        data = norm_json(json.loads(text), tmp, tree, HASH_KEYS.get(src.name, set()), shape)
        dest.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        return json_layout(text)
    dest.write_text(norm_text(src.name, text, tmp, tree))
    return ""


GC_OFF = "import gc, sys; gc.disable(); from verifier.cli import main; sys.exit(main())"


def command(case: dict, python: str, tmp: Path) -> list[str]:
    args = [a.replace("{tmp}", str(tmp)) for a in case["args"]]
    args += ["--out", str(tmp / "out")] if case.get("out", True) else []
    args += ["--junit", str(tmp / "junit.xml")] if case.get("junit", True) else []
    return [python, "-c", GC_OFF, *args]


def run_case(name: str, case: dict, tree: Path, python: str, dest: Path) -> tuple[int, float]:
    """One process; its files normalized into dest/<name> (replaced whole)."""
    env = dict(os.environ, PYTHONPATH=str(tree), COLUMNS="200")
    with tempfile.TemporaryDirectory(prefix="kv-outputs-") as tmp_name:
        tmp = Path(tmp_name).resolve()
        argv = command(case, python, tmp)
        started = time.monotonic()
        proc = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True)
        wall = time.monotonic() - started
        target = dest / (name + ".partial")
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        files, layouts = [], {}
        for path in sorted(p for p in tmp.rglob("*") if p.is_file()):
            rel = RUN_ID.sub("TIMESTAMP-PID", str(path.relative_to(tmp)))
            files.append(rel)
            if path.suffix in KEPT or path.name == "junit.xml":
                layout = store(path, target / rel, str(tmp), str(tree), case.get("shape", False))
                if layout:
                    layouts[rel] = layout
        if case.get("stdout"):
            (target / "stdout.txt").write_text(norm_text("stdout.txt", proc.stdout, str(tmp), str(tree)))
        facts = {"command": text_rules(" ".join(argv[1:]), str(tmp), str(tree)), "exit_code": proc.returncode,
                 "files": files, "json_layout": layouts}
        (target / "case.json").write_text(json.dumps(facts, indent=1) + "\n")
        (target / "run.json").write_text(json.dumps({"wall_seconds": round(wall, 2), "tree": str(tree),
                                                     "stderr_tail": proc.stderr[-2000:]}, indent=1) + "\n")
        shutil.rmtree(dest / name, ignore_errors=True)
        target.rename(dest / name)
    return proc.returncode, wall


def run(tree: Path, dest: Path, python: str, only: list[str]) -> int:
    which = cases()
    unknown = [n for n in only if n not in which]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}; cases: {', '.join(which)}", file=sys.stderr)
        return 2
    names = only or list(which)
    dest.mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(names, 1):
        code, wall = run_case(name, which[name], tree, python, dest)
        print(f"[{i}/{len(names)}] {name}: exit {code}, {wall:.1f}s", flush=True)
    return 0


def files_of(case_dir: Path) -> set[str]:
    return {str(p.relative_to(case_dir)) for p in case_dir.rglob("*") if p.is_file() and p.name != "run.json"}


def exit_of(case_dir: Path) -> str:
    try:
        return str(json.loads((case_dir / "case.json").read_text())["exit_code"])
    except (OSError, ValueError, KeyError):
        return "?"


def compare(before: Path, after: Path) -> tuple[list[str], list[str], int]:
    """The table, the diffs and how many cases differ."""
    lines = ["| case | exit | files | result |", "|---|---|---|---|"]
    diffs: list[str] = []
    differ = 0
    cases = sorted({p.name for p in before.iterdir() if p.is_dir() and not p.name.endswith(".partial")}
                   | {p.name for p in after.iterdir() if p.is_dir() and not p.name.endswith(".partial")})
    for case in cases:
        a, b = before / case, after / case
        if not a.is_dir() or not b.is_dir():
            lines.append(f"| {case} | | | MISSING in {'before' if not a.is_dir() else 'after'} |")
            differ += 1
            continue
        names = sorted(files_of(a) | files_of(b))
        bad = [n for n in names if not (a / n).is_file() or not (b / n).is_file()
               or (a / n).read_bytes() != (b / n).read_bytes()]
        for n in bad:
            old = (a / n).read_text().splitlines(keepends=True) if (a / n).is_file() else []
            new = (b / n).read_text().splitlines(keepends=True) if (b / n).is_file() else []
            diff = list(difflib.unified_diff(old, new, f"before/{case}/{n}", f"after/{case}/{n}"))
            diffs += [f"### {case}/{n}", "```diff", *(d.rstrip("\n") for d in diff[:40])]
            diffs += [f"... ({len(diff) - 40} more diff lines)"] if len(diff) > 40 else []
            diffs.append("```")
        ea, eb = exit_of(a), exit_of(b)
        differ += bool(bad)
        lines.append(f"| {case} | {ea if ea == eb else f'{ea} -> {eb}'} | {len(names)} | "
                     + (f"DIFFERENT: {', '.join(bad)}" if bad else "same") + " |")
    lines.append("")
    lines.append(f"{len(cases)} cases, {differ} with a difference")
    return lines, diffs, differ


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("--tree", type=Path, required=True, help="the checkout whose code runs")
    r.add_argument("--dest", type=Path, required=True, help="where the normalized files go")
    r.add_argument("--python", default=sys.executable)
    r.add_argument("--only", action="append", default=[], metavar="NAME",
                   help="only this case (repeatable; an unknown name lists them)")
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = ap.parse_args()
    if args.what == "run":
        return run(args.tree.resolve(), args.dest, args.python, args.only)
    lines, diffs, differ = compare(args.before, args.after)
    print("\n".join(lines + ([""] + diffs if diffs else [])))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
