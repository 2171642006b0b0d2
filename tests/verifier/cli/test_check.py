"""`kraft-verify check` and `kraft-verify mutants` as a CI job sees them: exit codes,
the files under reports/<run-id>/, JUnit, one-line input errors."""
import json
import re
import xml.etree.ElementTree as ET

import pytest

from specs.catalogue import MUTANTS

SMALL = ["--bound", "isr_shrinks=0", "--bound", "lossy_crashes=0"]


def run_dir(tmp_path):
    dirs = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_violation_exits_1_and_writes_a_replayable_counterexample(cli, tmp_path):
    junit = tmp_path / "junit.xml"
    out = tmp_path / "out"
    r = cli("check", "--preset", "pre-kip-966", "--stop-at-first", "--out", str(out), "--junit", str(junit))
    assert r.returncode == 1, r.stdout + r.stderr
    run = run_dir(out)
    assert {p.name for p in run.iterdir()} == {"summary.json", "report.md", "report.html", "counterexample.json",
                                               "counterexample.itf.json",
                                               "counterexample-LeaderCandidateCompleteness.json"}
    summary = json.loads((run / "summary.json").read_text())
    assert summary["result"] == "violation" and summary["exit_code"] == 1
    assert summary["counterexample"]["length"] == 6
    assert summary["violated"] == ["LeaderCandidateCompleteness"]
    assert summary["schema_version"] == 1
    row = next(i for i in summary["invariants"] if i["name"] == "LeaderCandidateCompleteness")
    assert row["counterexample"]["scenario"] == "counterexample-LeaderCandidateCompleteness.json"
    assert re.search(r"restart broker=\d", (run / "report.md").read_text())     # the crashed broker's
    itf = json.loads((run / "counterexample.itf.json").read_text())
    assert len(itf["states"]) == 7
    suite = ET.parse(junit).getroot().find("testsuite")
    assert int(suite.get("failures")) == 1
    replay = cli("replay", str(run / "counterexample.json"))
    assert replay.returncode == 0 and "reproduces LeaderCandidateCompleteness" in replay.stdout


def test_by_default_every_violated_invariant_gets_its_shortest_replayable_trace(cli, tmp_path):
    junit = tmp_path.parent / (tmp_path.name + "-junit.xml")
    r = cli("check", "--preset", "pre-kip-966", "--bound", "isr_shrinks=1", "--out", str(tmp_path), "-q",
            "--junit", str(junit))
    assert r.returncode == 1
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["NoCommittedRecordLostGlobally"].find("failure") is not None
    # the search ran to the end, so the properties it did not break hold: passes, not errors
    assert len(cases["LeaderInIsr"]) == 0 and len(cases["Deadlock"]) == 0
    assert "also violated: ConsumerHwmNeverBackward in 7 steps" in r.stdout
    assert "also violated: NoCommittedRecordLostGlobally in 10 steps" in r.stdout
    run = run_dir(tmp_path)
    names = {p.name for p in run.glob("counterexample-*.json")}
    assert {"counterexample-ConsumerHwmNeverBackward.json",
            "counterexample-NoCommittedRecordLostGlobally.json"} <= names
    # every file in one replay (it takes several; exit 0 only if each reproduces), named from the
    # run's directory so that each file's line stays whole
    files = sorted(p.name for p in run.glob("counterexample*.json") if not p.name.endswith(".itf.json"))
    replay = cli("replay", *files, cwd=run)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    lines = {line.split(":")[0]: line for line in replay.stdout.splitlines() if line.startswith("PASS ")}
    assert len(files) > 2 and all("reproduces" in lines.get(f"PASS {name}", "") for name in files), replay.stdout
    # each JUnit failure carries ITS OWN length, story and replay path, as summary.json has them
    summary = json.loads((run / "summary.json").read_text())
    lengths = set()
    for name, cex in summary["counterexamples"].items():
        failure = cases[name].find("failure")
        assert failure.get("message") == f"{name} violated in {cex['length']} steps"
        assert f"why {name} fails: " in failure.text and f"kraft-verify replay {run}/{cex['scenario']}" in failure.text
        assert (run / cex["scenario"]).exists()
        lengths.add(cex["length"])
    assert len(lengths) >= 2
    story = summary["counterexamples"]["NoCommittedRecordLostGlobally"]["why"]["NoCommittedRecordLostGlobally"]
    assert "was acknowledged at step" in story and "no replica holds it" in story


