"""The conform engine against every release's own controller code (the oracle needs Maven and
Maven Central: a machine without them fails here with one line, it never skips).

- every release agrees with its preset on the scenario files that apply to it and on a seeded
  sample of walks over each of the matrix's bound sets (`make conform` runs the full budgets);
- every finding replays through the real controller of each release its entry names;
- every mutant that changes what the controller does diverges from the newest release;
- a divergence is reported shrunk, as a scenario file, with exit 1; bad input is exit 2."""
from __future__ import annotations

import ast
import json
import re
import shutil

import pytest

from specs import MUTANTS, RELEASES, Model, with_mutant
from tests.conftest import ROOT
from verifier.engines.conform.oracle import Oracle, build
from verifier.engines.conform.run import conform
from verifier.studies.matrix import Row, row_config

CONFORM_SETS = ("default", "config", "min-isr-above-rf", "admin+reassignment")
CI_STEPS = 2000          # walk steps per release and bound set in CI (make conform: 100,000)


@pytest.fixture(scope="module", params=sorted(RELEASES), ids=lambda v: f"kafka-{v}")
def rel(request):
    release = RELEASES[request.param]
    build(release.version, release.api)          # Maven: fails (never skips) when it cannot build
    return release


def test_every_release_agrees_on_the_scenario_files(rel, cli, tmp_path):
    r = cli("conform", "--kafka", rel.version, "--scenarios", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"agrees with Kafka {rel.version}" in r.stdout
    summary = json.loads(next(tmp_path.glob("*/conform.json")).read_text())
    compared = summary["details"]["files"]
    assert len(compared) >= (10 if rel.version.startswith("3.") else 40)
    assert all(f["steps"] > 0 for f in compared)
    for skipped in summary["details"]["not_applicable"]:      # said, never silent
        assert skipped["why"], skipped


@pytest.mark.parametrize("bound_set", CONFORM_SETS)
def test_every_release_agrees_on_seeded_walks(rel, bound_set):
    model = Model(row_config(Row(rel.preset, bound_set)), symmetry=False)
    out = conform(rel.version, rel.api, rel.preset, cases=[], model=model, steps=CI_STEPS, seed=7)
    assert out.divergence is None, (out.divergence.case.labels, out.divergence.diffs)
    assert out.walk_steps >= CI_STEPS and out.stopped is None


# ---------------------------------------------------------------------------- findings

def _findings() -> list[tuple[str, str, str, bool]]:
    """(finding, scenario, release version, reproduces) for every release an entry names."""
    text = (ROOT / "docs" / "FINDINGS.md").read_text()
    out = []
    for block in re.split(r"^### ", text, flags=re.M)[1:]:
        key = block.split(".", 1)[0]
        scenario = re.search(r"- scenario: `([^`]+)`", block).group(1)
        for line, yes in (("reproduces", True), ("does not reproduce", False)):
            m = re.search(rf"^- {line} in Kafka's own controller: (.*)", block, flags=re.M)
            for version in re.findall(r"\b(\d+\.\d+\.\d+)\b", m.group(1)) if m else []:
                out.append((key, scenario, version, yes))
    return out


FINDINGS = _findings()


def test_every_finding_names_the_releases_it_was_replayed_in():
    keys = {k for k, *_ in FINDINGS}
    assert len(keys) >= 5 and {v for *_, v, _ in FINDINGS} == set(RELEASES)


@pytest.mark.parametrize("version", sorted({v for _, _, v, _ in FINDINGS}), ids=lambda v: f"kafka-{v}")
def test_every_finding_replays_through_the_real_controller(version, cli, tmp_path):
    """Kafka's controller goes through the model's states step by step, so where the model
    reaches a finding (its property broken, or its expectations met), Kafka's controller has
    written the same records. One conform run per release takes every finding naming it."""
    from tests.bind import run_file
    named = [(key, scenario, yes) for key, scenario, v, yes in FINDINGS if v == version]
    r = cli("conform", "--kafka", version, *[scenario for _, scenario, _ in named], "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    files = json.loads(next(tmp_path.glob("*/conform.json")).read_text())["details"]["files"]
    assert [f["path"] for f in files] == [scenario for _, scenario, _ in named]
    for (key, scenario, reproduces), compared in zip(named, files):
        replayed = run_file(str(ROOT / scenario), preset=RELEASES[version].preset)
        assert replayed.ok == reproduces, (key, replayed.failure)
        assert compared["steps"] > 0, key
        assert bool(compared["model_violates"]) == bool(reproduces and replayed.trace.violated), (key, compared)
    said = re.findall(r"^  (\S+): \d+ steps.*\n    the model violates \S+ after step \d+ in states Kafka", r.stdout,
                      flags=re.M)
    assert said == [f["path"] for f in files if f["model_violates"]], r.stdout


def test_kafka_4_0_elects_the_fenced_broker_and_4_1_does_not():
    """F4 in Kafka's own code: the oracle's report itself, not only its agreement with the model."""
    from specs import run_operations
    from specs import load_scenario
    path = str(ROOT / "specs/scenarios/findings/kafka-4.0-elects-a-fenced-last-known-leader.json")
    for version, preset, elected in (("4.0.2", "kafka-4.0", True), ("4.1.2", "kafka-4.1", False)):
        model, start, steps, _ = run_operations(load_scenario(path), path, preset=preset)
        ops, before = [], start
        for label, after, _ in steps:
            ops.append(model.kafka_request(before, label, after))
            before = after
        with Oracle(version, RELEASES[version].api) as oracle:
            final = oracle.run(model.kafka_start(start), ops)[-1]
        leader = final["partition"]["leader"]
        assert (leader != -1 and final["brokers"][str(leader)][1]) == elected, final


# ---------------------------------------------------------------------------- mutants

def _controller_rules() -> set[str]:
    """Rules the controller's code reads (specs/controller.py, specs/pipeline.py), outside the
    KIP-966 recovery round, which no release has."""
    names = set()
    for path in (ROOT / "specs/controller.py", ROOT / "specs/pipeline.py"):
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, ast.FunctionDef) and fn.name != "unclean_recovery":
                names |= {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)
                          and isinstance(n.value, ast.Name) and n.value.id == "rules"}
    return names


