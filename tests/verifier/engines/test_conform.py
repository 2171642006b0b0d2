"""The conform engine against every release's own controller code (the oracle needs Maven and
Maven Central: a machine without them fails here with one line, it never skips).

- every release agrees with its preset on the scenario files that apply to it and on a seeded
  sample of walks over each set `make conform` walks (the matrix's four bound sets and conform's
  own; in CI three releases, in `make nightly` every one), and those walks compare every action the release has and answer every error the model's
  steps can produce (`make conform` runs the full budgets and wants 100 of each action);
- a run whose walks never compared an action a state of the config enables is not a pass (exit 3;
  an action no state enables is "not reachable here"), a file that
  sets rules the release lacks is not applicable (exit 2), the report shows conform's figures;
- every finding replays through the real controller of each release its entry names;
- every mutant that changes what the controller does diverges from the newest release;
- a divergence is reported shrunk, as a scenario file, with exit 1; bad input is exit 2."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from specs import MUTANTS, RELEASES, Model
from specs.controller import ERRORS
from tests.conftest import ROOT
from verifier.cli.conform import set_config
from verifier.engines.conform.oracle import Oracle, build
from verifier.core.settings import Settings
from verifier.engines.conform import run as C
from verifier.engines.conform.sets import CONFORM_SETS

CI_STEPS = 2000          # walk steps per release and set in CI (make conform: 100,000)
# Errors only a raw request gets (a scenario file's alter_partition), never a model step
# (bench/conform_bench.py, FILES_ONLY, says why); the scenario files compare them.
FILES_ONLY = {"NOT_CONTROLLER", "INVALID_REQUEST"}


def compare(rel, model, **knobs):
    """The conform engine as the command line runs it: its Outcome."""
    own = C.Knobs(version=rel.version, api=rel.api, preset=rel.preset, **knobs)
    return C.run(model, (), Settings(knobs=own)).facts


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


# CI walks the oldest release, the first without ZooKeeper (F4's) and the newest; `make nightly`
# walks every other too (about 20 s each). Every release's scenario files run in CI (above).
CI_WALKED = ("3.9.2", "4.0.2", "4.4.0")


@pytest.mark.parametrize("version", [pytest.param(v, id=f"kafka-{v}", marks=() if v in CI_WALKED else pytest.mark.nightly)
                                     for v in sorted(RELEASES)])
def test_every_release_agrees_on_seeded_walks_that_compare_every_action_and_error(version):
    """CI's share of `make conform`: 2,000 walk steps of each set, every one agreeing, and
    together every kind of step the release has compared (elections per type) and every error
    the model's own steps can produce answered, by Kafka as by the model."""
    rel = RELEASES[version]
    build(rel.version, rel.api)
    walked, errors = {}, {}
    for bound_set in CONFORM_SETS:
        cfg, plan = set_config(rel.preset, bound_set)
        out = compare(rel, Model(cfg, symmetry=False), steps=CI_STEPS, seed=7, plan=plan)
        assert out.divergence is None, (bound_set, out.divergence.case.labels, out.divergence.diffs)
        assert out.walk_steps >= CI_STEPS and out.stopped is None
        for table, counts in ((walked, out.walk_ops), (errors, out.errors)):
            for k, n in counts.items():
                table[k] = table.get(k, 0) + n
    model = Model(set_config(rel.preset, "default")[0], symmetry=False)
    kinds = [a for a in model.action_names if a != "elect" and not model.kafka_lacks((a,))]
    kinds += ["elect preferred", "elect unclean"]
    assert model.kafka_lacks(("unclean_recovery",)) and model.kafka_lacks(("elect", "designated"))
    assert [k for k in kinds if not walked.get(k)] == [], walked
    assert set(walked) <= set(kinds), walked            # nothing no release has was walked
    assert [e for e in ERRORS if e not in FILES_ONLY and not errors.get(e)] == [], errors


# ---------------------------------------------------------------------------- findings

