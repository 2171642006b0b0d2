"""Hypothesis stateful testing of the model: the machine pytest collects, old bugs found and
shrunk close to the BFS's shortest story, every mutant killed, statistics, the database."""
import json

import pytest

import invariants as I
from specs import Model, make_config
from specs.catalogue import MUTANTS
from verifier.core.settings import Settings
from verifier.engines import bfs, fuzz
from specs import deep_bounds
from verifier.core.result import COMPLETE
from verifier.engines.fuzz import Recorder, hypothesis_settings, machine_for
from tests.bind import run_scenario


def fuzz_config(preset="kafka", brokers=3, mutant=None):
    return make_config(preset, replicas=list(range(1, brokers + 1)), bounds=deep_bounds(brokers), mutant=mutant)


# The state machine itself, collected by pytest and run on the ci profile: 600 of its 2,500
# examples keep CI short (`kraft-verify fuzz` runs all of them; the mutation gate below runs
# the whole profile against every mutant).
_KAFKA = fuzz_config()
KafkaMachine = machine_for(Model(_KAFKA), I.REGISTRY, Recorder())
KafkaMachine.TestCase.settings = hypothesis_settings("ci", _KAFKA, examples=600)
TestKafkaMachine = KafkaMachine.TestCase


# pre-kip-903's case (52 s) is nightly: CI finds that bug with check (tests/verifier/engines/test_bfs.py)
@pytest.mark.parametrize("preset", ["pre-kip-966", pytest.param("pre-kip-903", marks=pytest.mark.nightly)])
def test_old_bugs_are_found_shrunk_near_the_shortest_and_replay(preset):
    cfg = fuzz_config(preset)
    found = fuzz.run(Model(cfg), I.REGISTRY)
    assert found.status == "violation"
    trace = found.counterexample
    searched = bfs.run(Model(cfg), [I.BY_NAME[name] for name in trace.violated])
    assert searched.counterexample is not None
    assert len(trace) <= len(searched.counterexample) + 2, (len(trace), len(searched.counterexample))
    replay = run_scenario(json.loads(json.dumps(trace.model.scenario(trace, "fuzz", "test"))))
    assert replay.ok, replay.failure
    assert set(trace.violated) <= set(replay.trace.violated)


# one case per mutant (only check --liveness sees a liveness mutant: tests/verifier/engines/test_liveness.py),
# so the test processes share them
SAFETY_MUTANTS = [name for name, m in MUTANTS.items() if not m.liveness]


@pytest.mark.parametrize("brokers", [3, pytest.param(5, marks=pytest.mark.nightly)])
# `make test-fast` leaves out the known gap's case and the mutant the profile takes longest to
# kill (about 1,000 examples); CI runs both
@pytest.mark.parametrize("mutant", [pytest.param(name, marks=pytest.mark.slow)
                                    if MUTANTS[name].needs or name == "no-broker-epoch-check" else name
                                    for name in SAFETY_MUTANTS])
def test_every_mutant_is_killed_on_the_ci_profile(brokers, mutant):
    m = MUTANTS[mutant]
    if m.needs:
        # A known gap, not a pass: the ci profile reaches recovery rounds (about 60-190 of
        # 2,500-6,000 examples at 3 brokers) but not one that loses an answered record. Since
        # issue 36 (a leader reports RECOVERED with its first ISR change, ISR shrinks of
        # several followers) the shortest such run is 11 steps, and 6,000 examples at 3
        # brokers did not find it; the BFS gate kills it (check --mutants). Asserted so that
        # closing the gap shows here.
        assert fuzz.run(Model(fuzz_config(f"kafka+{m.needs}", brokers=brokers, mutant=mutant)), I.REGISTRY,
                        Settings(knobs=fuzz.Knobs(examples=500, shrink=False))).status == COMPLETE
        return
    result = fuzz.run(Model(fuzz_config("kafka", brokers=brokers, mutant=mutant)), I.REGISTRY,
                      Settings(knobs=fuzz.Knobs(shrink=False)))
    assert result.status == "violation", f"{mutant} survived the ci profile"


@pytest.mark.slow       # `make test-fast` fuzzes 3 brokers (TestKafkaMachine), CI 5 too, nightly 7
@pytest.mark.parametrize("brokers", [5, pytest.param(7, marks=pytest.mark.nightly)])
def test_kafka_holds_on_larger_clusters(brokers):
    # 400 of the ci profile's 2,500 examples keep CI short; `kraft-verify fuzz --brokers 7` runs all
    result = fuzz.run(Model(fuzz_config(brokers=brokers)), I.REGISTRY, Settings(knobs=fuzz.Knobs(examples=400)))
    assert result.status == COMPLETE, result.counterexample and result.counterexample.violated
    rec = result.facts
    assert rec.examples >= 400 and rec.steps > 10 * rec.examples
    # the runs reached the protocol's core actions, not just the start state
    for action in ("produce", "fetch", "advance_hwm", "shrink_isr", "expand_isr", "deliver_alter_partition",
                   "fence", "unfence", "crash_lossy", "restart"):
        assert rec.rule_runs[action] > 0, action
    assert max(rec.depths) > 20


