"""report.html opened in headless Chromium (Debian's `chromium`; .ci/run installs it): the page
loads from the file alone, shows the verdict, every property, the states-per-level chart, and
the known counterexample of a broken rule as a per-broker timeline with its breaking step."""
from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class Dom(HTMLParser):
    """The elements Chromium rendered, as (tag, attributes, text) in document order."""

    def __init__(self):
        super().__init__()
        self.elements: list[list] = []
        self.open: list[list] = []

    def handle_starttag(self, tag, attrs):
        el = [tag, dict(attrs), ""]
        self.elements.append(el)
        if tag not in ("meta", "br", "rect"):
            self.open.append(el)

    def handle_endtag(self, tag):
        while self.open and self.open.pop()[0] != tag:
            pass

    def handle_data(self, data):
        for el in self.open:
            el[2] += data


def _dump_dom(path: Path, profile: Path) -> Dom:
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is needed for this test (.ci/run installs it)"
    out = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", path.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "<body" in out.stdout, out.stderr[-500:]
    dom = Dom()
    dom.feed(out.stdout)
    return dom


@pytest.mark.deps            # Chromium
def test_report_html_shows_the_timeline_of_a_known_counterexample(cli, tmp_path):
    res = cli("check", "--mutant", "elr-not-cleared", "--invariant", "ElrOnlyBelowMinIsr", "--out", str(tmp_path))
    assert res.returncode == 1, res.stderr
    (page,) = tmp_path.glob("check-*/report.html")
    summary = json.loads((page.parent / "summary.json").read_text())
    dom = _dump_dom(page, tmp_path / "profile")

    verdict = [text for tag, attrs, text in dom.elements if attrs.get("id") == "verdict"]
    assert verdict and "violated" in verdict[0] and "exit code 1" in verdict[0]
    names = {inv["name"] for inv in summary["invariants"]}
    shown = {text.strip() for tag, attrs, text in dom.elements if tag == "td"}
    assert names <= shown, names - shown

    steps = [el for el in dom.elements if el[0] == "tr" and "step" in el[1].get("class", "")]
    # fencing one broker moves it out of the ISR into ELR beside a full ISR: initial row + 1 step
    # (which broker is the search's tie-break among 1-step paths; the page must show that one)
    (step,) = [s for s in json.loads((page.parent / "counterexample.json").read_text())["steps"] if "op" in s]
    assert step["op"] == "fence"
    b = step["broker"]
    assert len(steps) == 2
    assert "breaking" in steps[1][1]["class"] and "breaking" not in steps[0][1]["class"]
    assert f"fence broker={b}" in steps[1][2] and "ELR" in steps[1][2] and "fenced" in steps[1][2]
    changed = [el for el in dom.elements if el[0] == "td" and el[1].get("class") == "changed"]
    assert {"ELR", "up, fenced"} <= {el[2] for el in changed}
    why = [text for tag, attrs, text in dom.elements if attrs.get("class") == "why"]
    assert why and f"elr=[b{b}]" in why[0] and "min ISR 2" in why[0]
    bars = [el for el in dom.elements if el[0] == "rect" and el[1].get("class") == "level"]
    assert len(bars) == len(summary["counts"]["states_per_level"])
    html = page.read_text()
    assert "http://" not in html and "https://" not in html and "<script" not in html   # self-contained
