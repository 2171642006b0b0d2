"""`kraft-verify availability`: seeded fault schedules per variant (verifier/studies/availability.py).
What must hold by the protocol and by the definitions, and the command's files and exit codes."""
import json
import os
import random
import signal
import subprocess
import sys

import pytest

import specs
from tests.conftest import ROOT
from verifier.studies import availability as A
from verifier.cli import main

FAULTS, HEAL = 20, 40


def measure(variants, runs, seed=0):
    m = A.Measurement(variants, runs, seed, FAULTS, HEAL, A.DEFAULT_BOUNDS)
    m.run()
    return m.report("test")


@pytest.fixture(scope="module")
def family():
    """One measurement shared by the protocol tests (every variant, 120 runs: about 2 s)."""
    return {v["name"]: v for v in measure(list(A.VARIANTS), 120)["variants"]}


def test_same_seed_same_json_and_another_seed_differs():
    one = json.dumps(measure(["kafka", "pre-kip-966"], 25, seed=7))
    assert one == json.dumps(measure(["kafka", "pre-kip-966"], 25, seed=7))
    assert one != json.dumps(measure(["kafka", "pre-kip-966"], 25, seed=8))


def test_every_run_obeys_the_definitions(family):
    for v in family.values():
        s, runs = v["summary"], v["runs"]
        assert [r["run"] for r in runs] == list(range(120)) and s["runs"] == 120
        for r in runs:
            assert r["steps"] == r["fault_phase"] + HEAL and r["fault_phase"] <= FAULTS
            assert 0 <= r["leaderless"] <= r["steps"]
            assert r["acked"] >= 1, "the warm-up ends once a record is acknowledged"
            if r["faults"] == 0:
                assert r["leaderless"] == 0 and r["last_fault"] is None and r["recover"] is None
            else:
                assert 1 <= r["last_fault"] <= r["fault_phase"]
                assert r["outage"] == (r["recover"] != 0), "an outage is a run leaderless right after its last fault"
            assert not r["stuck"] or r["recover"] is None
        rec = s["recovery"]
        assert sum(rec["histogram"].values()) == rec["outages"] == rec["recovered"] + rec["never"]
        assert rec["never"] == sum(1 for r in runs if r["faults"] and r["recover"] is None)
        assert s["data_loss_runs"] == sum(1 for r in runs if r["lost"])
        if rec["recovered"]:
            assert 1 <= rec["min"] <= rec["median"] <= rec["p90"] <= rec["max"]


def test_schedules_are_heavy_enough_to_matter(family):
    """The default bounds give leaderless episodes, unclean elections and lost data: a
    measurement where nothing happens would compare nothing."""
    for v in family.values():
        assert v["summary"]["runs_with_faults"] == 120 and v["summary"]["recovery"]["outages"] > 30
    assert family["pre-kip-966+unclean_leader_election"]["summary"]["data_loss_runs"] > 0
    assert family["kafka+unclean_leader_election"]["summary"]["runs_with_unclean_election"] > 0


def test_kafka_loses_acknowledged_records_within_tolerance_by_its_own_unclean_election(family):
    """KIP-966's claim (fewer lossy crashes than min ISR and no unclean election an operator
    chose lose nothing) holds where an operator's choice or a recovery round elects a leader of
    an empty ISR and ELR; Kafka's "ELR only" mode elects its last known leader on its own
    instead, and that loses acknowledged records within the tolerance (FINDINGS.md F1, F6).
    Without ELR the last replica standing loses data within it too."""
    for name in ("kafka+unclean_leader_election", "kafka+recovery=aggressive", "kafka+recovery=balanced",
                 "kafka+recovery=none"):
        assert family[name]["summary"]["data_loss_runs_within_tolerance"] == 0, name
    assert family["kafka"]["summary"]["data_loss_runs_within_tolerance"] > 0
    assert family["pre-kip-966"]["summary"]["data_loss_runs_within_tolerance"] > 0
    # one lossy crash at most (< min ISR 2): every loss under ELR comes with an unclean election
    for r in family["kafka"]["runs"]:
        assert not r["lost"] or r["unclean_elections"] > 0


def test_strategy_none_never_does_better_than_kafka_and_the_others_recover(family):
    """Strategy None adds no way to elect a leader: at most Kafka's unclean elections and data
    loss, at least its leaderless time; a run it leaves leaderless has no healing step left
    (only an operator can elect). The other variants always recover within the run."""
    none, kafka = family["kafka+recovery=none"], family["kafka"]["summary"]
    s, rec = none["summary"], none["summary"]["recovery"]
    assert s["runs_with_unclean_election"] <= kafka["runs_with_unclean_election"]
    assert s["data_loss_runs"] <= kafka["data_loss_runs"]
    assert s["leaderless_fraction"] >= kafka["leaderless_fraction"]
    assert rec["never"] == rec["never_stuck"]
    for r in none["runs"]:
        if r["recover"] is None and r["faults"]:
            assert r["leaderless"] >= HEAL, "a run that never recovers is leaderless through the healing phase"
    for name in ("kafka", "kafka+unclean_leader_election", "kafka+recovery=aggressive", "pre-kip-966"):
        assert family[name]["summary"]["recovery"]["never"] == 0, name