def test_complete_run_exits_0_with_summary_coverage_and_junit(cli, tmp_path):
    junit = tmp_path / "junit.xml"
    out = tmp_path / "out"
    graph = tmp_path / "g.graphml"
    r = cli("check", *SMALL, "--out", str(out), "--junit", str(junit), "--dump-graph", str(graph))
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads((run_dir(out) / "summary.json").read_text())
    assert summary["result"] == "ok"
    assert all(row["status"] == "holds" for row in summary["invariants"])
    assert summary["counts"]["distinct_states"] == sum(summary["counts"]["states_per_level"])
    assert summary["fingerprint"]["bits"] == 128 and summary["fingerprint"]["collision_probability"] < 1e-20
    coverage = {row["action"]: row for row in summary["coverage"]}
    assert coverage["crash_lossy"]["status"] == "off by config"
    assert coverage["produce"]["status"] == "ok"
    suite = ET.parse(junit).getroot().find("testsuite")
    assert int(suite.get("failures")) == 0 and int(suite.get("errors")) == 0
    import networkx as nx
    g = nx.read_graphml(graph)
    assert g.number_of_nodes() == summary["counts"]["distinct_states"]


def test_a_run_cut_short_exits_3_and_is_never_green(cli, tmp_path):
    junit = tmp_path / "junit.xml"
    r = cli("check", "--max-states", "300", "--out", str(tmp_path / "out"), "--junit", str(junit))
    assert r.returncode == 3 and "STOPPED" in r.stdout
    summary = json.loads((run_dir(tmp_path / "out") / "summary.json").read_text())
    assert summary["result"] == "stopped"
    assert all(row["status"] == "not checked to completion" for row in summary["invariants"])
    suite = ET.parse(junit).getroot().find("testsuite")
    assert int(suite.get("errors")) > 0


def test_simulation_is_seeded_and_finds_the_old_bug(cli, tmp_path):
    runs = []
    for n in range(2):
        out = tmp_path / str(n)
        r = cli("check", "--preset", "pre-kip-966", "--simulate", "3000", "--depth", "30", "--seed", "5",
                "--out", str(out), "-q")
        assert r.returncode == 1, r.stdout + r.stderr
        runs.append(json.loads((run_dir(out) / "counterexample.json").read_text())["steps"])
    assert runs[0] == runs[1]
    r = cli("check", *SMALL, "--simulate", "20", "--depth", "15", "--out", str(tmp_path / "ok"), "-q")
    assert r.returncode == 0 and "not a proof" in r.stdout


