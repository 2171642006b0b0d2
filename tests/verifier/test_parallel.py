"""`check --workers N`: the parallel search finds what one process finds, whatever N."""
from __future__ import annotations

import invariants as I

import json

import pytest

from specs import MUTANTS, PRESETS, Model, make_config
from verifier.engines.bfs import explore
from verifier.engines.parallel import explore_parallel
from verifier.core.result import Limits, Options

CONFIGS = [(p, None) for p in PRESETS] + [("kafka", m) for m in MUTANTS]
LIMITS = Limits(max_depth=8)           # about 13,000 states at the default bounds: a few seconds each


def _facts(result):
    return (result.status, result.distinct_states, result.transitions, result.depth, result.states_per_level,
            result.terminal_states, {name: len(t) for name, t in result.counterexamples.items()})


@pytest.mark.parametrize("preset,mutant", CONFIGS, ids=[m or p for p, m in CONFIGS])
def test_workers_1_2_3_give_the_same_counts_levels_and_verdicts(preset, mutant):
    model = Model(make_config(preset, mutant=mutant))
    options = Options(keep_going=True)
    one = _facts(explore(model, I.REGISTRY, LIMITS, options))
    for n in (2, 3):
        assert _facts(explore_parallel(model, I.REGISTRY, n, LIMITS, options)) == one, n


def test_the_same_traces_run_after_run():
    model = Model(make_config("pre-kip-966"))
    runs = [explore_parallel(model, I.REGISTRY, 2, Limits(max_depth=10), Options(keep_going=True))
            for _ in range(2)]
    traces = [{name: [label for label, _ in t.steps] for name, t in r.counterexamples.items()} for r in runs]
    assert traces[0] == traces[1] and traces[0]
    # and the counterexamples are real runs that break what they claim
    for name, t in runs[0].counterexamples.items():
        inv = next(i for i in I.REGISTRY if i.name == name)
        last_label, last = t.steps[-1]
        prev = t.steps[-2][1] if len(t.steps) > 1 else t.initial
        assert not (inv.check(model.cfg, last) if inv.kind == "state" else inv.check(model.cfg, prev, last_label, last))


def test_the_cli_runs_on_every_core_by_default_and_says_so(cli, tmp_path):
    r = cli("check", "--bound", "isr_shrinks=0", "-q", "--out", str(tmp_path), "--workers", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "workers: 2" in r.stdout
    bad = cli("check", "--workers", "2", "--checkpoint-dir", str(tmp_path / "ck"), "--out", str(tmp_path))
    assert bad.returncode == 2 and "--workers 1" in bad.stderr


def test_the_estimate_of_a_known_config_lands_within_its_range(cli, tmp_path):
    """The default config has 238,348 states and depth 26 (an exhaustive run says so)."""
    r = cli("check", "--estimate", "4", "--workers", "1", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    est = json.loads(next(tmp_path.glob("estimate-*/estimate.json")).read_text())
    assert not est["exact"] and est["states_low"] <= 238_348 <= est["states_high"], est
    assert est["seconds_low"] <= est["seconds"] <= est["seconds_high"]
    assert "a forecast" in r.stdout
