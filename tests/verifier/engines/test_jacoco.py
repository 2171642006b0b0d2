"""What conform reports of Kafka's controller code under JaCoCo (verifier/engines/conform/jacoco.py):
the report is read for the methods in scope only, a branch never taken is given to the method it
lies in, a malformed report or missing data is one line; and a real run (Maven Central's JaCoCo
and Kafka 3.9.2's classes: a machine without them fails here with one line, never skips) shows
the driven handlers reached and the undriven ones not."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from specs import RELEASES
from verifier.engines.conform import jacoco
from verifier.engines.conform.oracle import build

REPORT = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<!DOCTYPE report PUBLIC "-//JACOCO//DTD Report 1.1//EN" "report.dtd"><report name="r">
<package name="org/apache/kafka/controller">
 <class name="org/apache/kafka/controller/ReplicationControlManager" sourcefilename="ReplicationControlManager.java">
  <method name="alterPartition" desc="()V" line="10">
   <counter type="BRANCH" missed="1" covered="3"/><counter type="LINE" missed="1" covered="4"/></method>
  <method name="somethingElse" desc="()V" line="20">
   <counter type="BRANCH" missed="2" covered="0"/><counter type="LINE" missed="3" covered="0"/></method>
  <method name="replay" desc="(Lorg/apache/kafka/common/metadata/PartitionRecord;)V" line="40">
   <counter type="BRANCH" missed="0" covered="2"/><counter type="LINE" missed="0" covered="2"/></method>
  <method name="replay" desc="(Lorg/apache/kafka/common/metadata/RemoveTopicRecord;)V" line="50">
   <counter type="BRANCH" missed="0" covered="2"/><counter type="LINE" missed="0" covered="2"/></method>
  <method name="lambda$alterPartition$3" desc="()V" line="30">
   <counter type="BRANCH" missed="{lambda_missed}" covered="1"/><counter type="LINE" missed="0" covered="1"/></method>
 </class>
 <class name="org/apache/kafka/controller/QuorumController" sourcefilename="QuorumController.java">
  <method name="run" desc="()V" line="5"><counter type="BRANCH" missed="9" covered="0"/></method>
 </class>
 <sourcefile name="ReplicationControlManager.java">
  <line nr="12" mi="0" ci="3" mb="1" cb="1"/><line nr="13" mi="0" ci="3" mb="0" cb="2"/>
  <line nr="22" mi="3" ci="0" mb="2" cb="0"/><line nr="31" mi="0" ci="1" mb="1" cb="1"/>
 </sourcefile>
 <sourcefile name="QuorumController.java"><line nr="6" mi="1" ci="0" mb="9" cb="0"/></sourcefile>
</package></report>
"""


def _report(tmp_path: Path, lambda_missed: str = "1") -> Path:
    path = tmp_path / "r.xml"
    path.write_text(REPORT.replace("{lambda_missed}", lambda_missed))
    return path


def test_only_the_methods_in_scope_are_counted_and_missed_branches_go_to_their_method(tmp_path):
    got = jacoco.read(_report(tmp_path), "9.9.9")
    assert [m["method"] for m in got["methods"]] == ["alterPartition", "replay(PartitionRecord)",
                                                     "lambda$alterPartition$3"]   # not replay(RemoveTopicRecord)
    assert got["methods"][2]["in"] == "alterPartition"              # a lambda counts for its method
    assert got["branches"] == [6, 8] and got["lines"] == [7, 8]      # somethingElse and QuorumController left out
    assert [(x["line"], x["method"], x["missed"], x["branches"]) for x in got["missed"]] == [
        (12, "ReplicationControlManager.alterPartition", 1, 2),
        (31, "ReplicationControlManager.alterPartition", 1, 2)]   # in its lambda; line 22 is somethingElse's
    assert all(x["text"] is None for x in got["missed"]) and not got["sources"]


@pytest.mark.parametrize("bad,why", [("-1", "negative counter"), ("x", "not a number")])
def test_a_report_with_a_bad_counter_is_one_line(tmp_path, bad, why):
    with pytest.raises(jacoco.JacocoError, match=why):
        jacoco.read(_report(tmp_path, bad), "9.9.9")


