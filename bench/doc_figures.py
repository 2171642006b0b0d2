"""The figures README.md and docs/ quote from a command, made by that command (issue 61).

A figure is a marked region of a document, inline or over whole lines:

    <!-- figure availability kafka.data_loss_runs -->57<!-- /figure -->
    <!-- figure availability-table -->
    | variant | runs | ...
    <!-- /figure -->

Its text is what the producer the marker names makes of the command's output (a region's
first word; the rest are its arguments). `--check` (tests/test_doc_figures.py runs it) exits 1
naming every region whose text is not what the command says now; `--write` puts the command's
figures in place. A figure retyped by hand, or one a change of the model moved, fails the check.

    .venv/bin/python bench/doc_figures.py --check
    .venv/bin/python bench/doc_figures.py --write

Producers: `availability-table` and `availability-recovery` (the tables of `kraft-verify
availability` at its defaults, as its report.md has them), `availability VARIANT.FIELD` (one
figure of a variant's summary: a `_fraction` as a percentage), `presets` (every preset
`--preset` takes), `fuzz-profile NAME.SETTING` (a Hypothesis profile's setting), `mutants`
(how many mutants the catalogue holds), `check-states ARGS` (the distinct states of `kraft-verify
check ARGS`, run to its end), `findings-cluster FILE` (a finding's scenario on
every release's real cluster, from the runs bench/findings_clusters.py recorded) and
`validate-clusters` (every such cluster's own metadata log validated, from
bench/validate_clusters.py's rows).
"""
from __future__ import annotations

import argparse
import functools
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
REGION = re.compile(r"<!-- figure ([^>]*?) -->(.*?)<!-- /figure -->", re.S)
DOCS = ("README.md", "docs/*.md")


@functools.lru_cache(maxsize=None)
def availability() -> dict:
    """`kraft-verify availability` at its defaults: its JSON (about 7 s)."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "verifier.cli", "availability", "--out", out], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        return json.loads(next(Path(out).glob("*/availability.json")).read_text())


def _availability_table() -> str:
    from verifier.reports.availability import COLUMNS, row
    rep = availability()
    return "\n".join(["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
                     + ["| " + " | ".join(row(v)) + " |" for v in rep["variants"]])


def _availability_recovery() -> str:
    rep = availability()
    buckets = list(rep["variants"][0]["summary"]["recovery"]["histogram"])
    return "\n".join(["| variant | " + " | ".join(buckets) + " |", "|" + "---|" * (len(buckets) + 1)]
                     + [f"| {v['name']} | " + " | ".join(str(v["summary"]["recovery"]["histogram"][b])
                                                        for b in buckets) + " |" for v in rep["variants"]])


def _availability_figure(path: str) -> str:
    name, _, field = path.partition(".")
    variant = next((v for v in availability()["variants"] if v["name"] == name), None)
    if variant is None:
        raise KeyError(f"availability has no variant {name!r}")
    value = dict(variant["summary"])
    value["data_loss_runs_beyond_tolerance"] = value["data_loss_runs"] - value["data_loss_runs_within_tolerance"]
    for key in field.split("."):
        value = value[key]
    if field.endswith("_fraction"):
        return f"{100 * value:.1f}%"
    return f"{value:,}" if isinstance(value, int) else str(value)


@functools.lru_cache(maxsize=None)
def _check(*args: str) -> dict:
    """`kraft-verify check ARGS`'s summary (a run that ends: its states are the config's)."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "verifier.cli", "check", *args, "-q", "--out", out], cwd=ROOT,
                       stdout=subprocess.DEVNULL)
        return json.loads(next(Path(out).glob("*/summary.json")).read_text())


def _check_states(*args: str) -> str:
    """The distinct states `kraft-verify check ARGS` counts (it must complete)."""
    summary = _check(*args)
    if summary["result"] == "stopped":
        raise ValueError(f"check {' '.join(args)} did not complete: its states are not the config's")
    return f"{summary['counts']['distinct_states']:,}"


def _presets() -> str:
    from specs.catalogue import PRESETS
    return ", ".join(f"`{p}`" for p in PRESETS)


def _fuzz_profile(path: str) -> str:
    from hypothesis import settings

    import verifier.engines.fuzz  # noqa: F401  (registers the profiles)
    name, _, setting = path.partition(".")
    value = getattr(settings.get_profile(f"kraft-verify-{name}"), setting)
    return f"{value:,}" if isinstance(value, int) else str(value)


def _mutants() -> str:
    from specs.catalogue import MUTANTS
    return str(len(MUTANTS))


FINDINGS_RUNS = ROOT / "bench" / "results" / "issue61" / "findings-clusters.json"