def _findings() -> list[tuple[str, str, str, bool]]:
    """(finding, scenario, release version, reproduces) for every release an entry names."""
    text = (ROOT / "docs" / "FINDINGS.md").read_text()
    out = []
    for block in re.split(r"^### ", text, flags=re.M)[1:]:
        key = block.split(".", 1)[0]
        # "- scenario: `F`", or "- scenarios: `F` (the shortest), `G`": the first is the one
        # the entry says Kafka's own controller runs
        scenario = re.search(r"^- scenarios?: `([^`]+)`", block, flags=re.M).group(1)
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
    """Rules the controller's code reads, as `make conform`'s bench finds them (one reading for both)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("conform_bench", ROOT / "bench" / "conform_bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench.controller_rules()


CONTROLLER_MUTANTS = sorted(m for m, mutant in MUTANTS.items() if set(mutant.changes) & _controller_rules())


def test_the_controller_mutants_are_the_catalogues_controller_rules():
    assert len(CONTROLLER_MUTANTS) >= 13
    assert "hwm-maximal-isr" not in CONTROLLER_MUTANTS and "recovery-never-elects" not in CONTROLLER_MUTANTS
    assert "leader-epoch-not-bumped" in CONTROLLER_MUTANTS and "recovered-never-accepted" in CONTROLLER_MUTANTS


@pytest.mark.parametrize("mutant", CONTROLLER_MUTANTS)
def test_every_controller_mutant_diverges_from_the_newest_release(mutant):
    release = RELEASES["4.4.0"]
    for bound_set in CONFORM_SETS:
        cfg, plan = set_config(release.preset, bound_set, mutant)
        out = compare(release, Model(cfg, symmetry=False), walks=300, seed=1, plan=plan)
        if out.divergence is not None:
            assert out.divergence.step <= 15       # shrunk
            return
    pytest.fail(f"{mutant} agrees with Kafka 4.4.0 over 300 walks of every set")


def test_a_divergence_is_exit_1_with_a_shrunk_scenario_that_replays(cli, tmp_path):
    r = cli("conform", "--kafka", "4.4", "--mutant", "unfence-adds-to-isr", "--walks", "50", "--out", str(tmp_path))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "DIVERGES from Kafka 4.4.0" in r.stdout and "isr: model" in r.stdout
    run = next(tmp_path.glob("*/"))
    scenario = json.loads((run / "divergence.json").read_text())
    assert scenario["kind"] == "conform divergence" and "diverges from Kafka 4.4.0" in scenario["notes"]
    assert "Reproduce: kraft-verify conform --kafka 4.4.0 --mutant unfence-adds-to-isr FILE" in scenario["notes"]
    assert cli("replay", str(run / "divergence.json")).returncode == 0      # the model's own values
    # The file sets the mutant's rule, which 4.4.0 lacks: alone it does not apply; beside the
    # mutant named on the command line, Kafka's values still differ.
    alone = cli("conform", "--kafka", "4.4", str(run / "divergence.json"), "--out", str(tmp_path / "alone"))
    assert alone.returncode == 2 and "not applicable to Kafka 4.4.0" in alone.stderr, alone.stdout + alone.stderr
    again = cli("conform", "--kafka", "4.4", "--mutant", "unfence-adds-to-isr", str(run / "divergence.json"),
                "--out", str(tmp_path / "again"))
    assert again.returncode == 1 and "DIVERGES" in again.stdout             # and Kafka's still differ
    summary = json.loads((run / "summary.json").read_text())
    assert summary["result"] == "violation" and summary["exit_code"] == 1
    report = (run / "report.md").read_text()
    assert "# kraft-verify conform: DIVERGES from Kafka 4.4.0" in report
    fields = summary["details"]["divergence"]["fields"]
    assert "isr" in [f["field"] for f in fields]
    from verifier.reports.text import scalar
    for f in fields:                          # the model's and Kafka's values side by side
        assert f"| {f['field']} | {scalar(f['model'])} | {scalar(f['kafka'])} |" in report, (f, report)


# ---------------------------------------------------------------------------- coverage and the report

def test_walks_that_never_compare_an_action_the_config_enables_are_not_a_pass(cli, tmp_path):
    """config_changes=1 turns the periodic unclean election on, and a state of the config enables
    it (an exhaustive search finds one), but 20 walks never reach a leaderless partition whose
    topic enables unclean elections: every step agreed, and the run is not a pass (exit 3: the
    walks fell short of their claim; nothing disagreed, so not 1), naming the action and the walk
    set that aims at it, in the console, summary and report."""
    r = cli("conform", "--kafka", "4.4", "--bound", "config_changes=1", "--walks", "20", "--out", str(tmp_path))
    assert r.returncode == 3, r.stdout + r.stderr
    assert ("NOT COMPLETE against Kafka 4.4.0 (exit 3, not a pass): never compared in 20 walks: "
            "periodic_unclean_election (never enabled in the states the walks reached; a state of this config "
            "enables it") in r.stdout
    assert "--bound-set unclean" in r.stdout
    run = next(tmp_path.glob("*/"))
    summary = json.loads((run / "summary.json").read_text())
    assert summary["result"] == "stopped" and summary["exit_code"] == 3 and summary["violated"] == []
    assert "periodic_unclean_election" in summary["stop_reason"]
    rows = {a["action"]: a for a in summary["details"]["actions"]}
    assert rows["periodic_unclean_election"]["status"] == "never compared" and rows["fence"]["status"] == "compared"
    assert rows["crash"]["status"] == "off by config"
    assert "| periodic_unclean_election | 0 | 0 | 0 | never compared" in (run / "report.md").read_text()
    stopped = cli("conform", "--kafka", "4.4", "--bound", "config_changes=1", "--walks", "1000000",
                  "--time-budget", "2", "--out", str(tmp_path / "stopped"))
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr      # cut short: a stop, not a failure


def test_actions_no_state_of_the_config_enables_are_not_reachable_here_and_the_run_passes(cli, tmp_path):
    """One replica: no follower fetches, no ISR changes, no AlterPartition. An exhaustive search
    of the config says so, the run agrees at every step and passes (it exited 1 "INCOMPLETE")."""
    r = cli("conform", "--kafka", "4.4.0", "--brokers", "1", "--min-isr", "1", "--walks", "50", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("not reachable here, as no state of this config enables them (an exhaustive search): fetch, shrink_isr, "
            "expand_isr, deliver_alter_partition") in r.stdout
    assert "agrees with Kafka 4.4.0" in r.stdout
    summary = json.loads(next(tmp_path.glob("*/summary.json")).read_text())
    rows = {a["action"]: a for a in summary["details"]["actions"]}
    assert {a for a, row in rows.items() if row["status"] == "not reachable here"} == {
        "fetch", "shrink_isr", "expand_isr", "deliver_alter_partition"}
    assert summary["result"] == "ok" and summary["exit_code"] == 0


def test_the_report_shows_conforms_own_figures(cli, tmp_path):
    r = cli("conform", "--kafka", "3.9", "--bound-set", "shutdowns", "--steps", "300", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    run = next(tmp_path.glob("*/"))
    summary = json.loads((run / "summary.json").read_text())
    details = summary["details"]
    assert details["walks"]["bound_set"] == "shutdowns" and details["walks"]["refusals_per_walk"] == 2
    per_action = details["steps_per_action"]
    assert per_action["controlled_shutdown"] > 0 and per_action["elect preferred"] > 0
    assert sum(per_action.values()) == summary["counts"]["steps_compared"]
    assert details["errors_seen"] and set(details["errors_seen"]) <= set(ERRORS)
    rows = {a["action"]: a for a in details["actions"]}
    assert rows["elect designated"]["status"] == rows["unclean_recovery"]["status"] == "in no Kafka release"
    md, html = (run / "report.md").read_text(), (run / "report.html").read_text()
    assert md.startswith("# kraft-verify conform: agrees with Kafka 3.9.2")
    assert f"| controlled_shutdown | {per_action['controlled_shutdown']:,} |" in md
    for error, n in details["errors_seen"].items():
        assert f"| {error} | {n:,} |" in md and f"<td>{error}</td><td>{n:,}</td>" in html
    assert "distinct states" not in md and "States per BFS level" not in html      # no empty search table
    assert 'id="actions"' in html and f"<td>controlled_shutdown</td><td>{per_action['controlled_shutdown']:,}</td>" \
        in html


def test_a_plain_walk_is_the_walk_it_always_was():
    """The matrix's sets walk plainly, so their walks (and BENCHMARKS' figures) do not change:
    the plain plan draws exactly as core's random_step does."""
    from verifier.core.levels import random_step
    from verifier.engines.conform.engine import walk
    from verifier.engines.conform.run import walk_rng
    model = Model(set_config("kafka-4.4", "admin+reassignment")[0], symmetry=False)
    for i in range(30):
        labels, s, rng = [], model.init_states()[0], walk_rng(0, i)
        while len(labels) < 50 and (step := random_step(model, s, rng)) is not None:
            labels.append(step[0])
            s = step[1]
        assert walk(model, walk_rng(0, i), 50, f"walk {i}").labels == labels