def test_a_saved_failure_replays_first(tmp_path):
    cfg = fuzz_config(mutant="hwm-ignores-min-isr")
    # unseeded (Hypothesis keeps no database for seeded runs); this mutant dies within ~50 examples
    nightly = Settings(knobs=fuzz.Knobs(profile="nightly", examples=2000, database=tmp_path))
    first = fuzz.run(Model(cfg), I.REGISTRY, nightly)
    assert first.status == "violation"
    assert any(tmp_path.rglob("*")), "the failure was saved"
    again = fuzz.run(Model(cfg), I.REGISTRY, nightly)
    assert again.status == "violation" and again.facts.first_failure_example == 1


def test_fuzz_cli_exit_codes_and_files(cli, tmp_path):
    # a mutant the fuzzer breaks and shrinks in 2 s (pre-kip-966 took 17 s; the old bugs'
    # test above holds the fuzzer to them)
    r = cli("fuzz", "--mutant", "hwm-ignores-min-isr", "--out", str(tmp_path / "bug"))
    assert r.returncode == 1, r.stdout + r.stderr
    run = next((tmp_path / "bug").iterdir())
    summary = json.loads((run / "summary.json").read_text())
    assert {p.name for p in run.iterdir()} == {"summary.json", "report.md", "report.html", "counterexample.json",
                                               "counterexample.itf.json"} | {
        f"counterexample-{name}.json" for name in summary["violated"]}
    assert summary["engine"] == "fuzz" and summary["counts"]["examples_to_failure"] >= 1
    assert "rules run" in r.stdout and "steps per example" in r.stdout
    replay = cli("replay", str(run / "counterexample.json"))
    assert replay.returncode == 0 and "reproduces" in replay.stdout
    junit = tmp_path / "ok.xml"
    r = cli("fuzz", "--examples", "20", "--out", str(tmp_path / "ok"), "--junit", str(junit))
    assert r.returncode == 0 and "not a proof" in r.stdout
    assert 'failures="0"' in junit.read_text() and 'errors="0"' in junit.read_text()
    assert "sampled runs (a sample, not a proof)" in junit.read_text()
    r = cli("fuzz", "--examples", "0")
    assert r.returncode == 2 and "--examples must be >= 1" in r.stderr
    r = cli("fuzz", "--profile", "weekly")
    assert r.returncode == 2 and "invalid choice" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_the_recovery_profile_reaches_recovery_rounds_and_recovered_on_the_ci_profile():
    """Issue: fuzz reaches unclean_recovery and RECOVERED (an ISR expansion after it) on the
    recovery preset."""
    result = fuzz.run(Model(fuzz_config("recovery")), I.REGISTRY, Settings(knobs=fuzz.Knobs(examples=500)))
    assert result.status == COMPLETE, result.counterexample and result.counterexample.violated
    runs = result.facts.rule_runs
    assert runs["unclean_recovery"] > 0 and runs["expand_isr"] > 0 and runs["elect"] > 0


_EXAMPLES_TO_FAILURE = """
import sys
if sys.argv[1] == "more":
    import spark.engine, verifier.engines.prove, verifier.cli.binding  # more of the project's modules
import invariants as I
from specs import Model, deep_bounds, make_config
from verifier.core.settings import Settings
from verifier.engines import fuzz
cfg = make_config("kafka", replicas=[1, 2, 3], bounds=deep_bounds(3), mutant="unclean-election-marked-clean")
print(fuzz.run(Model(cfg), I.REGISTRY, Settings(knobs=fuzz.Knobs(shrink=False))).facts.examples)
"""


def test_the_ci_profile_draws_the_same_examples_whatever_the_process_imported():
    """Hypothesis draws now and then a literal of the modules in sys.modules; a fuzz run draws
    from none, so its examples do not depend on the command that runs it (this mutant fell
    after 211 examples in a bare process and 485 after importing the prove and spark engines)."""
    import os
    import subprocess
    import sys
    from tests.conftest import ROOT
    runs = [subprocess.run([sys.executable, "-c", _EXAMPLES_TO_FAILURE, imports], capture_output=True, text=True,
                           cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT))) for imports in ("fewer", "more")]
    assert all(r.returncode == 0 for r in runs), [r.stderr[-2000:] for r in runs]
    assert runs[0].stdout == runs[1].stdout, (runs[0].stdout, runs[1].stdout)
