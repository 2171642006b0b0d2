"""JUnit XML from a summary (summary.json's schema), for every engine and the mutation gate.

One test case per invariant (and Deadlock), or per mutant for the gate. A violated invariant
is a failure carrying ITS OWN counterexample (length, table, replay command); a run cut short
is an error, never a pass; a sampling engine's "not violated" is a pass that says it is a
sample.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from verifier.core.files import PathLike, write_atomic
from verifier.reports.text import kv, plain_table, scalar, symmetry_text
from verifier.reports.summary import HOLDS, SAMPLED_STATUS, UNKNOWN_STATUS, VIOLATED

_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml(text: Any) -> str:
    """ElementTree writes control characters unescaped, which makes the XML unreadable."""
    return _XML_BAD.sub("?", str(text))


def _stopped_message(summary: dict) -> str:
    default = "the run stopped at the first violation" if summary.get("result") == "violation" \
        else "no reason given"
    return f"stopped before completion: {summary.get('stop_reason') or default}"


def _replay_path(summary: dict, scenario: str) -> str:
    where = summary.get("report_dir")
    return f"{where}/{scenario}" if where else scenario


def cex_text(summary: dict, cex: dict) -> str:
    head = f"counterexample ({cex['length']} steps), violates {', '.join(cex.get('violated') or [])}"
    reasons = "".join(f"\nwhy {name} fails: {text}" for name, text in (cex.get("why") or {}).items() if text)
    tail = f"\nreplay: kraft-verify replay {_replay_path(summary, cex['scenario'])}" if cex.get("scenario") else ""
    return f"{head}\n{plain_table(tuple(r) for r in cex.get('rows') or [])}{reasons}{tail}"


def _case(suite: ET.Element, summary: dict, name: str, seconds: float) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=f"kraft-verify.{summary.get('engine', '?')}",
                         name=_xml(name), time=f"{seconds:.3f}")


def _outcome(case: ET.Element, tag: str, message: str, text: str = "", kind: str = "") -> None:
    el = ET.SubElement(case, tag, message=_xml(message), type=kind or tag)
    if text:
        el.text = _xml(text)


def _note(case: ET.Element, text: str) -> None:
    ET.SubElement(case, "system-out").text = _xml(text)


def _invariant(summary: dict, inv: dict, case: ET.Element) -> None:
    status = inv.get("status")
    if status == VIOLATED and inv.get("counterexample"):
        cex = inv["counterexample"]
        _outcome(case, "failure", f"{inv['name']} violated in {cex['length']} steps", cex_text(summary, cex),
                 "InvariantViolation")
    elif status == VIOLATED:
        _outcome(case, "failure", f"{inv['name']} violated", inv.get("detail", ""), "InvariantViolation")
    elif status == HOLDS and summary.get("result") != "stopped":
        if inv.get("detail"):
            _note(case, inv["detail"])
    elif status == SAMPLED_STATUS and summary.get("result") != "stopped":
        _note(case, f"not violated in {summary.get('counts', {}).get('samples', '?')} sampled runs "
                    "(a sample, not a proof)")
    elif status == "excepted" and summary.get("result") != "stopped":
        _note(case, f"{inv['name']}: {inv.get('detail', 'a documented exception')} (lasso in "
                    f"{(inv.get('counterexample') or {}).get('scenario', '-')})")
    elif status == UNKNOWN_STATUS:
        _outcome(case, "error", f"{inv['name']}: neither proved nor refuted", inv.get("detail", ""), "Unknown")
    else:
        _outcome(case, "error", _stopped_message(summary), inv.get("detail", ""), "Stopped")


def _deadlock(summary: dict, case: ET.Element) -> None:
    dl = summary["deadlock"]
    if dl.get("found"):
        cex = (summary.get("counterexamples") or {}).get("Deadlock")
        _outcome(case, "failure", "deadlock: a state where nothing can happen",
                 cex_text(summary, cex) if cex else "", "Deadlock")
    elif not dl.get("complete"):
        _outcome(case, "error", _stopped_message(summary), kind="Stopped")


def _mutant(summary: dict, row: dict, case: ET.Element) -> None:
    status = row["status"]
    if status == "killed":
        _note(case, f"killed by {', '.join(row['killed_by'])} in {row.get('length')} steps")
    elif status == "survived":
        _outcome(case, "failure", f"mutant {row['mutant']} survived: no invariant watches its rule",
                 kind="SurvivingMutant")
    elif status == "outside":
        ET.SubElement(case, "skipped", message=_xml(f"outside this engine: {row.get('reason')}"))
    else:
        _outcome(case, "error", f"mutant {row['mutant']} not killed: {row.get('reason') or status}", kind="Stopped")


def _properties(suite: ET.Element, summary: dict) -> None:
    cfg = summary.get("config", {})
    c = summary.get("counts", {})
    props = {"tool": summary.get("tool"), "engine": summary.get("engine"), "run_id": summary.get("run_id"),
             "command": summary.get("command"), "result": summary.get("result"),
             "exit_code": summary.get("exit_code"), "stop_reason": summary.get("stop_reason"),
             "preset": cfg.get("preset"), "mutant": cfg.get("mutant"),
             "replicas": ",".join(str(r) for r in cfg.get("replicas") or []), "min_isr": cfg.get("min_isr"),
             "flags": kv(cfg.get("flags")), "bounds": kv(cfg.get("bounds")),
             "distinct_states": c.get("distinct_states"), "depth": c.get("depth"),
             "symmetry": symmetry_text(summary.get("symmetry") or {})}
    el = ET.SubElement(suite, "properties")
    for k, v in props.items():
        ET.SubElement(el, "property", name=k, value=_xml(scalar(v)))


def build_junit(summary: dict) -> ET.Element:
    """<testsuites> with one <testsuite>: one testcase per invariant (+ Deadlock) or per mutant."""
    seconds = float(summary.get("counts", {}).get("seconds") or 0.0)
    cfg = summary.get("config", {})
    name = f"kraft-verify {summary.get('engine', '?')} {cfg.get('preset', '?')}"
    suite = ET.Element("testsuite", name=_xml(name + (f" {cfg['mutant']}" if cfg.get("mutant") else "")),
                       time=f"{seconds:.3f}")
    _properties(suite, summary)
    if "mutants" in summary:
        for row in summary["mutants"]:
            _mutant(summary, row, _case(suite, summary, row["mutant"], row.get("seconds") or 0.0))
    else:
        invariants = summary.get("invariants", [])
        deadlock = bool(summary.get("deadlock", {}).get("checked"))
        share = seconds / max(len(invariants) + deadlock, 1)      # one pass checks all: split its time
        for inv in invariants:
            _invariant(summary, inv, _case(suite, summary, inv["name"], share))
        if deadlock:
            _deadlock(summary, _case(suite, summary, "Deadlock", share))
    if summary.get("result") != "ok" and not suite.findall("testcase/failure") + suite.findall("testcase/error"):
        _outcome(_case(suite, summary, "Run", 0.0), "error",        # a bad run is never green
                 f"result {summary.get('result')!r}: {summary.get('stop_reason') or '-'}", kind="RunNotOk")
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(c.find("failure") is not None for c in cases)))
    suite.set("errors", str(sum(c.find("error") is not None for c in cases)))
    suite.set("skipped", str(sum(c.find("skipped") is not None for c in cases)))
    root = ET.Element("testsuites", name="kraft-verify")
    root.append(suite)
    for k in ("tests", "failures", "errors", "time"):
        root.set(k, suite.get(k))
    return root


def write_junit(summary: dict, path: PathLike) -> None:
    """JUnit XML so CI shows each invariant (or mutant) as a test."""
    tree = ET.ElementTree(build_junit(summary))
    ET.indent(tree)
    write_atomic(path, ET.tostring(tree.getroot(), encoding="unicode", xml_declaration=True) + "\n")
