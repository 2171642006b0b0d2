"""The report writers: Markdown, JUnit XML, ITF and the state graph, checked by parsing
what they write rather than by comparing strings."""
import json
import re
import xml.etree.ElementTree as ET

import networkx as nx
import pytest

from specs import Model, Trace, make_config
from specs.display import itf_value
from verifier.reports import itf_trace, write_graph, write_itf, write_junit, write_report_md
from verifier.reports.story import rows

# produce, replicate to 2, fence the leader, shrink 3 out (an AlterPartition goes in flight),
# deliver it (the in-flight slot empties again)
PLAN = ("produce", "fetch", "fence", "shrink_isr", "deliver_alter_partition")


def _pick(model, state, name):
    """A real successor label of this kind (never a guessed one)."""
    for label, nxt in model.successors(state):
        if label[0] == name:
            return label, nxt
    raise AssertionError(f"no enabled {name} in {state}")


@pytest.fixture
def trace():
    model = Model(make_config())
    s = init = model.init_states()[0]
    steps = []
    for name in PLAN:
        label, s = _pick(model, s, name)
        steps.append((label, s))
    return Trace(model=model, initial=init, steps=steps, violated=["LeaderInIsr"], engine="bfs")


def _summary(trace=None, result="violation", stop_reason=""):
    invs = [{"name": "LeaderInIsr", "kind": "state", "status": "holds", "quote": "q"},
            {"name": "IsrElrDisjoint", "kind": "state", "status": "holds", "quote": "q"},
            {"name": "EpochMonotonic", "kind": "step", "status": "holds", "quote": "q"}]
    if result == "violation":
        invs[0]["status"] = "violated"
        invs[1]["status"] = invs[2]["status"] = "not checked to completion"
    elif result == "stopped":
        for i in invs:
            i["status"] = "not checked to completion"
    cex = None
    if trace is not None:
        cex = {"length": len(trace), "violated": list(trace.violated), "rows": [list(r) for r in rows(trace)],
               "scenario": "counterexample.json", "itf": "counterexample.itf.json"}
        invs[0]["counterexample"] = cex
    return {"tool": "kraft-verify", "engine": "bfs", "run_id": "r1", "command": "kraft-verify check",
            "config": {"preset": "kafka", "mutant": "elr-not-cleared" if trace else None, "replicas": [1, 2, 3],
                       "min_isr": 2, "unclean_leader_election": False, "flags": {"elr": True},
                       "bounds": {"records": 1, "fences": 1}},
            "result": result, "exit_code": {"ok": 0, "violation": 1, "stopped": 3}[result],
            "stop_reason": stop_reason,
            "invariants": invs, "violated": ["LeaderInIsr"] if result == "violation" else [],
            "counts": {"distinct_states": 1234, "transitions": 5678, "depth": 9,
                       "states_per_level": [1, 8, 30], "seconds": 1.5, "states_per_second": 822.7,
                       "terminal_states": 2},
            "deadlock": {"checked": True, "found": False, "complete": result == "ok"},
            "symmetry": {"enabled": True, "group_size": 6, "note": "brokers 1..3 interchangeable"},
            "fingerprint": {"bits": 128, "collision_probability": 2.3e-30},
            "coverage": [{"action": "produce", "enabled": 10, "new_states": 4, "status": "ok", "reason": ""},
                         {"action": "reassign", "enabled": 0, "new_states": 0, "status": "off by config",
                          "reason": "reassignments=0"},
                         {"action": "unfence", "enabled": 0, "new_states": 0, "status": "never taken",
                          "reason": ""}],
            "warnings": ["action unfence was never taken"],
            "counterexample": cex, "counterexamples": {"LeaderInIsr": cex} if cex else {}}


# ---------------------------------------------------------------- the fixture itself

def test_the_trace_uses_real_steps(trace):
    assert [label[0] for label, _ in trace.steps] == list(PLAN)
    inflight = [s.inflight for _, s in trace.steps]
    assert inflight[3] is not None and inflight[4] is None   # shrink_isr sent; delivered


# ---------------------------------------------------------------- report.md

