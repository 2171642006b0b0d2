"""cluster-conform on real KRaft clusters (docs/cluster.md): the findings that lose an
acknowledged record on a real cluster do, agreeing with the model at every step; a release
that keeps it keeps it; every process, firewall rule and directory the harness creates is gone
after every exit (0, 1, 2, 3, SIGINT, SIGTERM, a cluster that fails to start); a cluster that
cannot be had is one line, never a skip. One xdist group: one cluster at a time on two cores."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.xdist_group("kafka-cluster")

FINDINGS = ROOT / "specs" / "scenarios" / "findings"
F1_ACK = FINDINGS / "min-isr-change-then-last-known-leader-loses-an-acknowledged-record.json"
F3 = FINDINGS / "last-replica-standing-loses-an-acknowledged-record.json"
F6 = FINDINGS / "last-known-leader-loses-an-acknowledged-record-after-two-unclean-shutdowns.json"
LAG = ROOT / "specs" / "scenarios" / "lag" / "deposed-leader-takes-a-produce-at-its-old-epoch.json"


def _leftovers() -> dict:
    """What a harness may leave: Kafka JVMs and metadata tails, iptables chains, cluster dirs."""
    procs = subprocess.run(["pgrep", "-f", "kafka.Kafka|MetadataTail|kafka.tools.StorageTool"], capture_output=True,
                           text=True).stdout.split()
    chains = [ln for ln in subprocess.run(["iptables", "-w", "5", "-S"], capture_output=True, text=True).stdout
              .splitlines() if "KV-" in ln]
    dirs = [str(p) for p in Path("/tmp").glob("kraft-verify-cluster-*")]
    return {"processes": procs, "chains": chains, "dirs": dirs}


NOTHING = {"processes": [], "chains": [], "dirs": []}


def _run(*args, env=None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verifier.cli", "cluster-conform", *args], cwd=ROOT,
                          capture_output=True, text=True, env=dict(os.environ, COLUMNS="200", **(env or {})), **kw)


def _details(out: Path) -> dict:
    return json.loads(next(out.glob("cluster-conform-*/cluster.json")).read_text())["details"]


@pytest.fixture(autouse=True)
def nothing_left_behind():
    assert _leftovers() == NOTHING, "an earlier run left something behind"
    yield
    assert _leftovers() == NOTHING


def test_f3_loses_an_acknowledged_record_on_a_real_3_9_2_cluster(tmp_path):
    r = _run("--kafka", "3.9.2", str(F3), "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "agrees with a real Kafka 3.9.2 cluster" in r.stdout
    (case,) = _details(tmp_path)["cases"]
    assert case["divergence"] is None and case["not_drivable"] is None
    assert case["acknowledged_lost"] == ["r1"] and case["consumer_reads"] == []
    assert "NoCommittedRecordLostGlobally" in case["model_violates"]
    # every one of the scenario's 11 steps was driven or taken by the cluster on its own
    assert len(case["steps"]) + len(case["skipped"]) == 11
    assert all(s.endswith("(the cluster took it on its own)") for s in case["skipped"])
    assert "advance_hwm (the cluster took it on its own)" in case["skipped"]


def test_f1_and_f6_lose_an_acknowledged_record_on_a_real_4_4_0_cluster(tmp_path):
    """Unclean elections disabled, fewer lossy crashes than min ISR: the controller's own
    last-known-leader election loses r1 on the real cluster as in the model."""
    r = _run("--kafka", "4.4.0", str(F1_ACK), str(F6), "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    f1, f6 = _details(tmp_path)["cases"]
    for case in (f1, f6):
        assert case["divergence"] is None and case["acknowledged_lost"] == ["r1"] and case["consumer_reads"] == []
        assert "NoCommittedRecordLostGlobally" in case["model_violates"]
    assert "UncleanElectionOnlyAfterMinIsrUncleanShutdowns" in f1["model_violates"]
    assert "UncleanElectionOnlyAfterMinIsrUncleanShutdowns" not in f6["model_violates"]   # two unclean shutdowns


@pytest.mark.nightly     # 42 s of CI; CI replays F3 through 4.4.0's own controller (test_conform: not reproduced)
def test_f3_keeps_the_record_on_a_real_4_4_0_cluster(tmp_path):
    r = _run("--kafka", "4.4.0", str(F3), "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    (case,) = _details(tmp_path)["cases"]
    assert case["acknowledged_lost"] == [] and case["acknowledged_kept"] == ["r1"]
    assert "NoCommittedRecordLostGlobally" not in case["model_violates"] and case["model_stops_at"]


def test_a_wrong_model_diverges_says_where_and_is_shrunk(tmp_path):
    """The unfence-adds-to-isr mutant puts a broker back in the ISR when it is unfenced; a real
    cluster does not (exit 1). The produce in between has nothing to do with it: the shrink
    leaves it out (each attempt on a fresh cluster), and the replay scenario has the two steps."""
    scenario = tmp_path / "fence-produce-unfence.json"
    scenario.write_text(json.dumps({
        "name": "fence-produce-unfence",
        "config": {"preset": "kafka", "mutant": "unfence-adds-to-isr", "replicas": [1, 2, 3], "min_isr": 2},
        "steps": [{"op": "fence", "broker": 1}, {"op": "produce"}, {"op": "unfence", "broker": 1}]}))
    r = _run("--kafka", "4.4.0", "--mutant", "unfence-adds-to-isr", str(scenario), "--out", str(tmp_path))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "DIVERGES from a real Kafka 4.4.0 cluster" in r.stdout
    assert "shrunk from 3 to 2 steps" in r.stdout
    assert "step 2 (unfence broker=1)" in r.stdout and "isr: model [2, 3, 1], Kafka [2, 3]" in r.stdout
    scenario = json.loads(next(tmp_path.glob("cluster-conform-*/divergence.json")).read_text())
    assert [s["op"] for s in scenario["steps"] if "op" in s] == ["fence", "unfence"]


def test_a_scenario_the_cluster_cannot_take_is_not_drivable(tmp_path):
    """F1 as first written restarts b2 before its fence, which a real controller never lets happen."""
    r = _run("--kafka", "4.4.0", str(FINDINGS / "min-isr-change-then-last-known-leader-elected-uncleanly.json"),
             "--out", str(tmp_path))
    assert r.returncode == 2 and r.stdout == ""
    assert "not drivable on a real cluster: step 7 (restart broker=2)" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_cluster_that_fails_to_start_is_one_line_and_leaves_nothing(tmp_path):
    r = _run("--kafka", "4.4.0", str(F3), "--out", str(tmp_path),
             env={"KRAFT_VERIFY_CLUSTER_JAVA_OPTS": "-XX:MaxHeapSize=1k"})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "ERROR" in r.stdout and "exit 2" not in r.stdout
    summary = json.loads(next(tmp_path.glob("cluster-conform-*/summary.json")).read_text())
    assert summary["exit_code"] == 2 and summary["details"]["error"]


# CI sends SIGTERM (one handler takes both; tests/verifier/cli/test_interrupts.py has Ctrl-C locally)
@pytest.mark.parametrize("sig", [pytest.param(signal.SIGINT, marks=pytest.mark.nightly), signal.SIGTERM])
def test_a_signal_mid_run_is_exit_3_with_a_report_and_nothing_left(tmp_path, sig):
    proc = subprocess.Popen([sys.executable, "-m", "verifier.cli", "cluster-conform", "--kafka", "4.4.0", str(F3),
                             "--out", str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 120
    while not any(True for _ in Path("/tmp").glob("kraft-verify-cluster-*/b3/stdout.log")):
        assert time.monotonic() < deadline and proc.poll() is None, "the cluster never started"
        time.sleep(0.2)
    time.sleep(8)                                  # the brokers run; the case is under way
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, out + err
    summary = json.loads(next(tmp_path.glob("cluster-conform-*/summary.json")).read_text())
    assert summary["exit_code"] == 3 and f"interrupted by {sig.name}" in summary["stop_reason"]


def test_jars_that_cannot_be_fetched_are_one_line(tmp_path):
    """No cached jars and a Maven mirror nobody answers: exit 2 saying so, never a pass or a skip."""
    import shutil
    module = tmp_path / "cluster"
    shutil.copytree(ROOT / "oracle" / "cluster", module, ignore=shutil.ignore_patterns("target"))
    settings = tmp_path / "settings.xml"
    settings.write_text("<settings><mirrors><mirror><id>nowhere</id><mirrorOf>*</mirrorOf>"
                        "<url>http://127.0.0.1:9/maven2</url></mirror></mirrors></settings>")
    r = _run("--kafka", "4.4.0", str(F3), env={"KRAFT_VERIFY_CLUSTER_MODULE": str(module),
                                              "KRAFT_VERIFY_MAVEN_ARGS": f"-s {settings} "
                                                                         f"-Dmaven.repo.local={tmp_path / 'm2'}"})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "cannot reach Maven Central" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_missing_iptables_is_one_line(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("java", "setpriv", "mvn"):
        found = subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip()
        os.symlink(found, bin_dir / tool)
    r = _run("--kafka", "4.4.0", str(F3), "--out", str(tmp_path), env={"PATH": str(bin_dir)})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "needs iptables" in (r.stdout + r.stderr)


def test_a_broker_killed_by_someone_else_is_one_line_and_exit_2(tmp_path):
    """A JVM that dies under the run is the cluster breaking, not a divergence of the model."""
    proc = subprocess.Popen([sys.executable, "-m", "verifier.cli", "cluster-conform", "--kafka", "4.4.0", str(F3),
                             "--out", str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 120
    while not list(Path("/tmp").glob("kraft-verify-cluster-*/b2/data/kv-0")):   # the topic exists
        assert time.monotonic() < deadline and proc.poll() is None, "the cluster never started"
        time.sleep(0.2)
    (pid,) = subprocess.run(["pgrep", "-f", "kafka.Kafka .*b2/server.properties"], capture_output=True,
                            text=True).stdout.split()
    os.kill(int(pid), signal.SIGKILL)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 2, out + err
    assert "broker 2 died" in out


def test_a_deposed_leader_takes_a_produce_at_its_old_epoch_as_the_model_says(tmp_path):
    """Metadata that lags (docs/protocol.md): the model's hold_metadata cuts b1 off from the
    controller, its session lapses and b2 leads at epoch 1; b1, deposed, still appends r1 at
    epoch 0 for a producer whose metadata names it; r2 to b2 is acknowledged; the heal lets b1
    back and its fetch truncates r1. Every step agrees with a real 4.4.0 cluster: nothing
    acknowledged is lost, r1 never was acknowledged."""
    r = _run("--kafka", "4.4.0", str(LAG), "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    (case,) = _details(tmp_path)["cases"]
    assert case["divergence"] is None and case["not_drivable"] is None
    assert case["config"]["bounds"]["metadata_lag"] == 1        # the file's own bound, not the command line's 0
    steps = {s["step"]: s for s in case["steps"]}
    assert steps["stale_produce broker=1"]["brokers"]["b1"]["log"] == "[e0:r1]"
    assert steps["stale_produce broker=1"]["partition"]["leader"] == "b2"
    assert steps["fetch broker=1"]["brokers"]["b1"]["log"] == "[e1:r2]"
    assert case["acknowledged_kept"] == ["r2"] and case["acknowledged_lost"] == []
    # the file's steps a cluster takes on its own (b1's unfence after the heal, the HWM advance)
    # may come before the harness drives them, in either order, as heartbeats and fetches fall;
    # no other step of the file may
    on_its_own = {f"{x} (the cluster took it on its own)" for x in ("unfence broker=1", "advance_hwm")}
    assert set(case["skipped"]) <= on_its_own, case["skipped"]


def test_a_file_with_rules_the_release_lacks_is_not_applicable(tmp_path):
    """As conform: a file setting the KIP text's rule is one line and exit 2, before any cluster."""
    r = _run("--kafka", "4.4.0", str(ROOT / "specs/scenarios/kafka-pcbt-elr-can-be-elected-kip-mode.json"),
             "--out", str(tmp_path))
    assert r.returncode == 2 and "not applicable to Kafka 4.4.0" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_walk_on_two_partitions_agrees_with_a_real_4_4_0_cluster(tmp_path):
    """Two partitions on the brokers they share (issue 59): a seeded walk of the lifted model,
    each partition's steps acted out on its own partition, agrees with a real 4.4.0 cluster step
    by step; a broker's event changes both partitions in one batch of the log, and a fetch in one
    partition lets the follower fetch the other from the leader the harness opened it to, each
    found as the model's steps (explain.py)."""
    r = _run("--kafka", "4.4.0", "--partitions", "2", "--walks", "1", "--depth", "12", "--seed", "1",
             "--shrink", "0", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    (case,) = _details(tmp_path)["cases"]
    assert case["divergence"] is None and case["partitions"] == 2 and len(case["steps"]) >= 10
    names = [s["step"] for s in case["steps"]]
    assert any("(partition 0)" in n for n in names) and any("(partition 1)" in n for n in names), names
    # a fetch driven in one partition, the other partition's fetch of the same follower taken on its own
    assert any(s["step"].startswith("fetch broker=") and
               any(x.startswith(s["step"].split(" (")[0]) and x != s["step"] for x in s["taken_by_the_cluster"])
               for s in case["steps"]), names
    # a broker's event: one batch that changes both partitions
    assert any(batch.count("PartitionChangeRecord") == 2 for s in case["steps"] for batch in s["kafka_records"])
    assert all(x.startswith(("p0/", "p1/")) for x in case["acknowledged_kept"] + case["acknowledged_lost"])