def test_a_refused_request_changes_nothing_and_spends_no_budget():
    """The shutdowns set offers refused elections: each one the model answers with an error and
    leaves the state as it was, so the operator's real elections still have their budget."""
    from verifier.engines.conform.engine import walk
    from verifier.engines.conform.run import walk_rng
    from verifier.engines.conform.walks import scout
    cfg, plan = set_config("kafka-4.4", "shutdowns")
    model = Model(cfg, symmetry=False)
    refusable = scout(model, walk_rng(0, -1))
    assert {label[:2] for label in refusable} == {("elect", "preferred"), ("elect", "unclean")}
    refusals = 0
    for i in range(40):
        case = walk(model, walk_rng(0, i), 50, f"walk {i}", plan, refusable)
        before, here = case.initial, 0
        for label, after, error in case.steps:
            if after is before:                     # the state as it was, its budget included
                here += 1
                assert label in refusable and error in ERRORS, (label, error)
            before = after
        assert here <= plan.refusals
        assert sum(1 for label, _, error in case.steps if error and label[0] == "elect") == here
        refusals += here
    assert refusals > 10


# ---------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("args,message", [
    (["--kafka", "4.5.0"], "not a release conform knows"),
    (["--kafka", "3.8"], "not a release conform knows"),
    (["--kafka", "4.4", "--preset", "kip-966", "--bound", "admin_elections=1"], "designated leader elections"),
    (["--kafka", "4.4", "--preset", "recovery"], "unclean recovery rounds"),
    (["--kafka", "4.4", "--bound-set", "nope"], "--bound-set nope: unknown"),
    (["--kafka", "4.4", "--walks", "-1"], "--walks must be >= 0"),
    (["--kafka", "3.9", "specs/scenarios/kafka-pcbt-elr-can-be-elected.json"],
     "starts with an ELR or a last known ELR, which a cluster without ELR never writes"),
    (["--kafka", "4.4", "specs/scenarios/kafka-pcbt-elr-can-be-elected-kip-mode.json"],
     "not applicable to Kafka 4.4.0: it sets use_last_known_leader=false, which kafka-4.4 does not have"),
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


