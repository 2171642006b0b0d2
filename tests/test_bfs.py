"""The exhaustive checker over the model: shortest counterexamples, determinism, replay."""
import json

import pytest

import invariants as I
from specs.config import make_config, with_bounds
from verifier.bfs import COMPLETE, STOPPED, VIOLATION, Limits, explore
from verifier.replay import run_scenario
from verifier.trace import to_scenario


@pytest.fixture(scope="module")
def kafka_small():
    return explore(with_bounds(make_config("kafka"), isr_shrinks=1))


def test_kafka_small_bounds_complete_without_violation(kafka_small):
    assert kafka_small.status == COMPLETE
    assert kafka_small.counterexample is None
    assert kafka_small.distinct_states > 1000
    assert sum(kafka_small.states_per_level) == kafka_small.distinct_states


def test_same_config_same_counts(kafka_small):
    again = explore(with_bounds(make_config("kafka"), isr_shrinks=1))
    assert (again.distinct_states, again.transitions, again.depth, again.states_per_level) == \
        (kafka_small.distinct_states, kafka_small.transitions, kafka_small.depth, kafka_small.states_per_level)


@pytest.mark.parametrize("preset,invariant", [
    ("pre-kip-966", "NoCommittedRecordLostGlobally"),
    ("pre-kip-966", "ConsumerHwmNeverBackward"),
    ("pre-kip-903", "NoLostReplicaInIsr"),
])
def test_old_protocols_are_caught_and_the_counterexample_replays(preset, invariant):
    cfg = make_config(preset)
    first = explore(cfg, [I.BY_NAME[invariant]])
    assert first.status == VIOLATION and invariant in first.counterexample.violated
    second = explore(cfg, [I.BY_NAME[invariant]])
    assert [lab for lab, _ in second.counterexample.steps] == [lab for lab, _ in first.counterexample.steps]
    scenario = json.loads(json.dumps(to_scenario(first.counterexample, "cx", "test")))
    result = run_scenario(scenario)
    assert result.ok, result.failure
    assert result.trace.final == first.counterexample.final
    # the same old-protocol trace is harmless under the current protocol
    scenario["config"]["preset"] = "kafka"
    scenario["config"]["elr"] = True
    scenario["config"].pop("broker_epoch_check", None)
    under_kafka = run_scenario(scenario)
    assert not under_kafka.ok


def test_budgets_stop_early_with_exit_status_stopped():
    r = explore(make_config("kafka"), limits=Limits(max_states=500))
    assert r.status == STOPPED and "max states" in r.stop_reason
    r = explore(make_config("kafka"), limits=Limits(max_depth=3))
    assert r.status == STOPPED and r.depth == 3


def test_check_cli_exit_codes(cli, tmp_path):
    r = cli("check", "--preset", "pre-kip-966", "--out", str(tmp_path))
    assert r.returncode == 1, r.stdout + r.stderr
    written = list(tmp_path.glob("*/counterexample.json"))
    assert len(written) == 1
    replay = cli("replay", str(written[0]))
    assert replay.returncode == 0 and "reproduces" in replay.stdout
    r = cli("check", "--max-states", "200", "--out", str(tmp_path))
    assert r.returncode == 3 and "STOPPED" in r.stdout
    r = cli("check", "--preset", "no-such-preset")
    assert r.returncode == 2 and "unknown preset" in r.stderr
    r = cli("check", "--mutant", "no-such-mutant")
    assert r.returncode == 2 and "unknown mutant" in r.stderr
