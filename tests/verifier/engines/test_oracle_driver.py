"""What the conform engine's driver of Kafka's controller (oracle/) does besides the model's steps:
the controlled shutdown as QuorumController runs it, the periodic preferred-leader task, a
standby controller's failover, and the controller classes' logging (the driver needs Maven and
Maven Central: a machine without them fails here with one line, it never skips)."""
from __future__ import annotations

from tests.conftest import ROOT
from tests.verifier.engines.test_conform import _oracle_run


def test_a_controlled_shutdown_is_granted_once_every_active_broker_has_caught_up():
    """The driver records the controlled-shutdown offset as QuorumController does, so a shutdown
    heartbeat from a broker in controlled shutdown is judged in that state: granted only once
    the lowest active broker's metadata offset has reached it. Brokers 2 and 3 last heartbeated
    before broker 1's controlled-shutdown records; the model's clean_shutdown is the heartbeat
    after the wait in which they catch up (OracleCluster.caughtUp), so it is granted: broker 1
    is fenced, as the model has it."""
    shutdown = {"op": "heartbeat", "broker": 1, "want_fence": False, "want_shutdown": True}
    moved, granted = _oracle_run("4.4.0", [shutdown, shutdown])[1:]
    assert moved["partition"]["leader"] == 2 and moved["brokers"]["1"][1:3] == [False, True]
    assert moved["records"] == ["BrokerRegistrationChangeRecord", "PartitionChangeRecord"]
    assert granted["brokers"]["1"][1] is True and granted["error"] is None
    assert granted["brokers"]["2"][1:3] == granted["brokers"]["3"][1:3] == [False, False]


def test_a_standby_that_replays_the_log_takes_over_in_the_state_the_active_controller_holds():
    """unmodelled_request standby_takes_over (OracleProbes.standbyTakesOver): a second
    controller replays the metadata log (no heartbeat manager while standby: a heartbeat is not
    taken), activates, and holds what the first holds; a standby that misses the log's last
    record (the driver's own check that a difference is answered) does not: the field named."""
    takeover = {"op": "probe", "kind": "standby_takes_over"}
    missing = {"op": "probe", "kind": "standby_takes_over_missing_last_record"}
    for version in ("3.9.2", "4.4.0"):
        fenced, same, differs = _oracle_run(version, [{"op": "expire", "broker": 1}, takeover, missing])[1:]
        assert fenced["records"][-1] == "BrokerRegistrationChangeRecord" and fenced["brokers"]["1"][1] is True
        assert same["error"] is None and same["records"] == [] and same["brokers"] == fenced["brokers"]
        assert differs["error"].startswith("STANDBY_DIFFERS(brokers: "), differs["error"]
        assert differs["partition"] == fenced["partition"]      # the active controller left as it was


def test_the_preferred_leader_task_does_what_elect_preferred_does():
    """maybeBalancePartitionLeaders is the same PREFERRED election as ElectLeaders, which the
    model's `elect preferred` is; only the answer differs (the task answers nothing)."""
    move = [{"op": "expire", "broker": 1}, {"op": "heartbeat", "broker": 1, "want_fence": False,
                                            "want_shutdown": False},
            {"op": "alter_partition", "broker": 2, "broker_epoch": 102, "leader_epoch": 1, "partition_epoch": 1,
             "isr": [[2, 102], [3, 103], [1, 101]], "recovery": 0, "version": 3}]
    by_request = _oracle_run("4.4.0", move + [{"op": "elect", "type": "preferred"}])[-1]
    by_task = _oracle_run("4.4.0", move + [{"op": "periodic_preferred"}])[-1]
    assert by_request["partition"] == by_task["partition"] and by_request["partition"]["leader"] == 1
    assert by_request["records"] == by_task["records"] == ["PartitionChangeRecord"]


def test_the_controller_classes_log_at_the_level_asked_into_the_runs_directory(cli, tmp_path):
    """--controller-log: Kafka's controller classes log through slf4j-simple at that level into
    controller.log of the run (their logging paths run and are compared); without it they log
    nothing; a level slf4j does not know is a usage error."""
    path = str(ROOT / "specs/scenarios/coverage-unmodelled-requests.json")
    r = cli("conform", "--kafka", "4.4.0", "--controller-log", "debug", "--out", str(tmp_path / "debug"), path)
    assert r.returncode == 0, r.stdout + r.stderr
    log = next((tmp_path / "debug").glob("*/controller.log")).read_text()
    assert " DEBUG org.apache.kafka.controller." in log and " INFO org.apache.kafka.controller." in log
    r = cli("conform", "--kafka", "4.4.0", "--out", str(tmp_path / "off"), path)
    assert r.returncode == 0 and not list((tmp_path / "off").glob("*/controller.log"))
    r = cli("conform", "--kafka", "4.4.0", "--controller-log", "verbose", path)
    assert r.returncode == 2 and "--controller-log" in r.stderr
