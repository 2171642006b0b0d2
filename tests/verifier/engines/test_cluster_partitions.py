"""cluster-conform with several partitions, without a cluster: the metadata log folded partition
by partition, and trace validation (explain.py) of the two things a real cluster does at once
that the lifted model takes as one step each (a leader's ISR changes of both partitions in one
AlterPartition, written as one batch; a follower fetching every partition a leader leads once
its link is open), each shown to be needed and to refuse what the model does not allow."""
from __future__ import annotations

from dataclasses import replace

import pytest

from specs import Model, PartitionsModel
from specs.config import make_config
from verifier.engines.cluster.explain import data_diffs, model_incarnation, parts, plain, search
from verifier.engines.cluster.harness import Data, Observation
from verifier.engines.cluster.observe import Fold

TOPIC_ID = "T"


@pytest.fixture(scope="module")
def model():
    return PartitionsModel(replace(make_config("kafka-4.4"), partitions=2), symmetry=False)


def _view(x) -> dict:
    """What the harness's fold shows of the model's state `x` (broker epochs the model's)."""
    vs = [Model.kafka_view(p, None) for p in parts(x)]
    return {"partitions": [v["partition"] for v in vs], "brokers": vs[0]["brokers"], "min_isr": vs[0]["min_isr"],
            "unclean": vs[0]["unclean"]}


def _data(cfg, x) -> Data:
    each = []
    for part in parts(x):
        leader = part.ctrl.partition.leader
        alive = {b: r.alive for b, r in zip(cfg.brokers, part.replicas)}
        hwm = part.replicas[cfg.brokers.index(leader)].hwm if alive.get(leader) else None
        each.append(Data(alive, {b: [tuple(e) for e in r.log] for b, r in zip(cfg.brokers, part.replicas)}, hwm,
                         tuple(sorted(part.hist.acked)), {b: r.hwm for b, r in zip(cfg.brokers, part.replicas)
                                                          if r.alive}))
    return each[0]._replace(parts=tuple(each))


def _search(model, s, driven, views, after):
    obs = Observation(views, [[] for _ in views], _data(model.cfg, after), None)
    return search(model, s, driven, obs, model_incarnation, set())


def _go(model, s, *labels):
    for label in labels:
        assert model.allows(s, label), label
        s = model.apply(s, label)[0]
    return s


def _record(kind: str, offset: int, **data) -> dict:
    return {"type": kind, "offset": offset, "data": data}


def test_the_fold_keeps_each_partition_and_a_clear_elr_record_clears_every_one():
    f = Fold("kv", 9)
    f.apply({"records": [_record("TopicRecord", 1, name="kv", topicId=TOPIC_ID)] + [
        _record("PartitionRecord", 2 + p, topicId=TOPIC_ID, partitionId=p, replicas=[1, 2, 3], isr=[1, 2, 3],
                eligibleLeaderReplicas=[], lastKnownElr=[], leader=1, leaderEpoch=0, partitionEpoch=0)
        for p in (0, 1)]})
    f.apply({"records": [_record("PartitionChangeRecord", 4, topicId=TOPIC_ID, partitionId=1, isr=[1],
                                 eligibleLeaderReplicas=[2, 3], leader=-2)]})
    assert f.parts[0]["isr"] == [1, 2, 3] and f.parts[1]["isr"] == [1] and f.parts[1]["partition_epoch"] == 1
    assert f.view()["partitions"][1]["elr"] == [2, 3] and f.partition == f.parts[0]
    f.apply({"records": [_record("PartitionChangeRecord", 5, topicId="other", partitionId=0, isr=[1], leader=-2)]})
    assert f.parts[0]["isr"] == [1, 2, 3], "another topic's partition 0 is not ours"
    f.apply({"records": [_record("ClearElrRecord", 6, topicName="kv")]})
    # Kafka's replay (ReplicationControlManager.removeTopicElrs) bumps the epoch only where it cleared something
    assert [(p["elr"], p["partition_epoch"]) for p in f.view()["partitions"]] == [([], 0), ([], 2)]