def test_strategy_none_waits_for_an_operator_and_loses_nothing_and_balanced_loses_least(family):
    """With a strategy, rounds replace Kafka's last-known-leader election: None never elects
    uncleanly, so some outages wait for an operator and no acknowledged record is lost; Balanced
    waits for the last known leader and loses less than Kafka's own fallback."""
    none = family["kafka+recovery=none"]["summary"]
    assert none["recovery"]["never"] > 0 and none["runs_with_unclean_election"] == 0 and none["data_loss_runs"] == 0
    balanced, kafka = family["kafka+recovery=balanced"]["summary"], family["kafka"]["summary"]
    assert balanced["data_loss_runs"] < kafka["data_loss_runs"]


def test_a_stopped_brokers_session_timeout_is_healing_not_a_fault():
    model = specs.Model(A.variant_config(A.VARIANTS["kafka"], A.DEFAULT_BOUNDS), symmetry=False)
    s = model.init_states()[0]
    crashed = model.step(s, ("crash", 2))
    assert model.is_fault(s, ("crash", 2)) and model.is_fault(crashed, ("fence", 3))
    assert not model.is_fault(crashed, ("fence", 2)) and model.heals(crashed, ("fence", 2))
    assert not model.heals(s, ("shrink_isr", 2)) and not model.heals(s, ("elect", "preferred", None))
    assert not model.live_leader(model.step(s, ("crash", 1))), "a crashed leader serves nobody"


def test_the_command_writes_json_markdown_and_a_self_contained_page(tmp_path, capsys):
    code = main(["availability", "--runs", "6", "--variant", "kafka", "--variant", "kafka+recovery=none",
                 "--heal-steps", "30", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    (run,) = tmp_path.iterdir()
    assert {p.name for p in run.iterdir()} == {"availability.json", "report.md", "availability.html"}
    rep = json.loads((run / "availability.json").read_text())
    command = "kraft-verify availability --runs 6 --heal-steps 30 --variant kafka --variant kafka+recovery=none"
    assert rep["command"] == command and rep["partial"] is False
    assert [v["name"] for v in rep["variants"]] == ["kafka", "kafka+recovery=none"]
    assert "kafka+recovery=none" in out and "never (stuck)" in out
    md = (run / "report.md").read_text()
    assert command in md and "| kafka |" in md and "PARTIAL" not in md
    page = (run / "availability.html").read_text()
    assert page.count("<svg") == 3 and "kafka+recovery=none" in page
    assert "http://" not in page and "https://" not in page and "<script" not in page and " src=" not in page


@pytest.mark.parametrize("argv, message", [
    (["--runs", "0"], "--runs must be >= 1"),
    (["--heal-steps", "-1"], "--heal-steps must be >= 0"),
    (["--fault-steps", "-2"], "--fault-steps must be >= 0"),
    (["--variant", "kafka+uncelan"], "unknown variant"),
    (["--bound", "fences=x"], "--bound takes NAME=N"),
    (["--bound", "fence=1"], "unknown bound"),
    (["--min-isr", "0"], "min_isr"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, tmp_path, capsys):
    assert main(["availability", "--out", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not any(tmp_path.iterdir()), "no report directory for bad input"


def test_an_interrupt_exits_3_with_a_report_marked_partial(tmp_path, capsys, monkeypatch):
    real, calls = A.run_once, []

    def interrupted(*args):
        calls.append(1)
        if len(calls) == 9:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(A, "run_once", interrupted)
    assert main(["availability", "--runs", "5", "--variant", "kafka", "--variant", "pre-kip-966",
                 "--out", str(tmp_path)]) == 3
    (run,) = tmp_path.iterdir()
    rep = json.loads((run / "availability.json").read_text())
    assert rep["partial"] is True
    assert [(v["name"], v["complete"], v["summary"]["runs"]) for v in rep["variants"]] == [
        ("kafka", True, 5), ("pre-kip-966", False, 3)]
    assert "PARTIAL" in (run / "report.md").read_text() and "PARTIAL" in (run / "availability.html").read_text()
    assert "PARTIAL" in capsys.readouterr().out


def test_sigint_to_the_process_exits_3(tmp_path):
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="200")
    proc = subprocess.Popen([sys.executable, "-m", "verifier.cli", "availability", "--runs", "100000", "--variant",
                             "kafka", "--out", str(tmp_path)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("kraft-verify availability:")
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 3, out
    (run,) = tmp_path.iterdir()
    assert json.loads((run / "availability.json").read_text())["partial"] is True


def test_runs_are_seeded_per_index():
    """Run i of seed S is the same walk whatever the number of runs (a report can be extended)."""
    model = specs.Model(A.variant_config(A.VARIANTS["kafka"], A.DEFAULT_BOUNDS), symmetry=False)
    short = measure(["kafka"], 4, seed=3)["variants"][0]["runs"]
    assert short[3] == dict(run=3, **A.run_once(model, random.Random("3/3"), FAULTS, HEAL))