CONTROLLER_MUTANTS = sorted(m for m, mutant in MUTANTS.items() if set(mutant.changes) & _controller_rules())


def test_the_controller_mutants_are_the_catalogues_controller_rules():
    assert len(CONTROLLER_MUTANTS) >= 13
    assert "hwm-maximal-isr" not in CONTROLLER_MUTANTS and "recovery-never-elects" not in CONTROLLER_MUTANTS
    assert "leader-epoch-not-bumped" in CONTROLLER_MUTANTS and "recovered-never-accepted" in CONTROLLER_MUTANTS


@pytest.mark.parametrize("mutant", CONTROLLER_MUTANTS)
def test_every_controller_mutant_diverges_from_the_newest_release(mutant):
    release = RELEASES["4.4.0"]
    for bound_set in CONFORM_SETS:
        model = Model(with_mutant(row_config(Row(release.preset, bound_set)), mutant), symmetry=False)
        out = conform(release.version, release.api, release.preset, cases=[], model=model, walks=300, seed=1)
        if out.divergence is not None:
            assert out.divergence.step <= 15       # shrunk
            return
    pytest.fail(f"{mutant} agrees with Kafka 4.4.0 over 300 walks of every bound set")


def test_a_divergence_is_exit_1_with_a_shrunk_scenario_that_replays(cli, tmp_path):
    r = cli("conform", "--kafka", "4.4", "--mutant", "unfence-adds-to-isr", "--walks", "50", "--out", str(tmp_path))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "DIVERGES from Kafka 4.4.0" in r.stdout and "isr: model" in r.stdout
    run = next(tmp_path.glob("*/"))
    scenario = json.loads((run / "divergence.json").read_text())
    assert scenario["kind"] == "conform divergence" and "diverges from Kafka 4.4.0" in scenario["notes"]
    assert cli("replay", str(run / "divergence.json")).returncode == 0      # the model's own values
    again = cli("conform", "--kafka", "4.4", str(run / "divergence.json"), "--out", str(tmp_path / "again"))
    assert again.returncode == 1 and "DIVERGES" in again.stdout             # and Kafka's still differ
    summary = json.loads((run / "summary.json").read_text())
    assert summary["result"] == "violation" and summary["exit_code"] == 1


