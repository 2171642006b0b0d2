"""Every figure README.md and docs/ quote from a command is that command's output now
(bench/doc_figures.py: marked regions, each made by its producer). A figure retyped by hand or
moved by a change of the model fails here, as docs/availability.md's did: it said no `kafka`
run loses a record within KIP-966's tolerance, and the command said 57 of 500."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _figures():
    spec = importlib.util.spec_from_file_location("doc_figures", ROOT / "bench" / "doc_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def figures():
    return _figures()


def test_every_documented_figure_is_its_commands(figures):
    found = []
    for path in figures.documents():
        found += figures.differences(path.read_text(), str(path.relative_to(ROOT)))
    assert not found, "\n".join(found) + "\n(rerun: .venv/bin/python bench/doc_figures.py --write)"


def test_the_documents_mark_the_figures_the_issue_named(figures):
    """The availability tables and prose, the fuzz profiles' sizes and the mutant count are marked
    (a figure left unmarked is not checked)."""
    marked = {m[1].split()[0] for p in figures.documents() for m in figures.REGION.finditer(p.read_text())}
    assert {"availability-table", "availability-recovery", "availability", "fuzz-profile", "mutants"} <= marked
    prose = (ROOT / "docs/availability.md").read_text().split("## What a designer should read from it")[1]
    prose = prose.split("## What is left out")[0]
    unmarked = re.findall(r"(?<![\w.>-])\d[\d,.]*%?(?![\w<])", figures.REGION.sub("", prose))
    assert set(unmarked) <= {"500", "4.1.0", "5", "8", "0", "1", "6", "3", "966"}, unmarked   # runs, releases, steps


def test_a_figure_that_differs_from_its_command_fails_the_check(figures):
    text = (ROOT / "docs/availability.md").read_text()
    m = next(m for m in figures.REGION.finditer(text) if m[1] == "availability kafka.data_loss_runs")
    changed = text[:m.start(2)] + str(int(m[2]) + 1) + text[m.end(2):]
    found = figures.differences(changed, "docs/availability.md")
    assert len(found) == 1 and "availability kafka.data_loss_runs" in found[0]
    table = next(m for m in figures.REGION.finditer(text) if m[1] == "availability-table")
    retyped = text[:table.start(2)] + table[2].replace("| kafka | 500 |", "| kafka | 499 |") + text[table.end(2):]
    assert any("availability-table" in line for line in figures.differences(retyped))
    assert figures.rewritten(changed) == text


def test_an_unknown_producer_is_refused(figures):
    with pytest.raises(KeyError):
        figures.differences("<!-- figure nonsense -->1<!-- /figure -->")


def test_check_help_lists_every_preset(cli):
    from specs.catalogue import PRESETS
    out = " ".join(cli("check", "--help").stdout.split())
    assert all(re.search(rf"(?<![\w-]){re.escape(p)}(?![\w-])", out) for p in PRESETS), out
