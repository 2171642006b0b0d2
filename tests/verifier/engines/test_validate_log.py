"""`kraft-verify validate-log` (issue 60, first part: the metadata invariants): a real cluster's
own metadata log checked record by record. The fixtures are controller logs cluster-conform kept
(tests/fixtures/metalogs/, made by the harness, not by hand): a seeded walk on 4.4.0 and F3's
file on 3.9.2 hold every check; F2's file on 4.4.0 breaks ElrOnlyBelowMinIsr at the record that
completes the reassignment; F6's file on 4.0.2 elects a fenced broker (F4) at the record that
elects it. Every change of the real logs is one the release's controller makes (the model's
events, specs/metadata.py); F4's record read against 4.4.0's rules is not. Logs edited to hold
one wrong record each, and the histories validate-log writes: test_validate_log_edits.py."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from verifier.engines.cluster.validate import fold

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "metalogs"
# The reader is a JVM (MetadataTail) that the real-cluster tests look for machine-wide to say
# nothing was left running: the tests that start it run in their group, one after another.
READER = [pytest.mark.deps, pytest.mark.xdist_group("kafka-cluster")]


def reader(test):
    for mark in READER:
        test = mark(test)
    return test


def _stream(path: Path = FIXTURES / "walk-seed7-4.4.0.jsonl") -> list:
    items, current = [], ""
    for line in path.read_text().splitlines():
        item = json.loads(line)
        if "file" in item:
            current = item["file"]
        else:
            items.append((current, item))
    return items


def _edited(offset: int, **fields) -> list:
    """The walk's stream with the record at `offset` changed (its data updated by `fields`)."""
    items = copy.deepcopy(_stream())
    for _, batch in items:
        for rec in batch["records"]:
            if rec["offset"] == offset:
                rec["data"].update(fields)
                return items
    raise AssertionError(f"no record at offset {offset}")


def test_every_change_of_the_walks_log_is_a_controller_event_of_the_releases_model():
    from specs import Model, make_config
    meta, _, _ = fold(_stream(), explainer=Model(make_config("kafka-4.4"), symmetry=False).explain_change)
    assert "EveryChangeExplained" not in meta.broken and meta.explained == 6


def test_a_change_no_controller_event_writes_is_unexplained():
    from specs import Model, make_config
    meta, _, _ = fold(_edited(64, eligibleLeaderReplicas=[4]),
                      explainer=Model(make_config("kafka-4.4"), symmetry=False).explain_change)
    f = meta.broken["EveryChangeExplained"]
    assert f.offset == 64 and "AlterPartition from b1" in f.why


def _explain():
    from specs import Model, make_config
    return Model(make_config("kafka-4.4"), symmetry=False).explain_change


# ---------------------------------------------------------------- the command, on real logs (Kafka's jars)