def test_report_md_has_config_counts_and_counterexample(trace, tmp_path):
    path = tmp_path / "report.md"
    write_report_md(_summary(trace), path)
    text = path.read_text()
    assert text.splitlines()[0].startswith("# ") and "VIOLATION of LeaderInIsr" in text.splitlines()[0]
    for needle in ("preset: `kafka`", "mutant: `elr-not-cleared`", "min_isr: 2", "elr=true",
                   "fences=1, records=1", "1,234", "5,678", "2.3e-30", "group size 6", "0:1, 1:8, 2:30"):
        assert needle in text, needle
        row = re.compile(r"^\| (\w+) \| \w+ \| ([^|]+?) \| [^|]+ \|$", re.M)
        inv_rows = {m.group(1): m.group(2) for m in row.finditer(text)}
    assert inv_rows["LeaderInIsr"] == "violated"
    assert inv_rows["EpochMonotonic"] == "not checked to completion"
    for n, action, diff in rows(trace):
        assert f"| {n} | {action} | {diff} |" in text
    assert "counterexample.json" in text and "counterexample.itf.json" in text


def test_report_md_coverage_and_warnings(tmp_path):
    path = tmp_path / "report.md"
    write_report_md(_summary(result="ok"), path)
    text = path.read_text()
    assert "| unfence | 0 | 0 | never taken |" in text
    assert "| reassign | 0 | 0 | off by config (reassignments=0) |" in text
    warnings = text.split("### Warnings", 1)[1]
    assert "- action unfence was never taken" in warnings
    assert "## Counterexample" not in text
    assert "all invariants hold" in text.splitlines()[0]


def test_report_md_escapes_pipes_and_newlines(tmp_path):
    summary = _summary(result="stopped", stop_reason="max states")
    summary["counterexample"] = {"length": 1, "violated": ["X"], "rows": [[0, "initial", "a|b"],
                                                                         [1, "op x|y", "line1\nline2"]]}
    path = tmp_path / "report.md"
    write_report_md(summary, path)        # the rows come from summary.json
    text = path.read_text()
    assert "| 0 | initial | a\\|b |" in text
    assert "| 1 | op x\\|y | line1 line2 |" in text
    assert "STOPPED" in text.splitlines()[0] and "max states" in text.splitlines()[0]


# ---------------------------------------------------------------- JUnit

def _suite(path):
    root = ET.parse(path).getroot()
    suites = root.findall("testsuite") if root.tag == "testsuites" else [root]
    assert len(suites) == 1
    return root, suites[0]


def _outcomes(suite):
    out = {}
    for case in suite.findall("testcase"):
        kind = "failure" if case.find("failure") is not None else "error" if case.find("error") is not None else "pass"
        out[case.get("name")] = kind
    return out


def test_junit_violation(trace, tmp_path):
    path = tmp_path / "junit.xml"
    write_junit(_summary(trace), path)
    root, suite = _suite(path)
    assert suite.get("name") == "kraft-verify bfs kafka elr-not-cleared"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "1", "3")
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "1", "3")
    # the run stopped at the violation, so nothing else was checked to completion
    assert _outcomes(suite) == {"LeaderInIsr": "failure", "IsrElrDisjoint": "error",
                                "EpochMonotonic": "error", "Deadlock": "error"}
    assert suite.find("testcase[@name='Deadlock']/error").get("message") == \
        "stopped before completion: the run stopped at the first violation"
    case = suite.find("testcase[@name='LeaderInIsr']")
    assert case.get("classname") == "kraft-verify.bfs"
    assert float(case.get("time")) >= 0
    failure = case.find("failure")
    assert failure.get("message") == f"LeaderInIsr violated in {len(trace)} steps"
    for n, action, diff in rows(trace):
        line = next(l for l in failure.text.splitlines() if l.strip().startswith(f"{n}  "))
        assert action in line and line.rstrip().endswith(diff)
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["preset"] == "kafka" and props["mutant"] == "elr-not-cleared"
    assert props["replicas"] == "1,2,3" and props["result"] == "violation"


def test_junit_stopped_run_is_never_green(tmp_path):
    path = tmp_path / "junit.xml"
    write_junit(_summary(result="stopped", stop_reason="time budget 10s"), path)
    _, suite = _suite(path)
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "0", "4")
    for case in suite.findall("testcase"):
        assert case.find("error").get("message") == "stopped before completion: time budget 10s"


