"""Each finding of docs/FINDINGS.md replays with "reproduces" under every release it names,
and does not under the releases it says it does not apply to (specs/scenarios/findings/)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.bind import run_file

ROOT = Path(__file__).resolve().parents[2]
FINDINGS = (ROOT / "docs" / "FINDINGS.md").read_text()


def _entries():
    out = []
    for block in re.split(r"^### ", FINDINGS, flags=re.M)[1:]:
        key = block.split(".", 1)[0]
        line = re.search(r"- scenarios?: (.*?)\n- ", block, re.S).group(1)
        yes = re.findall(r"`([^`]+)`", re.search(r"- reproduces under: (.*)", block).group(1))
        no_line = re.search(r"- does not reproduce under: (.*)", block)
        no = re.findall(r"`([^`]+)`", no_line.group(1)) if no_line else []
        for scenario in re.findall(r"`(specs/scenarios/findings/[^`]+)`", line):
            out += [(key, scenario, p, True) for p in yes] + [(key, scenario, p, False) for p in no]
    return out


CASES = _entries()


def test_every_finding_has_a_scenario_and_releases():
    keys = {k for k, *_ in CASES}
    assert len(keys) >= 2 and len(keys) == len(re.findall(r"^### F\d+\.", FINDINGS, re.M))
    files = {s for _, s, *_ in CASES}
    assert files == {f"specs/scenarios/findings/{p.name}" for p in (ROOT / "specs/scenarios/findings").glob("*.json")}


@pytest.mark.parametrize("key,scenario,preset,reproduces", CASES,
                         ids=[f"{k}-{Path(s).stem[:24]}-{p}" for k, s, p, _ in CASES])
def test_a_finding_replays_as_its_entry_says(key, scenario, preset, reproduces):
    result = run_file(str(ROOT / scenario), preset=preset)
    assert result.ok == reproduces, result.failure
    if reproduces and "expect_violation" in (ROOT / scenario).read_text():
        assert result.trace.violated


def test_replay_preset_says_it_in_words(cli):
    path = "specs/scenarios/findings/reassignment-leaves-elr-beside-a-full-isr.json"
    yes = cli("replay", "--preset", "kafka-4.0", path)
    assert yes.returncode == 0 and yes.stdout.startswith("reproduces under kafka-4.0:")
    no = cli("replay", "--preset", "kafka-3.9", path)
    assert no.returncode == 1
    assert "does not reproduce under kafka-3.9:" in no.stdout and "step 5 (after deliver_alter_partition)" in no.stdout
    assert "FAIL" not in no.stdout


def _block(key: str) -> str:
    return next(b for b in re.split(r"^### ", FINDINGS, flags=re.M)[1:] if b.startswith(f"{key}."))


CATALOGUED = [(f.id, s) for f in __import__("specs.findings", fromlist=["FINDINGS"]).FINDINGS for s in f.scenarios]


@pytest.mark.parametrize("key,scenario", CATALOGUED, ids=[f"{k}-{s[:30]}" for k, s in CATALOGUED])
def test_a_findings_own_run_is_recognised_as_that_finding(key, scenario):
    """specs/findings.py names a counterexample after its FINDINGS.md entry (prove's refutations
    are reported so): each entry's own scenario, replayed under the first release it reproduces
    under, is recognised as that entry and no other."""
    from specs.findings import BY_ID, recognize
    finding = BY_ID[key]
    block = _block(key)
    assert block.startswith(f"{key}. {finding.title}\n"), "the catalogue's title is the entry's heading"
    assert finding.check.split(" (")[0] in " ".join(block.split())
    assert f"specs/scenarios/findings/{scenario}" in block
    preset = re.findall(r"`([^`]+)`", re.search(r"- reproduces under: (.*)", block).group(1))[0]
    result = run_file(str(ROOT / "specs/scenarios/findings" / scenario), preset=preset)
    assert result.ok and result.trace.violated, result.failure
    assert recognize(result.trace) is finding


def test_a_run_of_no_finding_is_said_to_be_none():
    """The default config's check finds nothing; a mutant's run tells no finding's story."""
    from specs.findings import named, recognize
    result = run_file(str(ROOT / "specs/scenarios/maximal-isr-hwm.mutant.json"))
    assert result.trace is not None and recognize(result.trace) is None
    assert named(result.trace).startswith("no finding of docs/FINDINGS.md")
