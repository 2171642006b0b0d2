"""Every command's HTML page, opened in headless Chromium (issue 61): check (a pass and a
violation), simulate, fuzz, prove, conform, cluster-conform, availability and matrix. Each page
shows its run's figures, never a Python repr (`{'`, `None`, `True` as text), no empty table
without a sentence saying why, a sample is never "all checked properties hold", a violation's
timeline has the partition's columns, and cluster-conform's page leads with what the real
cluster did (agreement and lost data on lines of their own, never a green banner over a loss).
The cluster-conform page is rendered from a real 4.0.2 cluster's run of F6's file
(bench/results/issue61/cluster-f6-4.0.2-summary.json, written by the harness)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.verifier.reports.test_report_html import _dump_dom

pytestmark = pytest.mark.deps          # Chromium; conform's oracle JVM

def _shots():
    """bench/report_screenshots.py: the commands and where their pages are (one list for both)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("report_screenshots", ROOT / "bench" / "report_screenshots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.RUNS, module.PAGE


RUNS, PAGE = _shots()
REPR = re.compile(r"\{'|(?<![\w-])(None|True|False)(?![\w-])")


def _page(cli, name: str, tmp_path: Path) -> Path:
    if name == "cluster-conform":
        from verifier.reports.html import render_report_html
        summary = json.loads((ROOT / "bench/results/issue61/cluster-f6-4.0.2-summary.json").read_text())
        path = tmp_path / "report.html"
        path.write_text(render_report_html(summary))
        return path
    res = cli(*RUNS[name], "--out", str(tmp_path))
    assert res.returncode in (0, 1), (name, res.returncode, res.stderr[-800:])
    return next(tmp_path.glob(PAGE.get(name, "*/report.html")))


def _text(dom) -> str:
    body = [text for tag, attrs, text in dom.elements if tag == "body"]
    return body[0] if body else ""


@pytest.mark.parametrize("name", sorted(RUNS) + ["cluster-conform"])
def test_a_commands_page_shows_its_figures_and_no_python(cli, tmp_path, name):
    page = _page(cli, name, tmp_path)
    dom = _dump_dom(page, tmp_path / "profile")
    text = _text(dom)
    assert not REPR.search(text), f"{name}: Python repr on the page: {REPR.search(text).group(0)!r}"
    html = page.read_text()
    for table in re.findall(r"<table[^>]*>(.*?)</table>", html, re.S):
        assert "<td" in table, f"{name}: an empty table: {table[:200]}"
    verdict = [t for tag, attrs, t in dom.elements if attrs.get("id") == "verdict"]
    if name in ("simulate", "fuzz"):
        assert verdict and "a sample, not a proof" in verdict[0] and "all checked properties hold" not in verdict[0]
        assert re.search(r"\d[\d,]* (random walks|examples)", verdict[0]), verdict[0]
    if name in ("check", "check-violation", "simulate", "fuzz", "prove"):
        figures = [t for tag, attrs, t in dom.elements if tag == "table" and attrs.get("class") == "figures"]
        assert figures and "engine" in figures[0], f"{name}: no table of the run's figures"
        config = [t for tag, attrs, t in dom.elements if tag == "table" and attrs.get("class") == "config"]
        assert config and "min.insync.replicas" in config[0] and "bounds" in config[0] or name == "prove"
    if name in ("check", "check-violation"):
        assert re.search(r"distinct states\s*[\d,]+", text) and "seconds" in text
    if name == "check-violation":
        heads = {t.strip() for tag, attrs, t in dom.elements if tag == "th"}
        assert {"partition", "leader", "leader epoch", "partition epoch", "isr", "elr", "last known elr", "min isr",
                "in flight", "recovery"} <= heads, heads
    if name == "prove":
        assert "Per cluster size" in text and "No action coverage: z3 enumerates no states" in text
    if name == "cluster-conform":
        lines = {attrs.get("id"): t for tag, attrs, t in dom.elements if attrs.get("id") in ("verdict", "data")}
        assert "agrees with the model" in lines["verdict"] and "LOST" in lines["verdict"]
        assert "Kafka LOST acknowledged r1" in lines["data"] and "a consumer reads nothing" in lines["data"]
        banner = next(attrs for tag, attrs, t in dom.elements if attrs.get("id") == "verdict")
        assert "ok" not in banner["class"].split(), "a loss under a green banner"
        steps = [el for el in dom.elements if el[0] == "table" and el[1].get("class") == "steps"]
        assert steps and "unfence" in steps[0][2] and "none (leaderless)" in steps[0][2]
    if name == "conform":
        assert "Steps compared per action" in text and "agrees with Kafka 4.4.0" in text