def test_junit_stopped_without_testcases_still_errors(tmp_path):
    summary = _summary(result="stopped", stop_reason="max depth")
    summary["invariants"] = []
    summary["deadlock"] = {"checked": False, "found": False}
    path = tmp_path / "junit.xml"
    write_junit(summary, path)
    _, suite = _suite(path)
    assert (suite.get("tests"), suite.get("errors")) == ("1", "1")


def test_junit_all_hold_and_deadlock(tmp_path):
    path = tmp_path / "junit.xml"
    summary = _summary(result="ok")
    write_junit(summary, path)
    _, suite = _suite(path)
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "0", "0")
    assert suite.get("name") == "kraft-verify bfs kafka"
    assert set(_outcomes(suite).values()) == {"pass"}

    summary["deadlock"]["found"] = True
    write_junit(summary, path)
    _, suite = _suite(path)
    assert _outcomes(suite)["Deadlock"] == "failure" and suite.get("failures") == "1"

    summary["deadlock"]["checked"] = False
    write_junit(summary, path)
    _, suite = _suite(path)
    assert "Deadlock" not in _outcomes(suite) and suite.get("tests") == "3"


# ---------------------------------------------------------------- ITF

def _itf_decode(v):
    """The inverse of the ITF value encoding, as a consumer would read it."""
    if isinstance(v, list):
        return tuple(_itf_decode(x) for x in v)
    if isinstance(v, dict):
        if "#bigint" in v:
            return int(v["#bigint"])
        if "#tup" in v:
            return tuple(_itf_decode(x) for x in v["#tup"])
        if set(v) == {"tag", "value"}:
            return None if v["tag"] == "None" else _itf_decode(v["value"])
        return tuple(_itf_decode(x) for x in v.values())    # a record, in field order
    return v


def test_itf_value_round_trips_ints_and_tuples():
    for value in (0, -5, 2 ** 53 - 1, 2 ** 53, -(2 ** 53), 10 ** 30, (), (1, (2, 3), ((4, 5),)), True, "x"):
        assert _itf_decode(json.loads(json.dumps(itf_value(value)))) == value
    assert itf_value(2 ** 53 - 1) == 2 ** 53 - 1
    assert itf_value(2 ** 53) == {"#bigint": str(2 ** 53)}
    assert itf_value(-(2 ** 60)) == {"#bigint": str(-(2 ** 60))}
    assert itf_value(True) is True
    with pytest.raises(TypeError):
        itf_value(None)


def test_itf_trace(trace, tmp_path):
    path = tmp_path / "cex.itf.json"
    write_itf(trace, path)
    data = json.loads(path.read_text())
    meta = data["#meta"]
    assert meta["format"] == "ITF" and "format-description" not in meta   # no link outside the repository
    assert "kafka" in meta["source"] and "LeaderInIsr" in meta["description"]
    assert data["vars"] == ["ctrl", "replicas", "followers", "inflight", "hist", "action"]
    states = data["states"]
    assert len(states) == len(trace) + 1
    assert [s["#meta"]["index"] for s in states] == list(range(len(states)))
    for s in states:
        assert set(s) == {"#meta", *data["vars"]}
    # state 0 is the initial state, field for field
    s0 = states[0]
    assert s0["action"] == "init"
    assert s0["ctrl"]["partition"]["leader"] == trace.initial.ctrl.partition.leader
    assert s0["ctrl"]["partition"]["isr"] == list(trace.initial.ctrl.partition.isr)
    for var in ("ctrl", "replicas", "followers", "hist"):
        assert _itf_decode(s0[var]) == getattr(trace.initial, var)
    assert s0["replicas"][0]["alive"] is True
    # every later state decodes back to the trace's state, with its action label
    for st, (label, state) in zip(states[1:], trace.steps):
        assert st["action"] == trace.model.describe(label)
        for var in ("ctrl", "replicas", "followers", "inflight", "hist"):
            assert _itf_decode(st[var]) == getattr(state, var)
    # the Option encoding of the in-flight AlterPartition
    assert s0["inflight"] == {"tag": "None", "value": {"#tup": []}}
    sent = trace.steps[3][1].inflight
    some = states[4]["inflight"]
    assert some["tag"] == "Some" and some["value"]["broker"] == sent.broker
    assert some["value"]["isr"] == list(sent.isr)
    assert states[5]["inflight"]["tag"] == "None"
    assert itf_trace(trace) == data