@pytest.mark.parametrize("args,message", [
    (["--preset", "no-such-preset"], "unknown preset"),
    (["--mutant", "no-such-mutant"], "unknown mutant"),
    (["--flag", "no_such_flag"], "unknown protocol flag"),
    (["--bound", "records=x"], "not an integer"),
    (["--invariant", "NoSuchInvariant"], "unknown invariant"),
    (["--max-states", "-5"], "max-states must be a positive finite number"),
    (["--time-budget", "nan"], "time-budget must be a positive finite number"),
    (["--brokers", "0"], "--brokers must be between 1 and 7"),
    (["--brokers", "3", "--replicas", "1,2"], "give one"),
    (["--replicas=-1,2"], "broker ids are >= 0"),
    (["--bound", "record=2"], "did you mean records?"),
    (["--dump-graph", "g.png"], "must end in .dot"),
    (["--config", "/no/such.toml"], "no such file"),
    (["--simulate", "0"], "--simulate N"),
    (["--flag", "any_candidate_elections", "--replicas", "3,1,2"], "id order"),
])
def test_bad_input_is_one_line_and_exit_2(cli, tmp_path, args, message):
    r = cli("check", *args, "--out", str(tmp_path))
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_toml_config_with_bounds_and_check_options(cli, tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('preset = "pre-kip-903"\n[bounds]\nisr_shrinks = 0\n[check]\nmax_depth = 4\n')
    r = cli("check", "--config", str(config), "--out", str(tmp_path / "out"), "-q")
    assert r.returncode == 3 and "max depth 4" in r.stdout
    config.write_text('[check]\nmax_dept = 4\n')
    r = cli("check", "--config", str(config), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "check.max_dept" in r.stderr
    config.write_text('[bounds\n')
    r = cli("check", "--config", str(config), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "c.toml" in r.stderr


SAFETY_MUTANTS = [name for name, m in MUTANTS.items() if not m.liveness]


@pytest.mark.parametrize("names", [
    pytest.param(SAFETY_MUTANTS, id="safety"),
    # the liveness mutants' whole graphs at the default bounds take two minutes: nightly. CI
    # kills each of them with the liveness engine on the same rules (tests/verifier/engines/test_liveness.py,
    # KILLERS), and the gate's liveness path below
    pytest.param(list(MUTANTS), id="all", marks=pytest.mark.nightly)])
def test_every_mutant_is_killed_at_the_default_bounds(cli, tmp_path, names):
    only = [a for n in names for a in ("--only", n)] if names != list(MUTANTS) else []
    r = cli("mutants", *only, "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(next(tmp_path.glob("*/summary.json")).read_text())
    assert report["engine"] == "kernel-mutants" and report["schema_version"] == 1
    assert [row["mutant"] for row in report["mutants"]] == names
    assert all(row["status"] == "killed" and row["killed_by"] and row["length"] for row in report["mutants"])
    assert {row["engine"] for row in report["mutants"]} <= {"kernel", "liveness"}      # each row says which
    assert all(row["engine"] == ("liveness" if MUTANTS[row["mutant"]].liveness else "kernel")
               for row in report["mutants"])
    assert f"{len(names)}/{len(names)} killed" in r.stdout


@pytest.mark.parametrize("argv", [("mutants", "--no-symmetry"), ("check", "--mutants", "--no-symmetry")])
def test_the_gate_has_no_symmetry_to_switch_off(cli, tmp_path, argv):
    """The gate runs without symmetry (a mutant's verdict and shortest counterexample are the
    same without it): --no-symmetry would be ignored, so it is refused in one line."""
    r = cli(*argv, "--only", "elr-not-cleared", "--out", str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "--no-symmetry" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_the_gate_sends_a_liveness_mutant_to_the_liveness_engine(cli, tmp_path):
    r = cli("mutants", "--only", "unfence-skips-election", "--bound", "isr_shrinks=1", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    (row,) = json.loads(next(tmp_path.glob("*/summary.json")).read_text())["mutants"]
    assert row["status"] == "killed" and "CompleteCandidateEventuallyLeads" in row["killed_by"]


def test_a_surviving_mutant_fails_the_gate(cli, tmp_path):
    # with no produce budget there is no data to lose: the HWM mutant cannot be seen
    r = cli("mutants", "--only", "hwm-ignores-min-isr", "--bound", "records=0", "--bound", "isr_shrinks=0",
            "--out", str(tmp_path))
    assert r.returncode == 1 and "SURVIVED" in r.stdout


def test_compare_symmetry_reports_the_states_saved(cli, tmp_path):
    r = cli("check", *SMALL, "--flag", "any_candidate_elections", "--compare-symmetry", "--out", str(tmp_path), "-q")
    assert r.returncode == 0, r.stdout + r.stderr
    run = run_dir(tmp_path)
    sym = json.loads((run / "summary.json").read_text())["symmetry"]
    assert sym["enabled"] and sym["same_verdict"] is True
    assert sym["states_saved"] > 0
    assert sym["states_saved"] + json.loads((run / "summary.json").read_text())["counts"]["distinct_states"] == \
        sym["states_without_symmetry"]
    assert f"saved {sym['states_saved']:,} of" in (run / "report.md").read_text()


def test_the_gate_writes_one_summary_and_a_junit_case_per_mutant(cli, tmp_path):
    junit = tmp_path / "gate.xml"
    r = cli("check", "--mutants", "--only", "elr-not-cleared", "--only", "follower-no-truncate",
            "--out", str(tmp_path / "out"), "--junit", str(junit))
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads(next((tmp_path / "out").glob("*/summary.json")).read_text())
    assert [(m["mutant"], m["status"], m["length"]) for m in summary["mutants"]] == [
        ("elr-not-cleared", "killed", 1), ("follower-no-truncate", "killed", 3)]
    xml = junit.read_text()
    assert 'tests="2"' in xml and 'failures="0"' in xml and "killed by ElrOnlyBelowMinIsr in 1 steps" in xml


def test_prove_refuses_a_mutant_it_cannot_see_and_the_gate_says_so(cli, tmp_path):
    r = cli("prove", "--mutant", "leader-epoch-not-bumped", "--max-brokers", "2", "--out", str(tmp_path))
    assert r.returncode == 2 and "rule leader_change_bumps_leader_epoch=False" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_each_junit_failure_of_a_multi_invariant_violation_has_its_own_trace(cli, tmp_path):
    """elr-not-cleared breaks five properties, in 1, 5, 8, 8 and 9 steps: each JUnit failure
    says its own length and carries its own table, story and replay file."""
    junit = tmp_path / "j.xml"
    r = cli("check", "--mutant", "elr-not-cleared", "--out", str(tmp_path / "r"), "-q", "--junit", str(junit))
    assert r.returncode == 1
    run = run_dir(tmp_path / "r")
    summary = json.loads((run / "summary.json").read_text())
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    lengths = {}
    for name, cex in summary["counterexamples"].items():
        failure = cases[name].find("failure")
        assert failure.get("message") == f"{name} violated in {cex['length']} steps"
        # a trace may violate several properties at once (found at the same state): it names them all
        assert re.search(rf"counterexample \({cex['length']} steps\), violates [^\n]*\b{name}\b", failure.text)
        assert failure.text.count("\n") >= cex["length"] + 2          # its own table, one row per step
        assert f"{run}/counterexample-{name}.json" in failure.text and f"why {name} fails" in failure.text
        lengths[name] = cex["length"]
    assert sorted(lengths.values()) == [1, 5, 8, 8, 9]


def test_a_repeated_invariant_or_mutant_is_checked_and_reported_once(cli, tmp_path):
    r = cli("check", "--brokers", "1", "--max-states", "50", "-q", "--invariant", "LeaderInIsr",
            "--invariant", "LeaderInIsr", "--out", str(tmp_path / "a"), "--junit", str(tmp_path / "j.xml"))
    assert r.returncode == 3, r.stderr
    summary = json.loads((run_dir(tmp_path / "a") / "summary.json").read_text())
    assert [i["name"] for i in summary["invariants"]] == ["LeaderInIsr"]
    assert len(list(ET.parse(tmp_path / "j.xml").getroot().iter("testcase"))) == 2     # it and Deadlock
    r = cli("mutants", "--brokers", "1", "--only", "elr-not-cleared", "--only", "elr-not-cleared",
            "--out", str(tmp_path / "b"))
    summary = json.loads((run_dir(tmp_path / "b") / "summary.json").read_text())
    assert [row["mutant"] for row in summary["mutants"]] == ["elr-not-cleared"], r.stderr