def test_what_is_not_jacocos_xml_is_one_line(tmp_path):
    path = tmp_path / "r.xml"
    path.write_text("<report><package name='p'>")
    with pytest.raises(jacoco.JacocoError, match="not JaCoCo's XML report"):
        jacoco.read(path, "9.9.9")


def test_no_coverage_data_is_one_line(tmp_path):
    (tmp_path / "empty.exec").write_bytes(b"")
    with pytest.raises(jacoco.JacocoError, match="no coverage data"):
        jacoco.xml_report(tmp_path / "empty.exec", [], "3.9.2", tmp_path / "out.xml")


def test_conform_reports_the_kafka_code_its_comparisons_reached(cli, tmp_path):
    rel = RELEASES["3.9.2"]
    build(rel.version, rel.api)                  # Maven: fails (never skips) when it cannot build
    r = cli("conform", "--kafka", rel.version, "--walks", "30", "--coverage", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Kafka {rel.version}'s controller code in scope reached (JaCoCo)" in r.stdout
    code = json.loads(next(tmp_path.glob("*/summary.json")).read_text())["details"]["kafka_coverage"]
    by_name = {}
    for m in code["methods"]:
        got = by_name.setdefault(m["method"], [0, 0])
        got[0], got[1] = got[0] + m["branches"][0], got[1] + m["branches"][1]
    assert by_name["alterPartition"][0] > 0 and by_name["handleBrokerFenced"][0] > 0   # walks drive these
    assert by_name["alterPartitionReassignments"] == [0, by_name["alterPartitionReassignments"][1]]  # no reassign
    assert 0 < code["branches"][0] < code["branches"][1]
    assert code["sources"] and any(x["text"] for x in code["missed"])   # 3.9.2 has a -sources jar
    assert code["unreached"]["with_a_reason"] > 0 and code["unreached"]["without"] > 0
    assert all(x["kind"] == "not behaviour" for x in code["missed"] if "log.isDebugEnabled()" in (x["text"] or ""))
    page = next(tmp_path.glob("*/report.md")).read_text()
    assert "## Kafka's controller code reached" in page and "### Branches never taken" in page
    assert 'id="kafka-missed"' in next(tmp_path.glob("*/report.html")).read_text()


def test_benchmarks_quotes_make_conforms_recorded_coverage():
    """BENCHMARKS.md's coverage rows are make conform's recorded run (bench/results/conform.json)."""
    root = Path(__file__).resolve().parents[3]
    code = json.loads((root / "bench/results/conform.json").read_text())["kafka_code"]
    bench = (root / "BENCHMARKS.md").read_text()
    for key, label in (("branches", "every method in scope"), ("lines", "lines, every method in scope")):
        cells = [jacoco.percent(code[v][key]) for v in code]
        row = f"| {label} | " + " | ".join(cells) + " |"
        assert row.replace("**", "") in bench.replace("**", ""), row
    said = " | ".join(f"{code[v]['unreached']['with_a_reason']} / {code[v]['unreached']['without']}" for v in code)
    assert f"| branches never taken: with a reason / none yet | {said} |" in bench


def test_a_branch_never_taken_gets_the_first_reason_that_matches_its_method_and_line():
    elr_off = {"method": "ReplicationControlManager.isElrEnabled", "missed": 1,
               "text": "return eligibleLeaderReplicasEnabled && featureControl.metadataVersion().isElrSupported();"}
    old, new = ({"release": v, "missed": [dict(elr_off)]} for v in ("3.9.2", "4.4.0"))
    assert jacoco.classify(old)["missed"][0]["why"] and not jacoco.classify(new)["missed"][0]["why"]  # 3.9's only
    got = {"release": "4.4.0", "missed": [
        {"method": "ReplicationControlManager.alterPartition", "text": "if (log.isDebugEnabled()) {", "missed": 1},
        {"method": "ReplicationControlManager.alterPartition", "missed": 1,
         "text": "if (topicId == null || topicId.equals(Uuid.ZERO_UUID) || !topics.containsKey(topicId)) {"},
        {"method": "ReplicationControlManager.electLeader", "text": "if (partition == null) {", "missed": 1},
        {"method": "ReplicationControlManager.alterPartition", "text": "if (partition == null) {", "missed": 2},
        {"method": "ReplicationControlManager.alterPartition", "text": None, "missed": 1}]}
    jacoco.classify(got)
    kinds = [(x["kind"], bool(x["why"])) for x in got["missed"]]
    assert kinds == [("not behaviour", True), ("outside the model", True), ("outside the model", True),
                     (None, False), (None, False)]          # another method's reason is not this one's
    assert got["unreached"] == {"with_a_reason": 3, "without": 3}
    # a line of a release whose method no -sources jar has, named by its number for that release alone
    by_number = {"method": "ReplicationControlManager.alterPartition", "text": None, "missed": 1, "line": 1086}
    named = [jacoco.classify({"release": v, "missed": [dict(by_number, line=n)]})["missed"][0]["why"]
             for v, n in (("4.2.2", 1086), ("4.2.2", 1087), ("4.1.2", 1086))]
    assert named[0] and "topic id is null" in named[0] and named[1:] == [None, None]


def test_every_reason_is_well_formed_and_matches_a_line_of_some_release():
    """A reason that matches nothing in make conform's recorded lists is dead text (or a typo)."""
    root = Path(__file__).resolve().parents[3]
    code = json.loads((root / "bench/results/conform.json").read_text())["kafka_code"]
    lines = [(v, x["method"], x["text"] or "", x["line"]) for v, c in code.items() for x in c["missed"]]
    for r in jacoco._reasons():
        assert any((n == r["line"] if "line" in r else r["text"] in t) and r["in"] in ("*", m)
                   and v in r.get("releases", [v]) for v, m, t, n in lines), r


def test_a_release_without_sources_borrows_text_only_where_the_method_is_the_same(tmp_path):
    ref = jacoco.read(_report(tmp_path), "1.0.0")
    got = jacoco.read(_report(tmp_path), "1.0.1")
    got["missed"][0]["text"] = None
    shifted = json.loads(json.dumps(got))
    for m in shifted["methods"]:
        m["lines"][1] += 1                         # the method changed: no text is borrowed
    src = tmp_path / "src.jar"
    with zipfile.ZipFile(src, "w") as z:
        z.writestr("org/apache/kafka/controller/ReplicationControlManager.java",
                   "\n".join(f"line {i}" for i in range(1, 40)))
    assert jacoco.borrow(got, ref, src)["missed"][0]["text"] == "line 12" and got["text_from"] == "1.0.0"
    assert jacoco.borrow(shifted, ref, src)["missed"][0]["text"] is None


def test_a_line_after_a_lambda_borrows_text_by_its_enclosing_method(tmp_path):
    """A lambda's number changes between releases (lambda$alterPartition$3, $0): a line that
    starts after a lambda in its method is placed in the method, so a release without sources
    still finds its text in an older one where the method is the same."""
    ref = jacoco.read(_report(tmp_path), "1.0.0")
    renamed = tmp_path / "renamed.xml"
    renamed.write_text(_report(tmp_path).read_text().replace("lambda$alterPartition$3", "lambda$alterPartition$0"))
    got = jacoco.read(renamed, "1.0.1")
    after_lambda = next(x for x in got["missed"] if x["line"] == 31)
    assert after_lambda["owner"].endswith("#alterPartition()V") and after_lambda["offset"] == 21
    after_lambda["text"] = None
    src = tmp_path / "src.jar"
    with zipfile.ZipFile(src, "w") as z:
        z.writestr("org/apache/kafka/controller/ReplicationControlManager.java",
                   "\n".join(f"line {i}" for i in range(1, 40)))
    jacoco.borrow(got, ref, src)
    assert after_lambda["text"] == "line 31"