# ---------------------------------------------------------------- state graph

NODES = [(0, {"label": "init", "init": "true", "violation": "false"}),
         (1, {"label": 'say "hi"\\ok', "init": "false", "violation": "false"}),
         (2, {"label": "line1\nline2 | x", "init": "false", "violation": "true"})]
EDGES = [(0, 1, "fence broker=1"), (1, 2, "shrink_isr broker=3"), (0, 2, "produce"), (0, 2, "crash")]

_DOT_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|(->|[{}\[\];,=])|([A-Za-z_0-9.]+))', re.S)


def _dot_parse(text):
    """A small DOT parser: statements of a single digraph, quoted strings unescaped."""
    toks, pos = [], 0
    while text[pos:].strip():
        m = _DOT_TOKEN.match(text, pos)
        assert m, f"bad DOT at {text[pos:pos + 40]!r}"
        pos = m.end()
        q, punct, word = m.groups()
        toks.append(("str", re.sub(r'\\(["\\])', r"\1", q)) if q is not None
                    else ("p", punct) if punct else ("id", word))
    assert toks[:3] == [("id", "digraph"), ("id", "states"), ("p", "{")] and toks[-1] == ("p", "}")
    nodes, edges, stmt = {}, [], []
    for tok in toks[3:-1]:
        if tok != ("p", ";"):
            stmt.append(tok)
            continue
        head, attrs = stmt, {}
        if ("p", "[") in stmt:
            i = stmt.index(("p", "["))
            head, body = stmt[:i], [t for t in stmt[i + 1:-1] if t != ("p", ",")]
            assert stmt[-1] == ("p", "]") and len(body) % 3 == 0
            attrs = {body[j][1]: body[j + 2][1] for j in range(0, len(body), 3)}
        if head[0] == ("id", "node"):
            pass
        elif len(head) == 3 and head[1] == ("p", "->"):
            edges.append((head[0][1], head[2][1], attrs))
        else:
            assert len(head) == 1 and head[0][0] == "str"
            nodes[head[0][1]] = attrs
        stmt = []
    assert not stmt
    return nodes, edges


@pytest.mark.parametrize("suffix", [".dot", ".gv"])
def test_graph_dot(tmp_path, suffix):
    path = tmp_path / f"g{suffix}"
    write_graph(NODES, EDGES, path)
    nodes, edges = _dot_parse(path.read_text())
    assert len(nodes) == 3 and len(edges) == 3           # two actions 0->2 merge into one edge
    assert nodes["1"]["label"] == 'say "hi"\\ok'
    assert nodes["2"]["label"] == "line1\\nline2 | x"    # a DOT line break, not a raw newline
    assert nodes["2"]["color"] == "red" and nodes["0"]["peripheries"] == "2"
    labels = {(s, d): a["label"] for s, d, a in edges}
    assert labels[("0", "1")] == "fence broker=1"
    assert labels[("0", "2")] == "produce; crash"


def test_graph_graphml(tmp_path):
    path = tmp_path / "g.graphml"
    write_graph(NODES, EDGES, path)
    g = nx.read_graphml(path)
    assert g.is_directed() and g.number_of_nodes() == 3 and g.number_of_edges() == 3
    assert g.nodes["1"]["label"] == 'say "hi"\\ok' and g.nodes["2"]["violation"] == "true"
    assert g.edges["1", "2"]["label"] == "shrink_isr broker=3"


def test_graph_rejects_other_suffixes(tmp_path):
    for name in ("g.png", "g", "g.dot.txt"):
        with pytest.raises(ValueError, match=r"--dump-graph: file must end in \.dot, \.gv or \.graphml"):
            write_graph(NODES, EDGES, tmp_path / name)
        assert not (tmp_path / name).exists()