# ---------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("args,message", [
    (["--kafka", "4.5.0"], "not a release conform knows"),
    (["--kafka", "3.8"], "not a release conform knows"),
    (["--kafka", "3.9", "--flag", "elr=true"], "cannot run ELR"),
    (["--kafka", "4.4", "--preset", "kip-966", "--bound", "admin_elections=1"], "designated leader elections"),
    (["--kafka", "4.4", "--preset", "recovery"], "unclean recovery rounds"),
    (["--kafka", "4.4", "--bound-set", "nope"], "--bound-set nope: unknown"),
    (["--kafka", "4.4", "--walks", "-1"], "--walks must be >= 0"),
    (["--kafka", "3.9", "specs/scenarios/kafka-pcbt-elr-can-be-elected.json"],
     "starts with an ELR or a last known ELR, which a cluster without ELR never writes"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, cli):
    r = cli("conform", *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_scenario_with_an_op_no_release_has_says_so(cli, write_json):
    path = write_json("designated.json", {
        "config": {"replicas": [1, 2, 3], "min_isr": 2, "designated_elections": True},
        "initial": {"leader": -1, "isr": [], "fenced": [1, 2]},
        "steps": [{"op": "elect", "type": "designated", "leader": 3}]})
    r = cli("conform", "--kafka", "4.4", "--preset", "kafka-4.4", "--flag", "designated_elections=true", path)
    assert r.returncode == 2 and "step 1 (elect type=designated leader=3)" in r.stderr, r.stderr
    assert "designated leader election" in r.stderr and "in no Kafka release" in r.stderr


def test_a_driver_that_does_not_compile_is_one_line(cli, tmp_path):
    broken = tmp_path / "oracle"
    shutil.copytree(ROOT / "oracle", broken, ignore=shutil.ignore_patterns("target"))
    java = broken / "src/main/java/org/apache/kafka/controller/ManualTime.java"
    java.write_text(java.read_text().replace("final class ManualTime", "final class ManualTime {"))
    r = cli("conform", "--kafka", "4.4", "--walks", "1", env={"KRAFT_VERIFY_ORACLE": str(broken)})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "does not compile against Kafka 4.4.0" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_maven_central_out_of_reach_is_one_line(cli, tmp_path):
    """No cached jars and a mirror nobody answers: the run fails saying so, it never passes."""
    oracle = tmp_path / "oracle"
    shutil.copytree(ROOT / "oracle", oracle, ignore=shutil.ignore_patterns("target"))
    settings = tmp_path / "settings.xml"
    settings.write_text("<settings><mirrors><mirror><id>nowhere</id><mirrorOf>*</mirrorOf>"
                        "<url>http://127.0.0.1:9/maven2</url></mirror></mirrors></settings>")
    env = {"KRAFT_VERIFY_ORACLE": str(oracle),
           "KRAFT_VERIFY_MAVEN_ARGS": f"-s {settings} -Dmaven.repo.local={tmp_path / 'm2'}"}
    r = cli("conform", "--kafka", "4.4", "--walks", "1", env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "cannot reach Maven Central" in r.stderr and len(r.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------------------- what conform leaves to the model

def _oracle_run(version, ops, replicas=(1, 2, 3), min_isr=2):
    from specs import make_config
    model = Model(make_config(RELEASES[version].preset, replicas=list(replicas), min_isr=min_isr), symmetry=False)
    with Oracle(version, RELEASES[version].api) as oracle:
        return oracle.run(model.kafka_start(model.init_states()[0]), ops)


def test_broker_epochs_are_compared_through_the_mapping():
    """docs/protocol.md, "What conform leaves to the model": Kafka's epochs are offsets, the
    model's 100 + id; each is translated back, and a binding that breaks the bijection is said."""
    states = _oracle_run("4.4.0", [{"op": "register", "broker": 2, "previous_epoch": -1, "epoch": 1102,
                                    "clean_detection": True},
                                   {"op": "register", "broker": 3, "previous_epoch": -1, "epoch": 1102,
                                    "clean_detection": True}])
    start, first, second = states
    assert {b: row[0] for b, row in start["brokers"].items()} == {"1": 101, "2": 102, "3": 103}
    assert [row[3] for row in start["brokers"].values()] != [101, 102, 103]        # raw offsets
    assert first["brokers"]["2"][0] == 1102 and "epoch_mapping" not in first
    assert "1102" in second["epoch_mapping"]
    from verifier.engines.conform.compare import diff
    assert any(d.field == "broker epoch mapping" for d in diff(
        {**second, "brokers": {b: r[:3] for b, r in second["brokers"].items()}}, second))


def test_a_restart_comes_after_the_session_lapses():
    """A registration while the old incarnation's session is valid is refused (4.0 and later);
    the model's restart is the one after the lapse."""
    register = {"op": "register", "broker": 2, "previous_epoch": -1, "epoch": 1102, "clean_detection": True}
    refused, = _oracle_run("4.4.0", [dict(register, lapse=False)])[1:]
    assert refused["error"] == "DUPLICATE_BROKER_REGISTRATION" and refused["brokers"]["2"][0] == 102
    accepted, = _oracle_run("4.4.0", [register])[1:]
    assert accepted["error"] is None and accepted["brokers"]["2"][0] == 1102


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


def test_a_time_budget_stops_the_walks_with_exit_3_and_says_so(cli, tmp_path):
    r = cli("conform", "--kafka", "4.4", "--walks", "1000000", "--time-budget", "2", "--out", str(tmp_path))
    assert r.returncode == 3, r.stdout + r.stderr
    assert "STOPPED (time budget of 2 s spent after" in r.stdout
    summary = json.loads(next(tmp_path.glob("*/summary.json")).read_text())
    assert summary["result"] == "stopped" and summary["counts"]["walks"] > 0
