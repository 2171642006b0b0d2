"""`kraft-verify check --partitions N` (issue 59): several partitions of one topic searched by
the compiled search (the interpreted one where it cannot), every property judged in each partition, the counterexample and the
reports naming the partition; one partition is today's check; every other command, and what
check cannot do with several partitions yet, refuses in one line (exit 2)."""
import json

import pytest

TWO = ["--replicas", "1,2", "--min-isr", "1", "--bound", "records=1", "--bound", "fences=1", "--bound",
       "lossy_crashes=1", "--bound", "isr_shrinks=0", "--bound", "max_leader_epoch=2", "--bound",
       "max_partition_epoch=3"]


def _run(tmp_path):
    (run,) = [p for p in (tmp_path / "out").iterdir() if p.is_dir()]
    return run, json.loads((run / "summary.json").read_text())


def test_two_partitions_catch_a_mutant_in_one_partition_and_the_reports_say_which(cli, tmp_path):
    r = cli("check", "--partitions", "2", *TWO, "--mutant", "unfence-adds-to-isr", "--continue",
            "--out", str(tmp_path / "out"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "engine: kernel (the model compiled), 1 thread" in r.stdout and "+partitions=2 " in r.stdout
    assert "produce (partition 0)" in r.stdout and "p0.acked=[1]" in r.stdout
    assert "NoLostReplicaInIsr fails after step 4 (unfence broker=2) in partition 0 (" in r.stdout
    run, summary = _run(tmp_path)
    assert summary["config"]["partitions"] == 2 and "partitions=2" in summary["run_id"]
    assert summary["counts"]["distinct_states"] == 912           # the identical partitions sorted
    lengths = {i["name"]: i["counterexample"]["length"] for i in summary["invariants"] if i.get("counterexample")}
    assert lengths == {"LeaderCandidateCompleteness": 4, "NoLostReplicaInIsr": 4, "ElectedLeaderWasCandidate": 5}
    scenario = json.loads((run / "counterexample.json").read_text())
    assert scenario["config"]["partitions"] == 2 and len(scenario["initial"]["partitions"]) == 2
    assert scenario["steps"][0] == {"op": "produce", "partition": 0}
    assert scenario["steps"][1] == {"op": "fence", "broker": 2}
    itf = json.loads((run / "counterexample.itf.json").read_text())
    assert itf["vars"][:2] == ["p0", "p1"] and set(itf["states"][0]) >= {"p0", "p1"}
    again = cli("replay", str(run / "counterexample.json"))
    assert again.returncode == 2 and "a scenario runs one partition yet" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1


def test_the_symmetry_over_partitions_keeps_the_verdicts(cli, tmp_path):
    r = cli("check", "--partitions", "2", *TWO, "--mutant", "unfence-adds-to-isr", "--continue",
            "--compare-symmetry", "--out", str(tmp_path / "out"))
    assert r.returncode == 1, r.stdout + r.stderr
    _, summary = _run(tmp_path)
    assert summary["symmetry"]["same_verdict"] is True
    assert summary["symmetry"]["states_without_symmetry"] > summary["counts"]["distinct_states"]


def test_one_partition_is_todays_check(cli, tmp_path):
    counts = []
    for extra, where in ((["--partitions", "1"], "a"), ([], "b")):
        r = cli("check", *TWO, *extra, "--out", str(tmp_path / where))
        assert r.returncode == 0, r.stdout + r.stderr
        assert "engine: kernel" in r.stdout
        (run,) = [p for p in (tmp_path / where).iterdir() if p.is_dir()]
        c = json.loads((run / "summary.json").read_text())["counts"]
        counts.append((c["distinct_states"], c["transitions"], c["states_per_level"]))
    assert counts[0] == counts[1]


@pytest.mark.parametrize("args, says", [
    (["check", "--partitions", "2", "--simulate", "3"], "several partitions are searched only by"),
    (["check", "--partitions", "2", "--visited", "disk"], "--visited: several partitions are searched on one thread"),
    (["check", "--partitions", "2", "--workers", "2"], "--workers: several partitions are searched on one thread"),
    (["check", "--partitions", "2", "--engine", "python", "--workers", "2"],
     "the interpreted Python search runs in one process"),
    (["check", "--partitions", "2", "--checkpoint-dir", "CK"], "--checkpoint-dir: several partitions are searched"),
    (["check", "--partitions", "2", "--dump-graph", "G.dot"], "--dump-graph: several partitions are searched"),
    (["check", "--partitions", "7", "--engine", "kernel"], "the compiled search holds at most 6 partitions"),
    (["check", "--partitions", "2", "--mutants"], "several partitions are searched only by"),
    (["check", "--partitions", "2", "--liveness"], "several partitions are searched only by"),
    (["check", "--partitions", "9"], "--partitions must be between 1 and 8"),
    (["check", "--partitions", "0"], "--partitions must be between 1 and 8"),
])
def test_what_cannot_take_several_partitions_yet_says_so_in_one_line(cli, tmp_path, args, says):
    args = [str(tmp_path / a) if a in ("CK", "G.dot") else a for a in args]
    r = cli(*args, "--out", str(tmp_path / "out"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize("command", [["fuzz"], ["spark-check"], ["check", "--estimate", "1"]])   # conform: its own test
def test_a_config_file_with_partitions_is_refused_by_every_other_command(cli, tmp_path, command):
    toml = tmp_path / "p.toml"
    toml.write_text("partitions = 2\n")
    r = cli(*command, "--config", str(toml))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "partitions = 2: several partitions are searched only by" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_config_file_names_the_partitions_check_searches(cli, tmp_path):
    toml = tmp_path / "p.toml"
    toml.write_text("partitions = 2\nreplicas = [1, 2]\nmin_isr = 1\n[bounds]\nrecords = 1\nfences = 1\n"
                    "lossy_crashes = 1\nisr_shrinks = 0\nmax_leader_epoch = 2\nmax_partition_epoch = 3\n")
    r = cli("check", "--config", str(toml), "--mutant", "unfence-adds-to-isr", "--continue",
            "--out", str(tmp_path / "out"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert _run(tmp_path)[1]["counts"]["distinct_states"] == 912
    toml.write_text("partitions = \"2\"\n")
    bad = cli("check", "--config", str(toml), "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "'partitions' must be int" in bad.stderr
