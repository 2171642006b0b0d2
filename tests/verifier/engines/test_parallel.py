"""`check --workers N`: the parallel search finds what one process finds, whatever N."""
from __future__ import annotations

import invariants as I

import json
import re

import pytest

from specs import MUTANTS, PRESETS, Model, make_config
from verifier.core.settings import Limits, Options, Settings
from verifier.engines import bfs, parallel

CONFIGS = [(p, None) for p in PRESETS] + [("kafka", m) for m in MUTANTS]
LIMITS = Limits(max_depth=8)           # about 13,000 states at the default bounds: a few seconds each


def _facts(result):
    return (result.status, result.distinct_states, result.transitions, result.depth, result.states_per_level,
            result.terminal_states, {name: len(t) for name, t in result.counterexamples.items()})


@pytest.mark.parametrize("preset,mutant", CONFIGS, ids=[m or p for p, m in CONFIGS])
def test_workers_1_2_3_give_the_same_counts_levels_and_verdicts(preset, mutant):
    model = Model(make_config(preset, mutant=mutant))
    options = Options(keep_going=True)
    one = _facts(bfs.run(model, I.REGISTRY, Settings(limits=LIMITS, options=options)))
    for n in (2, 3):
        workers = Settings(limits=LIMITS, options=options, knobs=parallel.Knobs(workers=n))
        assert _facts(parallel.run(model, I.REGISTRY, workers)) == one, n


def test_the_same_traces_run_after_run():
    model = Model(make_config("pre-kip-966"))
    two = Settings(limits=Limits(max_depth=10), options=Options(keep_going=True), knobs=parallel.Knobs(workers=2))
    runs = [parallel.run(model, I.REGISTRY, two)
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
    r = cli("check", "--bound", "isr_shrinks=0", "-q", "--out", str(tmp_path), "--workers", "2", "--engine", "python")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "workers: 2" in r.stdout
    r = cli("check", "--bound", "isr_shrinks=0", "-q", "--out", str(tmp_path), "--workers", "2")
    assert r.returncode == 0 and "engine: kernel (the model compiled), 2 threads" in r.stdout, r.stdout
    bad = cli("check", "--workers", "2", "--dump-graph", str(tmp_path / "g.dot"), "--out", str(tmp_path))
    assert bad.returncode == 2 and "--workers 1" in bad.stderr
    bad = cli("check", "--workers", "2", "--engine", "python", "--checkpoint-dir", str(tmp_path / "ck"),
              "--out", str(tmp_path))
    assert bad.returncode == 2 and "--checkpoint-dir on the Python search needs --workers 1" in bad.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_estimate_of_a_known_config_lands_within_its_range(cli, tmp_path, workers):
    """The default config has 324,861 states and depth 32 (an exhaustive run says so). With two
    workers the search stops between levels and had dropped the level it began (a trailing 0 the
    forecast took for "too early", exit 3: issue 37)."""
    r = cli("check", "--estimate", "4", "--workers", workers, "--engine", "python", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    est = json.loads(next(tmp_path.glob("estimate-*/estimate.json")).read_text())
    assert est["engine"] == ("bfs" if workers == "1" else "parallel")
    assert not est["exact"] and est["states_low"] <= 324_861 <= est["states_high"], est
    assert est["seconds_low"] <= est["seconds"] <= est["seconds_high"]
    assert "a forecast" in r.stdout


def test_the_estimate_samples_on_the_engine_the_check_would_run(cli, tmp_path):
    """check runs the kernel by default, so --estimate samples the kernel: its time forecast is
    the kernel's, not the Python search's 20-40x slower one. brokers 4 has 7,499,896 states (an
    exhaustive run says so); the kernel stops inside a level, whose part the forecast drops."""
    r = cli("check", "--estimate", "4", "--brokers", "4", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "sampled on: kernel" in r.stdout
    est = json.loads(next(tmp_path.glob("estimate-*/estimate.json")).read_text())
    assert est["engine"] == "kernel" and not est["exact"], est
    assert est["states_low"] <= 7_499_896 <= est["states_high"], est
    finished = int(re.search(r"forecast from (\d+) finished levels", r.stdout).group(1))
    assert finished == len(est["sample_levels"]) - 1, "the level the sample stopped in was not dropped"


def test_a_halted_round_stops_at_once_and_its_successors_are_not_sorted_out():
    """A signal or the time budget sets the pool's halt: each worker stops within a slice of
    256 states and the coordinator cuts the level there, without deduplicating the round's
    successors (seconds on a round of 50,000 states)."""
    from verifier.core import levels
    from verifier.core.result import STOPPED, SearchResult
    from verifier.engines.parallel import ROUND, Pool, _level
    model = Model(make_config("kafka"))
    roots = levels.roots(model)

    def grown(pool, depth):
        res = SearchResult(engine="bfs")
        pool.ask([("seed", [(fp, c) for fp, (_, c) in sorted(roots.items()) if fp % 2 == w]) for w in range(2)])
        for level in range(depth):
            _level(pool, 2, res, {}, level, frozenset(), lambda _: None, ROUND)
        return res

    pool = Pool(2, model, I.REGISTRY, Options())
    try:
        whole = grown(pool, 6)
        full, _ = _level(pool, 2, whole, {}, 6, frozenset(), lambda _: None, ROUND)
    finally:
        pool.close()
    assert full > 2 * 256
    pool = Pool(2, model, I.REGISTRY, Options())
    try:
        res = grown(pool, 6)
        pool.ask([("expand", frozenset(), 300)] * 2)   # 300 states each expanded, their successors pending
        before = res.transitions
        pool.halt.set()                                  # ... then the halt: each goes on to its 512th state
        new, stopped = _level(pool, 2, res, {}, 6, frozenset(), lambda _: (STOPPED, "halted"), ROUND)
    finally:
        pool.close()
    assert (new, stopped) == (0, (STOPPED, "halted"))    # nothing of the round sorted out or counted
    assert before < res.transitions < before + full * 20  # the slice to the 512th state was expanded