def _outcome(r: dict) -> str:
    """What one run of a finding's file on a real cluster showed, in words."""
    if r["verdict"] == "not drivable":
        return f"not drivable ({r['why']})"
    if r["verdict"] != "agrees":
        return r["verdict"].upper()
    broken = ", ".join(f"{p} (step {n})" for p, n in sorted(r["model_violates"].items(), key=lambda kv: (kv[1], kv[0])))
    lost, kept = ", ".join(r["acknowledged_lost"]), ", ".join(r["acknowledged_kept"])
    return (f"agrees at every one of its {r['steps']} steps; " + (f"the model breaks {broken}" if broken else
                                                                   "the model breaks nothing")
            + (f"; acknowledged {lost} lost" if lost else "") + (f"; acknowledged {kept} kept" if kept else ""))


def _findings_cluster(stem: str) -> str:
    """A finding's file on every release's real cluster (bench/findings_clusters.py's recorded runs),
    releases with the same outcome said together."""
    runs = [r for r in json.loads(FINDINGS_RUNS.read_text())["runs"] if Path(r["file"]).stem == stem]
    if not runs:
        raise KeyError(f"no recorded real-cluster run of {stem}")
    said: dict = {}
    for r in sorted(runs, key=lambda r: r["release"]):
        said.setdefault(_outcome(r), []).append(r["release"])
    return "; ".join(f"{' and '.join(vs)}: {text}" for text, vs in said.items())


VALIDATE_RUNS = ROOT / "bench" / "results" / "issue60" / "validate-clusters.json"
CLUSTER_EXITS = {0: "agrees", 1: "diverges", 2: "not drivable", 3: "not complete"}


def _validate_clusters() -> str:
    """Every real cluster's kept metadata log validated (bench/validate_clusters.py's rows), a
    markdown table: what was driven, each release's validate-log verdict."""
    rows = json.loads(VALIDATE_RUNS.read_text())["runs"]
    out = ["| release | driven on the cluster | cluster-conform | records | every change explained | "
           "checks broken (partition, offset) | unclean elections |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        driven = r["driven"] + (f" ({r['case']})" if r.get("case") and not r["driven"][0].isalpha() else "")
        verdict = CLUSTER_EXITS.get(r["cluster_exit"], f"exit {r['cluster_exit']}")
        if "validate_exit" not in r:
            out.append(f"| {r['release']} | {driven} | {verdict} | no log | | | |")
            continue
        broken = ", ".join(f"{name} ({where.split(' (')[0]})" for name, where in r["broken"].items()) or "none"
        out.append(f"| {r['release']} | {driven} | {verdict} | {r['records']:,} | "
                   f"{'yes' if r['explained'] else '**no**'} | {broken} | {r['unclean_elections']} |")
    return "\n".join(out)


PRODUCERS = {"availability-table": _availability_table, "availability-recovery": _availability_recovery,
             "availability": _availability_figure, "presets": _presets, "fuzz-profile": _fuzz_profile,
             "mutants": _mutants, "findings-cluster": _findings_cluster, "check-states": _check_states,
             "validate-clusters": _validate_clusters}


def produce(spec: str) -> str:
    """The text of the figure `spec` names (its producer's name, then its arguments)."""
    name, *args = spec.split()
    if name not in PRODUCERS:
        raise KeyError(f"no producer of figures named {name!r}")
    return PRODUCERS[name](*args)


def _placed(old: str, text: str) -> str:
    """A region over whole lines keeps its line breaks around the figure."""
    return f"\n{text}\n" if old.startswith("\n") else text


def differences(text: str, where: str = "") -> list[str]:
    """Each region of `text` whose figure is not what its command makes now, in words."""
    out = []
    for m in REGION.finditer(text):
        want = _placed(m[2], produce(m[1]))
        if m[2] != want:
            line = text.count("\n", 0, m.start()) + 1
            shown = m[2].strip().splitlines()[:1] or [""]
            out.append(f"{where}:{line}: figure '{m[1]}' says {shown[0][:60]!r}; the command says "
                       f"{want.strip().splitlines()[0][:60]!r}")
    return out


def rewritten(text: str) -> str:
    return REGION.sub(lambda m: f"<!-- figure {m[1]} -->{_placed(m[2], produce(m[1]))}<!-- /figure -->", text)


def documents() -> list[Path]:
    return sorted({p for pattern in DOCS for p in ROOT.glob(pattern)})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true", help="put the commands' figures in place")
    p.add_argument("--check", action="store_true", help="exit 1 if a figure differs from its command's (default)")
    args = p.parse_args(argv)
    found = []
    for path in documents():
        text = path.read_text()
        if args.write:
            new = rewritten(text)
            if new != text:
                path.write_text(new)
                print(f"rewrote {path.relative_to(ROOT)}")
        else:
            found += differences(text, str(path.relative_to(ROOT)))
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