def test_kafka_3_9_runs_elr_at_its_unstable_metadata_version(cli):
    """3.9's ELR, at metadata 4.0-IV0 (walk set unstable-elr): the walks agree with 3.9.2's
    controller, restarts among them; there every new incarnation is an unclean shutdown (3.9's
    registerBroker has no clean-shutdown detection), so a restart after a controlled shutdown
    leaves the ELR, where 4.0's judges it clean; a real cluster is not formatted at that version
    (one line)."""
    rel = RELEASES["3.9.2"]
    cfg, plan = set_config(rel.preset, "unstable-elr")
    assert cfg.rules.elr and not cfg.rules.registration_judges_shutdown
    out = compare(rel, Model(cfg, symmetry=False), steps=CI_STEPS, seed=7, plan=plan)
    assert out.divergence is None and out.walk_ops.get("restart", 0) > 50, (out.divergence, out.walk_ops)
    steps = [("shrink_isr", 3, ()), ("deliver_alter_partition",), ("controlled_shutdown", 2), ("restart", 2)]
    for rules in (cfg, set_config("kafka-4.0", "unstable-elr")[0]):
        m = Model(rules, symmetry=False)
        s = m.init_states()[0]
        for label in steps:
            assert m.allows(s, label), (rules.preset, label, m.headline(s))
            s = m.apply(s, label)[0]
        assert (2 in s.ctrl.partition.elr) == (rules.preset == "kafka-4.0"), (rules.preset, m.headline(s))
    r = cli("cluster-conform", "--kafka", "3.9.2", "--flag", "elr=true")
    assert r.returncode == 2 and "unstable metadata version 4.0-IV0" in r.stderr, r.stderr


