"""Every invariant is shown to catch a bug (an old protocol variant or a deliberately broken
rule makes it fail) and to hold on the KIPs' stories under the `kafka` preset."""
import glob
import json

import pytest

import invariants as I
from tests.conftest import ROOT
from specs import Model, config_from_dict, explicit_flags, make_config, with_bounds
from tests.bind import run_scenario
from verifier.core.result import VIOLATION
from verifier.core.settings import Limits, Settings
from verifier.engines import bfs

# invariant -> (preset, mutant, bound overrides) whose exploration violates it
KILLERS = {
    "IsrElrDisjoint": ("kafka", "elr-includes-target-isr", {}),
    "ElrOnlyBelowMinIsr": ("kafka", "elr-not-cleared", {}),
    "LeaderInIsr": ("kafka", "elr-leader-not-added-to-isr", {}),
    "LeaderCandidateCompleteness": ("pre-kip-966", None, {}),
    "LeaderCompleteness": ("pre-kip-966", None, {}),
    "NoCommittedRecordLostGlobally": ("pre-kip-966", None, {}),
    "ConsumerHwmNeverBackward": ("pre-kip-966", None, {}),
    "NoLostReplicaInIsr": ("pre-kip-903", None, {}),
    "LogMatching": ("kafka", "leader-epoch-not-bumped", {"records": 2}),
    "LeaderElectedRegisteredUnfenced": ("kafka", "fenced-elr-elected", {}),
    "ElectedLeaderWasCandidate": ("kafka", "unclean-election-marked-clean", {}),
    "UncleanElectionOnlyAfterMinIsrUncleanShutdowns": ("kafka", "fenced-not-into-elr", {}),
    "FollowerLogMatchesLeader": ("kafka", "follower-no-truncate", {}),
    "OneLeaderPerEpoch": ("kafka", "leader-epoch-not-bumped", {}),
    "RecoveryElectsAReplicaWithEveryAnsweredRecord": ("recovery", "recovery-shortest-log", {}),
}


def test_every_invariant_has_a_killer_and_states_its_rule():
    assert set(KILLERS) == set(I.BY_NAME)
    explainers = [inv.explain for inv in I.REGISTRY]
    assert None not in explainers and len(set(explainers)) == len(explainers), "a property's why is its own"
    for inv in I.REGISTRY:
        assert "KIP-" in inv.quote or "docs/protocol.md" in inv.quote, f"{inv.name} cites no rule"


@pytest.mark.parametrize("name", sorted(KILLERS))
def test_invariant_fails_on_a_broken_protocol(name):
    preset, mutant, bounds = KILLERS[name]
    cfg = with_bounds(make_config(preset, mutant=mutant), **bounds)
    result = bfs.run(Model(cfg), [I.BY_NAME[name]], Settings(limits=Limits(max_depth=14)))
    assert result.status == VIOLATION, f"{name} not violated under {preset}/{mutant}"
    assert result.counterexample.violated == [name]
    from verifier.reports.story import why          # in its own words, not the generic fallback
    assert not why(result.counterexample)[name].startswith(f"{name} fails after step"), name
    # and the same bounds under the real protocol do not violate it within that depth
    real = preset if mutant else "kafka"
    good = bfs.run(Model(with_bounds(make_config(real), **bounds)), [I.BY_NAME[name]],
                   Settings(limits=Limits(max_depth=len(result.counterexample))))
    assert good.status != VIOLATION


STORIES = [p for p in sorted(glob.glob(str(ROOT / "specs/scenarios/*.json")))
           if not p.rsplit("/", 1)[-1].startswith(("kafka-", "coverage-"))]
# conform's probes of controller branches no walk reaches (bench/results/issue59/unreached-evidence.md)
PROBES = sorted(glob.glob(str(ROOT / "specs/scenarios/coverage-*.json")))


@pytest.mark.parametrize("path", PROBES, ids=lambda p: p.rsplit("/", 1)[-1])
def test_coverage_probes_end_as_they_say_and_break_no_invariant(path):
    data = json.loads(open(path).read())
    result = run_scenario(data, path, force_invariants=True)
    assert result.ok, result.failure
    assert result.violations == [], result.violations
    assert any("expect" in step for step in data["steps"]), "a probe states what its step does"


@pytest.mark.parametrize("path", STORIES, ids=lambda p: p.rsplit("/", 1)[-1])
def test_kip_stories_hold_under_kafka_and_fail_under_old_protocols(path):
    data = json.loads(open(path).read())
    cfg = config_from_dict(data["config"])
    kafka = cfg.preset == "kafka" and cfg.mutant is None and not explicit_flags(cfg)
    result = run_scenario(data, path, force_invariants=kafka)
    assert result.ok, result.failure
    if kafka:
        assert result.violations == [], result.violations
    else:
        assert result.trace.violated, "an old-protocol story must end in a violated invariant"
