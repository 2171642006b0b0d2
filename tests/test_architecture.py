"""docs/ARCHITECTURE.md's newcomer answers, held to the code: the files "How do I add an
invariant?" names are all the files, and the chain "How does a counterexample reach
report.html?" names is the whole chain (every function in it runs on a violating `check`,
and every file of the run is written by a module it names)."""
from __future__ import annotations

import importlib
import re
import sys

import invariants
from tests.conftest import ROOT
from verifier.cli import main

DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text()


def _section(title: str) -> str:
    start = DOC.index(f"**{title}**")
    return DOC[start:DOC.index("\n**", start + 4)]


def test_the_invariant_answer_names_every_file():
    """Two files (three with a z3 twin): a module of its group (every module that declares an
    invariant is imported by the package, so the registry finds it), the KILLERS entry (one per
    invariant, or its test fails), and invariants/twins.py for a twin; every other consumer
    takes the registry."""
    section = _section("How do I add an invariant?")
    named = set(re.findall(r"`((?:invariants|tests)/[\w/]*\.py)`", section))
    assert named - {"tests/test_extend.py"} == {"invariants/twins.py", "tests/invariants/test_invariants.py"}
    assert all((ROOT / n).exists() for n in named)
    declaring = {p.stem for p in (ROOT / "invariants").glob("*.py")
                 if re.search(r"^@(state|step)_invariant\(", p.read_text(), re.M)}
    package = (ROOT / "invariants" / "__init__.py").read_text()
    assert declaring and all(re.search(rf"\b{m}\b", package) for m in declaring), declaring
    from tests.invariants.test_invariants import KILLERS
    assert set(KILLERS) == {inv.name for inv in invariants.REGISTRY}
    from verifier.cli import binding
    assert binding.properties() == tuple(invariants.REGISTRY)


def _named_functions(section: str) -> list[tuple[str, str]]:
    return list(dict.fromkeys(re.findall(r"`((?:verifier|specs)/[\w/]+)\.py:(\w+)`", section)))


def test_the_counterexample_chain_is_the_whole_chain(tmp_path, monkeypatch):
    section = _section("How does a counterexample reach report.html?")
    functions = _named_functions(section)
    modules = set(re.findall(r"`((?:verifier|specs)/[\w/]+)\.py", section))
    assert len(functions) >= 12, functions
    called: list[str] = []
    for path, name in functions:
        module = importlib.import_module(path.replace("/", "."))
        real = getattr(module, name)
        tag = f"{path}.py:{name}"

        def spy(*a, _real=real, _tag=tag, **k):
            called.append(_tag)
            return _real(*a, **k)
        for loaded in list(sys.modules.values()):     # wherever it was imported by name
            for attr, value in list(vars(loaded).items()) if loaded is not None else ():
                if value is real:
                    monkeypatch.setattr(loaded, attr, spy)
    writers: dict[str, str] = {}
    from verifier.core import files
    real_write = files.write_atomic

    def write_spy(path, data, *a, **k):
        caller = sys._getframe(1).f_globals["__name__"]
        writers[str(path)] = caller
        return real_write(path, data, *a, **k)
    for loaded in list(sys.modules.values()):
        for attr, value in list(vars(loaded).items()) if loaded is not None else ():
            if value is real_write:
                monkeypatch.setattr(loaded, attr, write_spy)
    out = tmp_path / "out"
    code = main(["check", "--mutant", "hwm-maximal-isr", "--stop-at-first", "--workers", "1", "-q",
                 "--out", str(out), "--junit", str(tmp_path / "junit.xml")])
    assert code == 1
    (run,) = out.iterdir()
    assert {"counterexample.json", "counterexample.itf.json", "summary.json", "report.md",
            "report.html"} <= {p.name for p in run.iterdir()}
    never = [f"{p}.py:{n}" for p, n in functions if f"{p}.py:{n}" not in called
             and n != "as_divergence"]               # a divergence's own step: conform's, not check's
    assert not never, f"named in the chain but never run: {never}"
    outside = {path: mod for path, mod in writers.items() if mod.replace(".", "/") not in modules}
    assert not outside, f"files written by a module the chain does not name: {outside}"
    assert set(writers) >= {str(run / "summary.json"), str(run / "report.html"), str(tmp_path / "junit.xml")}
