"""docs/ARCHITECTURE.md's answers, acted on: a new engine and a new invariant, each written in a
temporary module of its own, reach the command line and every report through the files that
document names, and nothing else of the repository changes."""
from __future__ import annotations

import json
import sys
import textwrap

import invariants
from invariants import registry
from verifier.cli import binding, main
from verifier.cli import options as cli_options

TOY_ENGINE = '''
"""A depth-first search: the engine interface and knobs of its own, nothing else of the
repository but core."""
from typing import Optional

from verifier.core import knobs
from verifier.core.levels import concrete_trace
from verifier.core.properties import state_violations
from verifier.core.result import COMPLETE, VIOLATION, Progress, SearchResult
from specs import Trace


@knobs.declare("toy-dfs")
class Knobs(knobs.Knobs):
    max_children: Optional[int] = knobs.knob(None, least=1)  # follow at most this many successors of a state


def run(model, properties, settings, progress=None):
    own = Knobs.of(settings)
    seen, stack, found = set(), [(s, []) for s in model.init_states()], {}
    root = stack[0][0]
    while stack:
        s, labels = stack.pop()
        if s in seen:
            continue
        seen.add(s)
        for name in state_violations(properties, model.cfg, s, skip=found):
            found[name] = Trace(model, root, concrete_trace(model, root, labels), [name], engine="toy-dfs",
                                checked=[name], properties=tuple(properties))
        if settings.limits.max_depth is None or len(labels) < settings.limits.max_depth:
            stack += [(t, labels + [label]) for label, t in model.successors(s)][:own.max_children]
    if progress:
        progress(Progress(len(seen), len(seen), 0, 0, 0.0, note=f"toy-dfs: {len(seen)} states, "
                                                                   f"at most {own.max_children} children each"))
    res = SearchResult(VIOLATION if found else COMPLETE, 0.0, engine="toy-dfs", counterexamples=found,
                       counterexample=next(iter(found.values()), None), distinct_states=len(seen))
    res.explored_all = not found and settings.limits.max_depth is None and own.max_children is None
    return res.judge(properties)
'''

TOY_INVARIANT = '''
"""A property the model should break: no record is ever acknowledged."""
from invariants.registry import state_invariant


def _explain(cfg, states, labels, describe):
    return f"record r{states[-1].hist.acked[0]} was acknowledged at step {len(states) - 1}"


@state_invariant("NothingAcknowledged", "data", explain=_explain)
def nothing_acknowledged(cfg, s) -> bool:
    """A toy rule for the extension test: no acks=all producer is ever answered."""
    return not s.hist.acked
'''


def test_a_toy_engine_and_a_toy_invariant_reach_the_reports(tmp_path, monkeypatch, capsys):
    (tmp_path / "toy_engine.py").write_text(textwrap.dedent(TOY_ENGINE))
    (tmp_path / "toy_invariant.py").write_text(textwrap.dedent(TOY_INVARIANT))
    monkeypatch.syspath_prepend(str(tmp_path))
    # the properties registry as it was, so the toy property leaves with the test
    monkeypatch.setattr(registry, "REGISTRY", list(registry.REGISTRY))
    monkeypatch.setattr(invariants, "REGISTRY", registry.REGISTRY)
    __import__("toy_invariant")                         # 1 file: the invariant, with its explanation
    # the engine: its module (with its knobs), one line of binding.ENGINES, one command and its
    # knob's option in options.toml
    monkeypatch.setitem(binding.ENGINES, "toy-dfs", "toy_engine")
    table = json.loads(json.dumps(cli_options.table()))
    table["command"]["toy-check"] = {"help": "a depth-first search", "run": "verifier.cli.run:run", "engine": "toy-dfs",
                                     "options": ["--preset", "--brokers", "--bound", "--invariant", "--max-depth",
                                                 "--no-symmetry", "--no-deadlock", "--stop-at-first", "--junit",
                                                 "--out", "--max-children"]}
    table["option"]["--max-children"] = {"type": "int", "help": "follow at most N successors of a state"}
    monkeypatch.setattr(cli_options, "table", lambda: table)
    out = tmp_path / "out"
    # a knob out of its range: one line, exit 2, before any run directory
    assert main(["toy-check", "--brokers", "2", "--max-children", "0", "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == "kraft-verify: error: toy-dfs knob max_children: 0 is below 1"
    assert not out.exists() or not any(out.iterdir())
    code = main(["toy-check", "--brokers", "2", "--bound", "lossy_crashes=0", "--invariant", "NothingAcknowledged",
                 "--invariant", "IsrElrDisjoint", "--max-depth", "6", "--max-children", "3", "--out", str(out),
                 "--junit", str(tmp_path / "junit.xml")])
    assert code == 1
    assert "at most 3 children each" in capsys.readouterr().out     # its progress line
    (run,) = out.iterdir()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["engine"] == "toy-dfs" and summary["violated"] == ["NothingAcknowledged"]
    verdicts = {row["name"]: row["status"] for row in summary["invariants"]}
    assert verdicts == {"NothingAcknowledged": "violated", "IsrElrDisjoint": "not checked to completion"}
    cex = summary["counterexamples"]["NothingAcknowledged"]
    assert "was acknowledged at step" in cex["why"]["NothingAcknowledged"]
    assert "was acknowledged at step" in (run / "report.html").read_text()
    assert "NothingAcknowledged" in (tmp_path / "junit.xml").read_text()
    # the counterexample is a replay scenario that the replay engine reproduces with the toy property
    assert main(["replay", str(run / cex["scenario"])]) == 0
    sys.modules.pop("toy_engine", None)
    sys.modules.pop("toy_invariant", None)