@reader
@pytest.mark.parametrize("log,version", [("walk-seed7-4.4.0", "4.4.0"), ("f3-last-replica-standing-3.9.2", "3.9.2")])
def test_a_real_clusters_log_that_breaks_nothing_is_exit_0(cli, tmp_path, log, version):
    r = cli("validate-log", "--kafka", version, str(FIXTURES / log), "-q", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads(next(tmp_path.glob("*/summary.json")).read_text())
    assert summary["result"] == "ok" and all(v["status"] == "holds" for v in summary["invariants"])
    assert summary["counts"]["records"] > 50


@reader
def test_a_real_clusters_log_of_fifty_partitions_validates(cli, tmp_path):
    """bench/metalog_bench.py's log: five topics of ten partitions on four brokers, twenty rounds
    of fences, unclean and clean restarts and min ISR changes on real 4.4.0 brokers."""
    r = cli("validate-log", "--kafka", "4.4.0", str(FIXTURES / "faults-50-partitions-4.4.0"), "-q",
            "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    summary = json.loads(next(tmp_path.glob("*/summary.json")).read_text())
    assert summary["counts"]["partitions"] == 50 and summary["counts"]["records"] > 1000
    assert summary["details"]["topics"] == 5 and all(v["status"] == "holds" for v in summary["invariants"])
    assert "... and" in r.stdout and "more unclean elections" in r.stdout     # the terminal lists five


@reader
@pytest.mark.parametrize("log,version,name,offset", [
    ("f2-reassignment-4.4.0", "4.4.0", "ElrOnlyBelowMinIsr", 40),
    ("f6-two-unclean-shutdowns-4.0.2", "4.0.2", "LeaderElectedRegisteredUnfenced", 78)])
def test_a_findings_log_is_flagged_at_the_record_kafka_wrote(cli, tmp_path, log, version, name, offset):
    """Every change is still one the release's own rules make (EveryChangeExplained holds): the
    release breaks the property, the log is no forgery."""
    r = cli("validate-log", "--kafka", version, str(FIXTURES / log), "-q", "--out", str(tmp_path))
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"{name}: violated: kv-0 at offset {offset} (PartitionChangeRecord)" in r.stdout
    summary = json.loads(next(tmp_path.glob("*/summary.json")).read_text())
    assert summary["result"] == "violation" and summary["exit_code"] == 1
    assert [v["name"] for v in summary["invariants"] if v["status"] == "violated"] == [name]


@reader
def test_4_0_2s_election_of_a_fenced_leader_is_no_change_4_4_0s_rules_make(cli, tmp_path):
    """F4's record, read against 4.4.0's rules: no controller event of 4.4.0 writes it."""
    r = cli("validate-log", "--kafka", "4.4.0", str(FIXTURES / "f6-two-unclean-shutdowns-4.0.2"), "-q",
            "--out", str(tmp_path))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "EveryChangeExplained: violated: kv-0 at offset 78 (PartitionChangeRecord)" in r.stdout


@reader
def test_a_batch_whose_crc_does_not_match_is_one_line_and_exit_2(cli, tmp_path):
    data = bytearray((FIXTURES / "walk-seed7-4.4.0" / "00000000000000000000.log").read_bytes())
    data[200] ^= 0xFF
    damaged = tmp_path / "00000000000000000000.log"
    damaged.write_bytes(bytes(data))
    r = cli("validate-log", "--kafka", "4.4.0", str(damaged), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"kraft-verify: error: {damaged}: offset 1: the batch's CRC does not match its bytes"], r.stderr


@reader
def test_a_log_of_a_newer_release_read_with_an_older_ones_classes_is_one_line_and_exit_2(cli, tmp_path):
    r = cli("validate-log", "--kafka", "3.9.2", str(FIXTURES / "walk-seed7-4.4.0"), "--out", str(tmp_path))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "a record this release's classes cannot read" in r.stderr


@reader
def test_a_log_cut_short_is_one_line_and_exit_2(cli, tmp_path):
    src = FIXTURES / "walk-seed7-4.4.0" / "00000000000000000000.log"
    torn = tmp_path / "00000000000000000000.log"
    torn.write_bytes(src.read_bytes()[:-7])
    r = cli("validate-log", "--kafka", "4.4.0", str(torn), "--out", str(tmp_path / "out"))
    assert r.returncode == 2, r.stdout + r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"kraft-verify: error: {torn}: offset ") and "cut short" in line


def test_a_path_that_is_not_there_is_one_line_and_exit_2(cli, tmp_path):
    r = cli("validate-log", "--kafka", "4.4.0", str(tmp_path / "nothing"), "--out", str(tmp_path))
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"kraft-verify: error: {tmp_path / 'nothing'}: no such file or directory"]


@pytest.mark.parametrize("args,message", [
    (["--kafka", "9.9.9"], "--kafka 9.9.9: not a release"),
    (["--kafka", "4.4.0", "--default-min-isr", "0"], "--default-min-isr must be >= 1, got 0")])
def test_bad_options_are_one_line_and_exit_2(cli, tmp_path, args, message):
    r = cli("validate-log", *args, str(FIXTURES / "walk-seed7-4.4.0"), "--out", str(tmp_path))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and message in r.stderr


@reader
@pytest.mark.parametrize("what", ["an empty directory", "a file that is no log"])
def test_what_holds_no_metadata_record_is_one_line_and_exit_2_never_a_pass(cli, tmp_path, what):
    path = tmp_path / "in"
    if what == "an empty directory":
        path.mkdir()
    else:
        path.write_text("hello, not a log at all; some bytes 1234567890\n")
    r = cli("validate-log", "--kafka", "4.4.0", str(path), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stdout + r.stderr
    assert not list((tmp_path / "out").glob("*/summary.json"))


@reader
def test_partitions_checks_only_those_named_and_a_name_the_log_never_had_is_exit_2(cli, tmp_path):
    log = str(FIXTURES / "f2-reassignment-4.4.0")
    r = cli("validate-log", "--kafka", "4.4.0", log, "--partitions", "kv-0", "-q", "--out", str(tmp_path / "a"))
    assert r.returncode == 1 and "ElrOnlyBelowMinIsr: violated: kv-0 at offset 40" in r.stdout
    r = cli("validate-log", "--kafka", "4.4.0", str(FIXTURES / "faults-50-partitions-4.4.0"), "--partitions",
            "t0,t1-3", "-q", "--out", str(tmp_path / "b"))
    summary = json.loads(next((tmp_path / "b").glob("*/summary.json")).read_text())
    assert r.returncode == 0 and summary["details"]["partitions_checked"] == 11 and "(11 checked)" in r.stdout
    unclean = {f["partition"] for f in summary["details"]["findings"] if f["property"] == "UncleanElection"}
    assert unclean and all(p.startswith("t0-") or p == "t1-3" for p in unclean), unclean
    r = cli("validate-log", "--kafka", "4.4.0", log, "--partitions", "kv-1", "--out", str(tmp_path / "c"))
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "kraft-verify: error: --partitions: kv-1: no such topic or partition in the log"]
