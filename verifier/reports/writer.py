"""The one way from a finished run to its files, for every command and study:

    result --save_counterexamples--> counterexample-<P>.json (+ counterexample.json and its ITF),
                                     lasso-<P>.json and .itf.json for a liveness lasso
           --summarize-------------> summary.json
           --write_run-------------> report.md, report.html, JUnit

Every file is written atomically (verifier/core/files.py). A writer reads the result's traces
and the summary, never the model's internals.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from verifier.core.files import json_text, write_atomic
from verifier.reports.story import rows


class JunitError(OSError):
    """The JUnit file could not be written (the command says so in one line)."""


def save_counterexamples(out_dir: Path, result, name: str, command: str, first: bool = True) -> dict[str, dict]:
    """Every violated property's trace as `counterexample-<P>.json` (a replay scenario); the
    first found also as `counterexample.json` with its ITF trace (unless `first` is off: a
    matrix row keeps one file per property); a liveness lasso as `lasso-<P>.json` and
    `lasso-<P>.itf.json`. Returns property -> its summary JSON."""
    from verifier.reports.itf import write_itf
    from verifier.reports.summary import counterexample_json
    out: dict[str, dict] = {}
    for v in result.verdicts:
        if v.trace is not None and v.loop is not None:
            out[v.name] = _save_lasso(out_dir, v, f"{result_id(out_dir)}-{v.name}", command)
        elif v.trace is not None and v.file:        # a divergence: saved where its engine says, as it says
            save_scenario(out_dir, v.file, v.trace, f"{name}-{v.name}", command, v.scenario)
            out[v.name] = counterexample_json(v.trace, v.file)
    for inv, trace in result.counterexamples.items():
        if inv in out:
            continue
        scenario = f"counterexample-{inv}.json"
        save_scenario(out_dir, scenario, trace, f"{name}-{inv}", command)
        out[inv] = counterexample_json(trace, scenario)
    main = result.counterexample if first else None
    if main is not None and main.violated and main.violated[0] not in {v.name for v in result.verdicts
                                                                        if v.loop is not None}:
        save_scenario(out_dir, "counterexample.json", main, f"{name}-{'-'.join(main.violated)}", command)
        write_itf(main, out_dir / "counterexample.itf.json")
        for inv in main.violated:
            if inv in out:
                out[inv]["itf"] = "counterexample.itf.json"
    return out


def save_scenario(out_dir: Path, file: str, trace, name: str, command: str, changes: Optional[dict] = None) -> None:
    """One trace as a replay scenario file, with `changes` to what the model writes (a key
    given None is dropped): a counterexample, a divergence, a z3 witness or CTI."""
    data = trace.model.scenario(trace, name, command)
    for key, value in (changes or {}).items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    write_atomic(Path(out_dir) / file, json.dumps(data, indent=2) + "\n")


def as_divergence(verdict, text: str, name: str, kind: str, notes: str) -> None:
    """A conformance verdict whose trace is saved as divergence.json: a replay scenario named
    `name` of `kind`, `notes` saying where the model and Kafka parted (not an invariant's
    counterexample, so no invariant check on replay)."""
    verdict.detail, verdict.file = text, "divergence.json"
    verdict.scenario = {"name": name, "kind": kind, "notes": notes, "check_invariants": None}


def write_pages(out_dir: Path, pages: dict[str, str]) -> None:
    """A study's own views (the matrix's matrix.md and matrix.html and its cache, availability's
    JSON, markdown and page), each written atomically like every report file."""
    for name, text in pages.items():
        write_atomic(Path(out_dir) / name, text)


def result_id(out_dir: Path) -> str:
    return Path(out_dir).name


def write_run(summary: dict, out_dir: Path, junit: Optional[str], console=None) -> None:
    """summary.json, report.md, report.html and (if asked) JUnit, every one written atomically."""
    from verifier.reports import write_junit, write_report_html, write_report_md
    summary["report_dir"] = str(out_dir)
    write_report_md(summary, out_dir / "report.md")
    write_report_html(summary, out_dir / "report.html")
    write_atomic(out_dir / "summary.json", json_text(summary))
    if junit:
        try:
            write_junit(summary, junit)
        except OSError as exc:
            raise JunitError(exc.errno, f"--junit {junit}: {exc.strerror}") from None
    if console is not None:
        console.print(f"report: {out_dir}", markup=False)


def write_result(result, model, out_dir: Path, run_id: str, command: str, name: str,
                 junit: Optional[str] = None, console=None, also: Optional[str] = None, first: bool = True) -> dict:
    """The whole way, for every command and study: counterexample files (`first`: see
    save_counterexamples), the summary, the reports (and the summary under the command's own
    name too, `also`: conform.json, cluster.json). Returns the summary."""
    from verifier.reports.summary import summarize
    files = save_counterexamples(out_dir, result, name, command, first)
    summary = summarize(result, model, run_id, command, files)
    if also:
        write_atomic(Path(out_dir) / also, json_text(summary))
    write_run(summary, out_dir, junit, console)
    return summary


# ---------------------------------------------------------------- liveness lassos

def lasso_rows(v) -> list[list]:
    """The trace's rows, the cycle's start marked; a stutter ends with the state repeated."""
    out = [list(r) for r in rows(v.trace)]
    out[v.loop][2] = "<< cycle starts here >> " + out[v.loop][2]
    if v.stutter:
        out.append([len(out), "(stutter)", "the run stays here forever: no fair action is enabled"])
    else:
        out.append([len(out), "(back to step " + str(v.loop) + ")", "the cycle repeats forever"])
    return out


def lasso_itf(v) -> dict:
    from verifier.reports.itf import itf_trace
    out = itf_trace(v.trace)
    out["loop"] = v.loop
    out["#meta"]["description"] += f"; a lasso whose cycle starts at state {v.loop}" + (
        " (the last state, stuttering)" if v.stutter else "")
    return out


def lasso_scenario(v, name: str, command: str) -> dict:
    """A replay scenario: the prefix and one turn of the cycle, expecting the loop state at the
    cycle's start and again at its end (the run is back where the cycle began)."""
    trace = v.trace
    data = trace.model.scenario(trace, name, command)
    expect = trace.model.expectation(([trace.initial] + [s for _, s in trace.steps])[v.loop])
    steps = [st for st in data["steps"] if "op" in st]
    steps.insert(v.loop, {"expect": expect, "notes": "the cycle starts here"})
    steps.append({"expect": expect, "notes": "the stutter state" if v.stutter else "back at the cycle's start"})
    data.update(kind="liveness counterexample (lasso)", check_invariants=False, steps=steps,
                notes=f"{', '.join(trace.violated)}: a lasso; the cycle starts after operation {v.loop}"
                      + (" and is the last state repeated (no fair action enabled)" if v.stutter else ""))
    return data


def _save_lasso(out_dir: Path, v, name: str, command: str) -> dict:
    base = f"lasso-{v.name}"
    write_atomic(out_dir / f"{base}.json", json.dumps(lasso_scenario(v, name, command), indent=2) + "\n")
    write_atomic(out_dir / f"{base}.itf.json", json.dumps(lasso_itf(v), indent=1) + "\n")
    return {"length": len(v.trace), "loop": v.loop, "stutter": v.stutter, "violated": [v.name],
            "rows": lasso_rows(v), "scenario": f"{base}.json", "itf": f"{base}.itf.json"}
