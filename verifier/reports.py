"""Writers for a finished run: report.md, JUnit XML, an ITF trace and the state graph.

The checker condenses a run into one `summary` dict (the summary.json schema) and, on a
violation, a `Trace`. Each writer renders those for a different reader: a person (Markdown),
CI (JUnit), Apalache/Quint tooling (ITF) and graph viewers (DOT/GraphML). The writers are
pure: they never run the model, so a report can be rebuilt from a saved summary.json.
"""
from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from typing import Any, Iterable, Optional, Union

import networkx as nx

from specs.actions import describe
from verifier.trace import Trace, rows

PathLike = Union[str, "os.PathLike[str]"]
Row = tuple[int, str, str]

ITF_FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
ITF_VARS = ("ctrl", "replicas", "followers", "inflight", "hist", "action")
GRAPH_SUFFIX_ERROR = "--dump-graph: file must end in .dot, .gv or .graphml"
STOPPED_STATUS = "not checked to completion"
SAMPLED_STATUS = "not violated in sampled runs"     # random walks and Hypothesis: exit 0, no proof


# ---------------------------------------------------------------- shared helpers

def _write_text(path: PathLike, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def _kv(mapping: Optional[dict]) -> str:
    """`a=1, b=true`: flags and bounds on one line, in a stable order."""
    if not mapping:
        return "(defaults)"
    return ", ".join(f"{k}={_scalar(v)}" for k, v in sorted(mapping.items()))


def _scalar(v: Any) -> str:
    """JSON spelling for bools/None so reports match summary.json and the CLI."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return "none" if v is None else str(v)


def _suite_name(summary: dict) -> str:
    cfg = summary.get("config", {})
    name = f"kraft-verify {summary.get('engine', '?')} {cfg.get('preset', '?')}"
    return f"{name} {cfg['mutant']}" if cfg.get("mutant") else name


def _cex_rows(summary: dict, trace: Optional[Trace]) -> list[Row]:
    """Rows from the live trace, else from summary.json, so a saved summary still renders."""
    if trace is not None:
        return rows(trace)
    cex = summary.get("counterexample") or {}
    return [tuple(r) for r in cex.get("rows", [])]


def plain_table(table_rows: Iterable[Row]) -> str:
    """The counterexample as aligned plain text: JUnit failure bodies are shown verbatim."""
    body = [("#", "action", "what changed")] + [(str(n), a, d) for n, a, d in table_rows]
    w0 = max(len(r[0]) for r in body)
    w1 = max(len(r[1]) for r in body)
    return "\n".join(f"{n:>{w0}}  {a:<{w1}}  {d}".rstrip() for n, a, d in body)


# ---------------------------------------------------------------- report.md

def _md_cell(value: Any) -> str:
    """A table cell: `|` would split the cell and a newline would end the row."""
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _md_table(header: list[str], body: Iterable[Iterable[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in body]
    return out


def _md_title(summary: dict) -> str:
    result = summary.get("result")
    if result == "ok":
        text = "all invariants hold"
    elif result == "violation":
        text = "VIOLATION of " + (", ".join(summary.get("violated") or []) or "an invariant")
    else:
        text = f"STOPPED before completion ({summary.get('stop_reason') or 'no reason given'})"
    return f"# kraft-verify {summary.get('engine', '?')}: {text}"


def _md_config(summary: dict) -> list[str]:
    cfg = summary.get("config", {})
    return ["## Configuration", "",
            f"- preset: `{cfg.get('preset')}`",
            f"- mutant: `{cfg['mutant']}`" if cfg.get("mutant") else "- mutant: none",
            f"- replicas: {cfg.get('replicas')}",
            f"- min_isr: {cfg.get('min_isr')}",
            f"- unclean_leader_election: {_scalar(cfg.get('unclean_leader_election'))}",
            f"- flags: {_kv(cfg.get('flags'))}",
            f"- bounds: {_kv(cfg.get('bounds'))}",
            f"- command: `{summary['command']}`" if summary.get("command") else "- command: -",
            f"- run id: `{summary.get('run_id', '-')}`",
            f"- exit code: {summary.get('exit_code', '-')}", ""]


def _symmetry_text(sym: dict) -> str:
    if not sym.get("enabled"):
        return "off" + (f" ({sym['note']})" if sym.get("note") else "")
    text = f"on, group size {sym.get('group_size', '?')}"
    if "states_saved" in sym:
        text += (f", saved {sym['states_saved']:,} of {sym['states_without_symmetry']:,} states "
                 f"(same verdict without it: {'yes' if sym.get('same_verdict') else 'NO'})")
    else:
        text += ", states saved: not measured (run with --compare-symmetry)"
    return text + (f" ({sym['note']})" if sym.get("note") else "")


def _md_counts(summary: dict) -> list[str]:
    c = summary.get("counts", {})
    fp = summary.get("fingerprint", {})
    dl = summary.get("deadlock", {})
    if not dl.get("checked"):
        deadlock = "not checked"
    elif dl.get("found"):
        deadlock = "found"
    else:
        deadlock = "none" if dl.get("complete", summary.get("result") == "ok") else "not checked to completion"
    body = [("distinct states", c.get("distinct_states", "-")),
            ("transitions", c.get("transitions", "-")),
            ("depth", c.get("depth", "-")),
            ("terminal states", c.get("terminal_states", "-")),
            ("seconds", f"{c['seconds']:.2f}" if "seconds" in c else "-"),
            ("states/s", f"{c['states_per_second']:,.0f}" if "states_per_second" in c else "-"),
            (f"fingerprint collision probability ({fp.get('bits', '?')}-bit)",
             f"{fp['collision_probability']:.3g}" if "collision_probability" in fp else "-"),
            ("symmetry", _symmetry_text(summary.get("symmetry", {}))),
            ("deadlock", deadlock)]
    return ["## Counts", ""] + _md_table(["metric", "value"], body) + [""]


def _md_invariants(summary: dict) -> list[str]:
    body = [(i["name"], i.get("kind", "-"), i.get("status", "-")) for i in summary.get("invariants", [])]
    return ["## Invariants", ""] + _md_table(["invariant", "kind", "result"], body) + [""]


def _md_levels(summary: dict) -> list[str]:
    levels = summary.get("counts", {}).get("states_per_level") or []
    if not levels:
        return []
    line = ", ".join(f"{d}:{n}" for d, n in enumerate(levels))
    return ["## States per BFS level", "", f"`{line}` (depth:new states)", ""]


def _md_coverage(summary: dict) -> list[str]:
    body = [(c["action"], c.get("enabled", "-"), c.get("new_states", "-"),
             c.get("status", "-") + (f" ({c['reason']})" if c.get("reason") else ""))
            for c in summary.get("coverage", [])]
    out = ["## Action coverage", ""] + _md_table(["action", "enabled", "new states", "status"], body)
    warnings = summary.get("warnings") or []
    out += ["", "### Warnings", ""] + ([f"- {w}" for w in warnings] or ["None."]) + [""]
    return out


def _md_counterexample(summary: dict, trace: Optional[Trace]) -> list[str]:
    table = _cex_rows(summary, trace)
    if not table:
        return []
    cex = summary.get("counterexample") or {}
    violated = (trace.violated if trace is not None else None) or cex.get("violated") or []
    out = ["## Counterexample", "",
           f"{len(table) - 1} steps; violates {', '.join(violated) or '(nothing recorded)'}.", ""]
    out += _md_table(["#", "action", "what changed"], table)
    files = [f"replay scenario `{cex['scenario']}`" if cex.get("scenario") else "",
             f"ITF trace `{cex['itf']}`" if cex.get("itf") else ""]
    files = [f for f in files if f]
    return out + (["", "Files: " + ", ".join(files) + "."] if files else []) + [""]


def render_report_md(summary: dict, trace: Optional[Trace] = None) -> str:
    """The whole report as a string (write_report_md saves it)."""
    parts = [[_md_title(summary), ""], _md_config(summary), _md_counts(summary),
             _md_invariants(summary), _md_levels(summary), _md_coverage(summary),
             _md_counterexample(summary, trace)]
    return "\n".join(line for part in parts for line in part).rstrip("\n") + "\n"


def write_report_md(summary: dict, trace: Optional[Trace], path: PathLike) -> None:
    """report.md: what a person opens first after a run."""
    _write_text(path, render_report_md(summary, trace))


# ---------------------------------------------------------------- JUnit

_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml(text: Any) -> str:
    """ElementTree writes control characters unescaped, which makes the XML unreadable."""
    return _XML_BAD.sub("?", str(text))


def _stopped_message(summary: dict) -> str:
    default = "the run stopped at the first violation" if summary.get("result") == "violation" \
        else "no reason given"
    return f"stopped before completion: {summary.get('stop_reason') or default}"


def _cex_text(summary: dict) -> str:
    cex = summary.get("counterexample") or {}
    if not cex.get("rows"):
        return "no counterexample recorded"
    head = f"counterexample ({cex.get('length', len(cex['rows']) - 1)} steps), violates " \
           f"{', '.join(cex.get('violated') or [])}"
    tail = f"\nreplay: kraft-verify replay {cex['scenario']}" if cex.get("scenario") else ""
    return f"{head}\n{plain_table(tuple(r) for r in cex['rows'])}{tail}"


def _testcase(suite: ET.Element, summary: dict, name: str, seconds: float) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=f"kraft-verify.{summary.get('engine', '?')}",
                         name=_xml(name), time=f"{seconds:.3f}")


def _add_outcome(case: ET.Element, tag: str, message: str, text: str = "", kind: str = "") -> None:
    el = ET.SubElement(case, tag, message=_xml(message), type=kind or tag)
    if text:
        el.text = _xml(text)


def _invariant_outcome(summary: dict, inv: dict, case: ET.Element) -> None:
    """Violated -> failure; anything short of a completed 'holds' -> error (never green)."""
    status = inv.get("status")
    if status == "violated":
        depth = (summary.get("counterexample") or {}).get("length", summary.get("counts", {}).get("depth"))
        _add_outcome(case, "failure", f"{inv['name']} violated at depth {depth}", _cex_text(summary),
                     "InvariantViolation")
    elif status == STOPPED_STATUS or (status == "holds" and summary.get("result") == "stopped"):
        _add_outcome(case, "error", _stopped_message(summary), kind="Stopped")
    elif status == SAMPLED_STATUS and summary.get("result") == "ok":
        ET.SubElement(case, "system-out").text = "not violated in the sampled runs (a sample, not a proof)"
    elif status != "holds":
        _add_outcome(case, "error", f"unknown invariant status {status!r}", kind="UnknownStatus")


def _deadlock_outcome(summary: dict, case: ET.Element) -> None:
    if summary["deadlock"].get("found"):
        terminal = summary.get("counts", {}).get("terminal_states", "?")
        _add_outcome(case, "failure", f"deadlock: {terminal} terminal state(s)", kind="Deadlock")
    elif not summary["deadlock"].get("complete", summary.get("result") == "ok"):   # search ended early
        _add_outcome(case, "error", _stopped_message(summary), kind="Stopped")


def _properties(suite: ET.Element, summary: dict) -> None:
    cfg = summary.get("config", {})
    c = summary.get("counts", {})
    props = {"tool": summary.get("tool", "kraft-verify"), "engine": summary.get("engine"),
             "run_id": summary.get("run_id"), "command": summary.get("command"),
             "result": summary.get("result"), "exit_code": summary.get("exit_code"),
             "stop_reason": summary.get("stop_reason"),
             "preset": cfg.get("preset"), "mutant": cfg.get("mutant"),
             "replicas": ",".join(str(r) for r in cfg.get("replicas") or []),
             "min_isr": cfg.get("min_isr"), "unclean_leader_election": cfg.get("unclean_leader_election"),
             "flags": _kv(cfg.get("flags")), "bounds": _kv(cfg.get("bounds")),
             "distinct_states": c.get("distinct_states"), "transitions": c.get("transitions"),
             "depth": c.get("depth"),
             "collision_probability": summary.get("fingerprint", {}).get("collision_probability"),
             "symmetry": _symmetry_text(summary.get("symmetry", {}))}
    el = ET.SubElement(suite, "properties")
    for k, v in props.items():
        ET.SubElement(el, "property", name=k, value=_xml(_scalar(v)))


def build_junit(summary: dict) -> ET.Element:
    """<testsuites> with one <testsuite>: one testcase per invariant (+ Deadlock)."""
    seconds = float(summary.get("counts", {}).get("seconds") or 0.0)
    invariants = summary.get("invariants", [])
    deadlock = bool(summary.get("deadlock", {}).get("checked"))
    n = len(invariants) + deadlock
    share = seconds / n if n else 0.0          # one pass checks all: split its time evenly
    suite = ET.Element("testsuite", name=_xml(_suite_name(summary)), time=f"{seconds:.3f}")
    _properties(suite, summary)
    for inv in invariants:
        _invariant_outcome(summary, inv, _testcase(suite, summary, inv["name"], share))
    if deadlock:
        _deadlock_outcome(summary, _testcase(suite, summary, "Deadlock", share))
    if summary.get("result") != "ok" and not suite.findall("testcase/failure") + suite.findall("testcase/error"):
        _add_outcome(_testcase(suite, summary, "Run", 0.0), "error",        # a bad run is never green
                     f"result {summary.get('result')!r}: {summary.get('stop_reason') or '-'}", kind="RunNotOk")
    _count(suite)
    root = ET.Element("testsuites", name="kraft-verify")
    root.append(suite)
    for k in ("tests", "failures", "errors", "time"):
        root.set(k, suite.get(k))
    return root


def _count(suite: ET.Element) -> None:
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    suite.set("skipped", "0")


def write_junit(summary: dict, path: PathLike) -> None:
    """JUnit XML so CI shows each invariant as a test; a stopped run shows as errors."""
    tree = ET.ElementTree(build_junit(summary))
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)


# ---------------------------------------------------------------- ITF (Apalache / Quint)

def itf_value(v: Any) -> Any:
    """ITF encoding: NamedTuple -> record, tuple -> sequence, big ints -> #bigint."""
    if isinstance(v, bool) or isinstance(v, str):
        return v
    if isinstance(v, int):
        return v if abs(v) < 2 ** 53 else {"#bigint": str(v)}
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return {k: itf_value(x) for k, x in zip(v._fields, v)}
    if isinstance(v, (tuple, list)):
        return [itf_value(x) for x in v]
    raise TypeError(f"no ITF encoding for {type(v).__name__}: {v!r}")


def itf_option(v: Any) -> dict:
    """Quint's Option as an ITF variant: None has the unit value, an empty tuple."""
    if v is None:
        return {"tag": "None", "value": {"#tup": []}}
    return {"tag": "Some", "value": itf_value(v)}


def _itf_state(index: int, state, action: str) -> dict:
    return {"#meta": {"index": index},
            "ctrl": itf_value(state.ctrl), "replicas": itf_value(state.replicas),
            "followers": itf_value(state.followers), "inflight": itf_option(state.inflight),
            "hist": itf_value(state.hist), "action": action}


def itf_trace(trace: Trace) -> dict:
    """The trace in ITF, so Apalache/Quint tooling (e.g. the ITF trace viewer) can read it."""
    cfg = trace.config
    source = f"kraft-verify {trace.engine} preset={cfg.preset}" + (f" mutant={cfg.mutant}" if cfg.mutant else "")
    what = f"violates {', '.join(trace.violated)}" if trace.violated else "violates no invariant"
    states = [_itf_state(0, trace.initial, "init")]
    states += [_itf_state(i, s, describe(label)) for i, (label, s) in enumerate(trace.steps, 1)]
    return {"#meta": {"format": "ITF", "format-description": ITF_FORMAT_DESCRIPTION, "source": source,
                      "description": f"kraft-verify {trace.engine} trace of {len(trace)} steps; {what}"},
            "vars": list(ITF_VARS),
            "states": states}


def write_itf(trace: Trace, path: PathLike) -> None:
    _write_text(path, json.dumps(itf_trace(trace), indent=1) + "\n")


# ---------------------------------------------------------------- state graph

def build_graph(nodes: list[tuple[int, dict]], edges: list[tuple[int, int, str]]) -> nx.DiGraph:
    """A DiGraph keeps one edge per pair: parallel actions merge into one '; '-joined label."""
    g = nx.DiGraph()
    for n, attrs in nodes:
        g.add_node(n, **attrs)
    for src, dst, label in edges:
        if g.has_edge(src, dst) and g.edges[src, dst]["label"] != label:
            g.edges[src, dst]["label"] += "; " + label
        else:
            g.add_edge(src, dst, label=label)
    return g


def _dot_str(value: Any) -> str:
    """A DOT quoted string; newlines become Graphviz's centred line break `\\n`."""
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n") + '"'


def _dot_attrs(attrs: dict) -> str:
    if not attrs:
        return ""
    return " [" + ", ".join(f"{_dot_str(k)}={_dot_str(v)}" for k, v in attrs.items()) + "]"


def _dot_node_attrs(attrs: dict) -> dict:
    """Mark start and violating states visibly unless the caller styled them already."""
    out = dict(attrs)
    if str(attrs.get("init")).lower() == "true":
        out.setdefault("peripheries", "2")
    if str(attrs.get("violation")).lower() == "true":
        out.setdefault("color", "red")
    return out


def render_dot(g: nx.DiGraph) -> str:
    """Graphviz DOT without pydot/pygraphviz: every id and value is a quoted string."""
    lines = ["digraph states {", '  node [shape="box", fontname="monospace"];']
    lines += [f"  {_dot_str(n)}{_dot_attrs(_dot_node_attrs(a))};" for n, a in g.nodes(data=True)]
    lines += [f"  {_dot_str(s)} -> {_dot_str(d)}{_dot_attrs(a)};" for s, d, a in g.edges(data=True)]
    return "\n".join(lines + ["}"]) + "\n"


def write_graph(nodes: list[tuple[int, dict]], edges: list[tuple[int, int, str]], path: PathLike) -> None:
    """The explored state graph for --dump-graph, as DOT (.dot/.gv) or GraphML (.graphml)."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in (".dot", ".gv", ".graphml"):
        raise ValueError(GRAPH_SUFFIX_ERROR)
    g = build_graph(nodes, edges)
    if suffix == ".graphml":
        nx.write_graphml(g, path)
    else:
        _write_text(path, render_dot(g))