def test_a_restart_comes_after_the_session_lapses():
    """A registration while the old incarnation's session is valid is refused (4.0 and later);
    the model's restart is the one after the lapse."""
    register = {"op": "register", "broker": 2, "previous_epoch": -1, "epoch": 1102, "clean_detection": True}
    refused, = _oracle_run("4.4.0", [dict(register, lapse=False)])[1:]
    assert refused["error"] == "DUPLICATE_BROKER_REGISTRATION" and refused["brokers"]["2"][0] == 102
    accepted, = _oracle_run("4.4.0", [register])[1:]
    assert accepted["error"] is None and accepted["brokers"]["2"][0] == 1102


def test_a_time_budget_stops_the_walks_with_exit_3_and_says_so(cli, tmp_path):
    """8 s: the oracle's JVM takes about 3 s to answer its first request on a loaded machine (with
    2 s it had not answered yet, and the run stopped before its first walk)."""
    r = cli("conform", "--kafka", "4.4", "--walks", "1000000", "--time-budget", "8", "--out", str(tmp_path))
    assert r.returncode == 3, r.stdout + r.stderr
    assert "STOPPED (time budget of 8 s spent after" in r.stdout
    summary = json.loads(next(tmp_path.glob("*/summary.json")).read_text())
    assert summary["result"] == "stopped" and summary["counts"]["walks"] > 0


# ---------------------------------------------------------------------------- nothing compared is never a pass

def test_a_run_that_would_compare_nothing_is_refused(cli):
    for args in (["--walks", "0"], ["--walks", "0", "--steps", "0"]):
        r = cli("conform", "--kafka", "4.4", *args)
        assert r.returncode == 2 and "nothing to compare" in r.stderr, r.stdout + r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_an_oracle_that_answers_short_is_an_error_not_an_agreement():
    """A stale or foreign driver that answers fewer states (or none) than the case has steps
    compared nothing: an OracleError (exit 2), never "agrees"."""
    from specs import make_config
    from verifier.engines.conform.engine import Case, check, walk
    from verifier.engines.conform.oracle import OracleError
    import random as _random
    model = Model(make_config("kafka"), symmetry=False)
    case = walk(model, _random.Random(0), 5, "walk")

    class Short:
        def __init__(self, answer):
            self.answer = answer

        def run(self, init, ops):
            return self.answer

    for answer in ([], [{}], None, "garbage"):
        with pytest.raises(OracleError, match="answered"):
            check(Short(answer), case)
    assert isinstance(case, Case) and case.steps


def test_requests_outside_the_model_change_nothing_and_a_wrong_claim_diverges(monkeypatch):
    """specs/actions/control.py, PROBES: every request outside the model (oracle/OracleProbes.java)
    is answered with the error the model names and leaves the model's state as it was, on the
    oldest and the newest release; a model that claims a refused one accepted diverges there."""
    from specs import load_scenario, run_operations
    from specs.actions import control
    from verifier.engines.conform.engine import Case, check
    path = str(ROOT / "specs/scenarios/coverage-unmodelled-requests.json")

    def compared(version):
        rel = RELEASES[version]
        build(rel.version, rel.api)
        model, start, steps, _ = run_operations(load_scenario(path), path, preset=rel.preset)
        with Oracle(rel.version, rel.api) as oracle:
            return check(oracle, Case(path, model, start, steps)), steps
    for version in ("3.9.2", "4.4.0"):
        (found, n), steps = compared(version)
        assert found is None and n == len(steps)
        assert {label[1] for label, _, _ in steps if label[0] == "unmodelled_request"} == set(control.PROBES)
    monkeypatch.setitem(control.PROBES, "elect_unknown_topic", None)
    (found, _), _ = compared("4.4.0")
    assert found.label == ("unmodelled_request", "elect_unknown_topic")
    assert [(d.field, d.model, d.kafka) for d in found.diffs] == [("error", None, "UNKNOWN_TOPIC_OR_PARTITION")]
