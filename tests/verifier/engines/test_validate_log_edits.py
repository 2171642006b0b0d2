"""validate-log on logs edited to hold one wrong record each, and the histories it writes.

The edits are real segments: the walk's records (a real 4.4.0 cluster's controller log, decoded
once by the reader into `walk-seed7-4.4.0.jsonl`) changed in one record and written back by
MetadataWrite, each record encoded by Kafka 4.4.0's own JSON converters and record serde (a
rewrite of the unedited walk gives Kafka's record bytes back, below). validate-log then reads
each through the same path as a cluster's log. A violation's history is a replay scenario of
the model: replayed, the model writes what the log holds at every step and breaks the same
invariant at the last one.
"""
from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest

from tests.verifier.engines.test_validate_log import FIXTURES, _stream, reader
from verifier.engines.cluster.history import History, targets
from verifier.engines.cluster.metalog import Finding
from verifier.engines.cluster.validate import fold

SEGMENT = "00000000000000000000.log"


def _segment(tmp_path: Path, items: list, version: str = "4.4.0") -> Path:
    """The batches written as a segment by the release's classes; the directory holding it."""
    from verifier.engines.cluster.dist import build
    where = tmp_path / "log"
    where.mkdir()
    text = "\n".join(json.dumps(batch) for _, batch in items) + "\n"
    proc = subprocess.run(["java", "-cp", build(version).classpath, "io.kraftverify.cluster.MetadataWrite",
                           str(where / SEGMENT)], input=text, text=True, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return where


def _renumbered(items: list) -> list:
    """Offsets made contiguous again after a record was added (a log's offsets are)."""
    offset = items[0][1]["records"][0]["offset"]
    for _, batch in items:
        batch["batch"] = offset
        for rec in batch["records"]:
            rec["offset"], offset = offset, offset + 1
    return items


def _log() -> list:
    """The walk's segment (its snapshot, the bootstrap's, is a whole state of its own)."""
    return [(f, b) for f, b in copy.deepcopy(_stream()) if f.endswith(".log")]


def _edit(offset: int, fields: dict) -> list:
    items = _log()
    rec = next(r for _, b in items for r in b["records"] if r["offset"] == offset)
    rec["data"].update(fields)
    return items


def _epochs_back() -> list:
    """The partition recorded again at its creation's epochs, after it has moved on."""
    items = _log()
    again = copy.deepcopy(next(r for _, b in items for r in b["records"] if r["type"] == "PartitionRecord"))
    items.append((items[-1][0], {"batch": 0, "records": [again]}))
    return _renumbered(items)


def _written_twice() -> list:
    """F5's shape: the record at offset 43 written twice in its batch."""
    items = _log()
    batch = next(b for _, b in items if any(r["offset"] == 43 for r in b["records"]))
    batch["records"].append(copy.deepcopy(next(r for r in batch["records"] if r["offset"] == 43)))
    return _renumbered(items)


# the walk's partition records: 26 created ISR [1,2,3]; 43 ISR [1,2]; 64 [1,2,3]; 80 [1,3];
# 90 ISR [1], ELR [3]; 108 ISR [1,2], ELR []; 123 [1,2,3]; leader b1 throughout
EDITS = {
    "a leader outside ISR and ELR": (lambda: _edit(43, {"leader": 3, "isr": [1, 2]}), "LeaderInIsr", 43),
    "a member in both ISR and ELR": (lambda: _edit(64, {"eligibleLeaderReplicas": [3]}), "IsrElrDisjoint", 64),
    "an ELR member beside a full ISR": (lambda: _edit(64, {"eligibleLeaderReplicas": [4]}), "ElrOnlyBelowMinIsr", 64),
    "a leader that was no candidate": (lambda: _edit(90, {"leader": 2}), "ElectedLeaderWasCandidate", 90),
    "an unregistered leader": (lambda: _edit(43, {"leader": 9, "isr": [9, 1]}), "LeaderElectedRegisteredUnfenced", 43),
    "an epoch going back": (_epochs_back, "OneLeaderPerEpoch", 129),
    "an unclean election beside a non-empty ELR, unclean elections off":
        (lambda: _edit(108, {"leader": 2, "isr": [2], "leaderRecoveryState": 1, "eligibleLeaderReplicas": [3]}),
         "EveryChangeExplained", 108),
    "a PartitionChangeRecord written twice (F5's shape, without its stale ELR index entry)":
        (_written_twice, "EveryChangeExplained", 43),
}


@reader
def test_a_rewrite_of_the_unedited_walk_is_kafkas_own_records_and_validates(cli, tmp_path):
    """MetadataWrite is no second encoder: the walk's 128 records written back read as the same
    batches, and the log validates as the original does."""
    items = _log()
    log = _segment(tmp_path, items)
    r = cli("validate-log", "--kafka", "4.4.0", str(log), "-q", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stdout + r.stderr
    from verifier.engines.cluster.dist import build
    from verifier.engines.cluster.validate import _batches
    again = [b for _, b in _batches(build("4.4.0").classpath, (str(log / SEGMENT),))]
    assert [b["records"] for _, b in items] == [b["records"] for b in again]


@reader
@pytest.mark.parametrize("what", list(EDITS))
def test_a_log_edited_to_hold_one_wrong_record_is_flagged_at_its_offset(cli, tmp_path, what):
    make, name, offset = EDITS[what]
    log = _segment(tmp_path, make())
    r = cli("validate-log", "--kafka", "4.4.0", str(log), "-q", "--out", str(tmp_path / "out"))
    assert r.returncode == 1, r.stdout + r.stderr
    summary = json.loads(next((tmp_path / "out").glob("*/summary.json")).read_text())
    verdict = next(v for v in summary["invariants"] if v["name"] == name)
    assert verdict["status"] == "violated", summary["invariants"]
    first = next(f for f in summary["details"]["findings"] if f["property"] == name)
    assert first["partition"] == "kv-0" and first["offset"] == offset, first
    if "unclean election" in what:       # listed, with who could have chosen it
        unclean = [f for f in summary["details"]["findings"] if f["property"] == "UncleanElection"]
        assert [f["offset"] for f in unclean] == [108] and "unclean.leader.election.enable is false" in unclean[0]["why"]


@reader
def test_a_record_type_the_release_does_not_know_is_one_line_naming_its_offset_and_exit_2(cli, tmp_path):
    items = _log()
    items.append((items[-1][0], {"batch": 0, "records": [{"offset": 0, "apiKey": 250, "version": 0}]}))
    log = _segment(tmp_path, _renumbered(items))
    r = cli("validate-log", "--kafka", "4.4.0", str(log), "--out", str(tmp_path / "out"))
    assert r.returncode == 2, r.stdout + r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"kraft-verify: error: {log / SEGMENT}: offset 129: a record this release's classes "
                           "cannot read") and "a record type it does not know" in line, line
    assert not list((tmp_path / "out").glob("*/summary.json"))


# ---------------------------------------------------------------- histories

@reader
@pytest.mark.parametrize("log,version,name", [("f2-reassignment-4.4.0", "4.4.0", "ElrOnlyBelowMinIsr"),
                                              ("f6-two-unclean-shutdowns-4.0.2", "4.0.2",
                                               "LeaderElectedRegisteredUnfenced")])
def test_a_violations_history_replays_on_the_model_and_breaks_the_same_invariant(cli, tmp_path, log, version, name):
    r = cli("validate-log", "--kafka", version, str(FIXTURES / log), "-q", "--out", str(tmp_path))
    assert r.returncode == 1 and f"its history as a replay scenario: history-{name}.json" in r.stdout, r.stdout
    run = next(tmp_path.glob("validate-log-*"))
    summary = json.loads((run / "summary.json").read_text())
    assert summary["details"]["histories"] == {name: f"history-{name}.json"}
    story = json.loads((run / f"history-{name}.json").read_text())
    assert story["steps"][-1] == {"expect_violation": [name]} and story["config"]["preset"] == summary["config"]["preset"]
    replay = cli("replay", str(run / f"history-{name}.json"))
    assert replay.returncode == 0 and f"(reproduces {name})" in replay.stdout, replay.stdout + replay.stderr


@reader
def test_a_change_no_event_explains_ends_its_history_at_the_state_before_it(cli, tmp_path):
    """F4's record read against 4.4.0's rules: the history replays up to it and says where it stops."""
    r = cli("validate-log", "--kafka", "4.4.0", str(FIXTURES / "f6-two-unclean-shutdowns-4.0.2"), "-q",
            "--out", str(tmp_path))
    assert r.returncode == 1
    path = next(tmp_path.glob("validate-log-*/history-*.json"))
    last = json.loads(path.read_text())["steps"][-1]
    assert last["expect"]["leader"] == -1 and last["comment"].startswith("offsets 78-79: no controller event")
    replay = cli("replay", str(path))
    assert replay.returncode == 0, replay.stdout + replay.stderr


def test_a_real_walks_whole_history_replays_on_the_model_record_for_record():
    """Every batch of the walk's log, as the model's operation with the log's leader, ISR, ELR
    and epochs expected after it: the model writes the whole real history."""
    from specs import Model, make_config
    from verifier.cli.binding import properties
    from verifier.engines.replay import run_scenario
    items = _stream()
    last = items[-1][1]["records"][-1]["offset"]
    wanted, done = targets({"EveryChangeExplained": Finding("EveryChangeExplained", "kv-0", last, "", {}, None, "")}), {}
    fold(items, explainer=Model(make_config("kafka-4.4"), symmetry=False).explain_change,
         start=lambda: History(1, wanted, done, "kafka-4.4"))
    story = done["EveryChangeExplained"]
    ops = [st for st in story["steps"] if "op" in st]
    assert len(ops) >= 8 and {op["op"] for op in ops} >= {"fence", "alter_partition", "register"}, ops
    run = run_scenario(story, "walk", properties=properties())
    assert run.ok, run.failure
    broken = copy.deepcopy(story)        # and the replay is no formality: a wrong expectation fails it
    next(st for st in broken["steps"] if "expect" in st)["expect"]["isr"] = [3]
    assert not run_scenario(broken, "walk", properties=properties()).ok


@reader
def test_every_partitions_history_of_a_fifty_partition_real_log_replays_on_the_model():
    """bench/metalog_bench.py's log (fences, unclean and clean restarts, min ISR changes on real
    4.4.0 brokers): all fifty histories, each to the log's end, replay with every expectation."""
    from specs import Model, make_config
    from verifier.cli.binding import properties
    from verifier.engines.cluster.dist import build
    from verifier.engines.cluster.validate import _batches
    from verifier.engines.replay import run_scenario
    log = (str(FIXTURES / "faults-50-partitions-4.4.0"),)
    explain = Model(make_config("kafka-4.4"), symmetry=False).explain_change
    meta, _, _ = fold(_batches(build("4.4.0").classpath, log), explainer=explain)
    names = {f"{meta.topics[t]}-{p}" for t, p in meta.partitions}
    wanted, done, folds = {n: ("EveryChangeExplained", -1) for n in names}, {}, []

    def start():
        folds.append(History(1, wanted, done, "kafka-4.4"))
        return folds[-1]
    fold(_batches(build("4.4.0").classpath, log), explainer=explain, start=start)
    stories = list(folds[-1].open.values())        # offset -1: every history runs to the log's end
    assert len(stories) == len(names) == 50
    assert sum(1 for s in stories for st in s["steps"] if "op" in st) > 2000
    failed = [(s["name"], run.failure) for s in stories
              if not (run := run_scenario(s, s["name"], properties=properties())).ok]
    assert not failed, failed[:3]
