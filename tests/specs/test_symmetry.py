"""Symmetry reduction is sound: renaming brokers commutes with the transition function,
the canonical form picks one state per orbit, and reduced runs give the verdicts of
unreduced ones."""
import dataclasses
import random

import pytest

import invariants as I
from specs import symmetry as S
from specs.actions import init_state, successors
from specs.catalogue import PRESETS
from specs.config import make_config
from specs.model import Model
from specs.catalogue import MUTANTS
from verifier.core.properties import state_violations
from verifier.core.settings import Options, Settings
from verifier.engines import kernel

ANY = {"any_candidate_elections": True}
SMALL = {"isr_shrinks": 0}
# one test process: presets that are one model share their runs (_with_and_without)
pytestmark = pytest.mark.xdist_group("symmetry")
_RUNS: dict = {}


def _search(cfg, symmetry: bool, settings=None):
    """The exhaustive search `check` runs (the kernel; --symmetry reduces on it), reduced or not:
    the kernel's canonical rows are the Python model's (tests/specs/test_kernel_symmetry.py)."""
    return kernel.run(Model(cfg, symmetry=symmetry), I.REGISTRY, settings or Settings())


def _with_and_without(cfg) -> list:
    """The --continue runs of cfg with and without symmetry, made once per model and test
    process: a run depends on the config but not its preset's name (`preset` is a name kept for
    reports, specs/config.py), so kafka, kafka-4.3 and kafka-4.4 share theirs, as do kafka-4.1
    and kafka-4.2, until their rules or bounds move apart."""
    model = repr(sorted((k, v) for k, v in dataclasses.asdict(cfg).items() if k != "preset"))
    if model not in _RUNS:
        every = Settings(options=Options(keep_going=True))
        _RUNS[model] = [_search(cfg, sym, every) for sym in (True, False)]
    return _RUNS[model]


def walk_states(cfg, walks=60, depth=25, seed=7):
    rng = random.Random(seed)
    for _ in range(walks):
        s = init_state(cfg)
        for _ in range(depth):
            yield s
            succ = list(successors(cfg, s))
            if not succ:
                break
            s = rng.choice(succ)[1]


@pytest.mark.parametrize("preset", ["kafka", "pre-kip-903"])
def test_renaming_commutes_with_successors(preset):
    cfg = make_config(preset, flags=ANY, bounds={"records": 2})
    rng = random.Random(3)
    checked = 0
    for s in walk_states(cfg):
        perm = dict(zip(cfg.replicas, rng.sample(cfg.replicas, len(cfg.replicas))))
        renamed_successors = {S.permute(cfg, t, perm) for _, t in successors(cfg, s)}
        successors_of_renamed = {t for _, t in successors(cfg, S.permute(cfg, s, perm))}
        assert renamed_successors == successors_of_renamed
        checked += 1
    assert checked > 500


def test_canonical_form_is_one_state_per_orbit_and_keeps_the_invariants():
    cfg = make_config("kafka", flags=ANY, bounds={"records": 2})
    canonical = S.canonicalizer(cfg)
    seen_nontrivial = 0
    for s in walk_states(cfg):
        orbit = S.orbit(cfg, s)
        assert len({canonical(x) for x in orbit}) == 1
        assert canonical(s) in orbit
        seen_nontrivial += len(orbit) > 1
        for x in orbit:
            assert state_violations(I.REGISTRY, cfg, x) == state_violations(I.REGISTRY, cfg, s)
    assert seen_nontrivial > 100


def test_symmetry_is_off_where_it_would_be_unsound():
    assert Model(make_config("kafka")).symmetric is False          # replica-order elections
    assert "replica order" in Model(make_config("kafka")).symmetry_note
    assert Model(make_config("kafka", flags=ANY)).symmetric is True
    preferred = make_config("kafka", flags=ANY, bounds={"admin_elections": 1})
    assert Model(preferred).symmetric is False and "admin_elections" in Model(preferred).symmetry_note
    assert Model(make_config("kafka", flags=ANY), symmetry=False).symmetric is False


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_presets_same_verdict_per_invariant_with_and_without_symmetry(preset):
    cfg = make_config(preset, flags=ANY, bounds=SMALL)
    reduced, full = _with_and_without(cfg)
    assert reduced.explored_all and full.explored_all
    assert {n: len(t) for n, t in reduced.counterexamples.items()} == \
        {n: len(t) for n, t in full.counterexamples.items()}
    # The initial state is not symmetric (b1 leads), so two renamings of a state may lie at
    # different distances from it: the reduced search's depth is the least over each orbit.
    assert reduced.depth <= full.depth
    if Model(cfg).symmetric:
        assert reduced.distinct_states < full.distinct_states
    else:       # the recovery profile's admin elections and rounds read the replica order
        assert preset == "recovery" and reduced.distinct_states == full.distinct_states


def test_last_replica_standing_same_shortest_story_with_and_without_symmetry():
    cfg = make_config("pre-kip-966", flags=ANY)
    reduced, full = (_search(cfg, sym) for sym in (True, False))
    assert reduced.counterexample.violated == full.counterexample.violated == ["LeaderCandidateCompleteness"]
    assert len(reduced.counterexample) == len(full.counterexample) == 6


@pytest.mark.parametrize("threads", [1, 2])
def test_a_step_is_judged_before_its_successor_is_renamed(threads):
    """A step property compares a state with its successor under one naming. The kernel once
    renamed the successors first: b2 elected at b1's leader epoch read as b1 again, and `check`
    said OneLeaderPerEpoch holds (exit 0) on a model that breaks it in one step, on one thread
    and on two (the mutant test below caught it once it ran on the kernel)."""
    from verifier.cli import binding
    cfg = make_config("kafka", flags=ANY, bounds=SMALL, mutant="leader-epoch-not-bumped")
    every = Settings(options=Options(keep_going=True), knobs=binding.knobs("kernel", threads=threads))
    reduced, full = (kernel.run(Model(cfg, symmetry=sym), I.REGISTRY, every) for sym in (True, False))
    assert reduced.distinct_states < full.distinct_states
    assert "OneLeaderPerEpoch" in reduced.counterexamples
    assert {n: len(t) for n, t in reduced.counterexamples.items()} == \
        {n: len(t) for n, t in full.counterexamples.items()}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutants_same_verdict_with_and_without_symmetry(mutant):
    cfg = make_config("kafka", flags=ANY, bounds=SMALL, mutant=mutant)
    reduced, full = (_search(cfg, sym) for sym in (True, False))
    assert reduced.status == full.status
    if full.counterexample is not None:
        assert len(reduced.counterexample) == len(full.counterexample)
        # the reduced run's trace is a real run from the real initial state
        assert reduced.counterexample.initial == init_state(cfg)
    assert reduced.distinct_states <= full.distinct_states