def test_one_alter_partition_for_both_partitions_is_one_batch_of_the_log(model):
    s = model.init_states()[0]
    shrink = [next(lbl for lbl, _ in model.successors(s) if lbl[0] == "shrink_isr" and lbl[1] == 2 and not lbl[2]
                   and lbl[-1] == ("partition", p)) for p in (0, 1)]
    both = _go(model, s, *shrink, ("deliver_alter_partition", ("partition", 0)),
               ("deliver_alter_partition", ("partition", 1)))
    assert [p.ctrl.partition.isr for p in both] == [(1, 3), (1, 3)]
    found = _search(model, s, shrink[0], [_view(both)], both).found
    assert found is not None, "the log's one batch is both deliveries, taken together"
    assert [lbl[0] for lbl, _, _ in found.path] == ["shrink_isr", "shrink_isr", "deliver_alter_partition",
                                                   "deliver_alter_partition"]
    # the same two deliveries written one after the other are two states of the log
    one = _go(model, s, *shrink, ("deliver_alter_partition", ("partition", 0)))
    assert _search(model, s, shrink[0], [_view(one), _view(both)], both).found is not None
    # but deliveries can only meet a state of the log together: one whose partition 0 no silent
    # step reaches (a new leader, no election) is no explanation
    wrong = _view(both)
    wrong["partitions"][0] = dict(wrong["partitions"][0], leader=3)
    r = _search(model, s, shrink[0], [wrong], both)
    assert r.found is None and r.matched == 0


def test_a_fetch_lets_the_follower_fetch_every_partition_its_leader_leads(model):
    s = model.init_states()[0]
    x = _go(model, s, ("produce", ("partition", 0)), ("produce", ("partition", 1)))
    fetched = _go(model, x, ("fetch", 2, ("partition", 0)), ("fetch", 2, ("partition", 1)))
    found = _search(model, x, ("fetch", 2, ("partition", 0)), [], fetched).found
    assert found is not None and [lbl for lbl, _, _ in found.path] == [("fetch", 2, ("partition", 0)),
                                                                       ("fetch", 2, ("partition", 1))]
    # a fetch of another follower opens no link of b2's: its replica of partition 1 catching up
    # is then no step the cluster takes on its own, and the data says where the model differs
    seen = _go(model, x, ("fetch", 3, ("partition", 0)), ("fetch", 2, ("partition", 1)))
    assert _search(model, x, ("fetch", 3, ("partition", 0)), [], seen).found is None
    diffs = data_diffs(model.cfg, _go(model, x, ("fetch", 3, ("partition", 0))), _data(model.cfg, seen))
    assert [d.field for d in diffs] == ["partition 1 b2 log"], diffs


def test_a_lossy_crash_that_differs_by_partition_names_its_broker():
    label = ("crash_lossy", ("each", (("crash", 2), ("crash_lossy", 2, 0))))
    assert plain(label) == ("crash", 2) and plain(("fence", 3)) == ("fence", 3)


def test_cluster_conform_refuses_scenario_files_with_several_partitions(tmp_path):
    import subprocess
    import sys
    from tests.conftest import ROOT
    f = ROOT / "specs" / "scenarios" / "findings" / "last-replica-standing-loses-an-acknowledged-record.json"
    r = subprocess.run([sys.executable, "-m", "verifier.cli", "cluster-conform", "--kafka", "4.4.0", "--partitions",
                        "2", str(f), "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "scenario files run one partition" in r.stderr + r.stdout
    assert "Traceback" not in r.stderr and len((r.stderr + r.stdout).strip().splitlines()) == 1


def test_the_report_shows_each_partition_and_each_brokers_replica_of_it():
    from verifier.reports.cluster import step_rows
    cells = {f"p{p}.{f}": f"{f}{p}" for p in (0, 1) for f in ("leader", "isr")}
    broker = {"status": "up", "p0.role": "leader", "p0.log": "[e0:r1]", "p0.hwm": "1",
              "p1.role": "follower", "p1.log": "[]", "p1.hwm": "0"}
    step = {"index": 1, "step": "produce (partition 0)", "partition": cells, "brokers": {"b1": broker},
            "acknowledged": ["p0/r1"]}
    head, (row,) = step_rows({"steps": [step]})
    assert head.index("p1.isr") > head.index("p0.isr") and row[head.index("p1.isr")] == "isr1"
    assert row[head.index("b1: status, log, HWM (per partition)")] == \
        "up; p0: leader, [e0:r1], hwm 1; p1: follower, [], hwm 0"
    one = {"index": 1, "step": "produce", "partition": {"leader": "b1"}, "acknowledged": ["r1"],
           "brokers": {"b1": {"status": "up", "role": "leader", "log": "[e0:r1]", "hwm": "1"}}}
    head, (row,) = step_rows({"steps": [one]})
    assert row[head.index("leader")] == "b1" and row[head.index("b1: status, log, HWM")] == "up, leader, [e0:r1], hwm 1"
