"""Random walks on the kernel (verifier/engines/kernel/walks.py) are the Python walks
(verifier/engines/simulate.py), step for step: the same generator, the same successors in the
same order, so the same counts, depths, action counts and the same violating walk, shrunk
the same way; compiled and interpreted alike."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

import invariants as I
from specs import Model
from specs.config import PRESETS, make_config
from verifier.core.result import COMPLETE, VIOLATION
from verifier.core.settings import Settings
from verifier.engines import simulate
from verifier.engines.kernel import walks as W

ROOT = Path(__file__).resolve().parents[3]


def _facts(r) -> tuple:
    trace = r.counterexample
    return (r.status, r.distinct_states, r.transitions, r.terminal_states, r.depth, dict(r.enabled), dict(r.taken),
            {v.name: v.status for v in r.verdicts},
            None if trace is None else ([label for label, _ in trace.steps], tuple(trace.violated)))


def _walk(cfg, engine: str, **knobs):
    """simulate's walks on "python" or "kernel"."""
    model = Model(cfg, symmetry=False)
    if engine == "python":
        return simulate.run(model, I.REGISTRY, Settings(knobs=simulate.Knobs(**knobs)))
    return W.run(model, I.REGISTRY, Settings(knobs=W.Knobs(**knobs)))


def test_the_compiled_generator_draws_what_pythons_random_draws():
    for seed in (0, 1, 12345, 2**40 + 3):
        rng = random.Random(seed)
        mt, at = W.generator(seed)
        for n in [1, 2, 3, 5, 7, 64, 100, 1000, 65_537, 2**31 + 11] * 150:     # past one twist of 624 words
            assert W.below(mt, at, n) == rng.randrange(n)


@pytest.mark.parametrize("mutant, knobs", [
    (None, {"walks": 300, "depth": 40, "seed": 5}),
    ("hwm-ignores-min-isr", {"walks": 2000, "depth": 100, "seed": 0}),
    ("hwm-ignores-min-isr", {"walks": 2000, "depth": 100, "seed": 0, "shrink": False}),
])
def test_the_kernel_walks_are_the_python_walks(mutant, knobs):
    cfg = make_config("kafka", mutant=mutant)
    python = _facts(_walk(cfg, "python", **knobs))
    assert python[2] > 100                            # the walks went somewhere
    assert python[0] == (COMPLETE if mutant is None else VIOLATION)
    assert _facts(_walk(cfg, "kernel", **knobs)) == python


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_the_kernel_walks_are_the_python_walks_on_every_preset(preset):
    cfg = make_config(preset)
    knobs = {"walks": 150, "depth": 40, "seed": 11}
    python = _facts(_walk(cfg, "python", **knobs))
    assert python[2] > 100
    assert _facts(_walk(cfg, "kernel", **knobs)) == python


def test_a_visited_table_that_grows_under_the_walks_changes_nothing(monkeypatch):
    """Walks in a table of 16 slots with room for two labels: both grow again and again; the
    counts and the violating walk stay the Python walks'."""
    from verifier.engines.kernel.visited import Visited
    monkeypatch.setattr(W, "Visited", lambda owners, most: Visited(owners, slots=16, most=most))
    monkeypatch.setattr(W, "PATH", 2)             # and the walk's labels, from two
    for mutant, walks in ((None, 200), ("hwm-ignores-min-isr", 2000)):
        cfg = make_config("kafka", mutant=mutant)
        knobs = {"walks": walks, "depth": 50, "seed": 9}
        kernel = _facts(_walk(cfg, "kernel", **knobs))
        assert kernel[1] > 500 and kernel[0] == (COMPLETE if mutant is None else VIOLATION)
        assert kernel == _facts(_walk(cfg, "python", **knobs))


def test_check_walks_on_the_kernel_where_it_holds_the_config_and_in_python_where_not(tmp_path):
    """`check --simulate`: the kernel by default, the same summary as --engine python; a config
    the kernel cannot hold walks in Python (auto) or is refused in one line (--engine kernel)."""
    from verifier.cli import main

    def check(*args) -> tuple:
        out = tmp_path / str(len(list(tmp_path.iterdir())))
        code = main(["check", "--simulate", "30", "--depth", "20", "--seed", "4", "--out", str(out), "-q", *args])
        runs = list(out.glob("*/summary.json"))
        summary = json.loads(runs[0].read_text()) if runs else {}
        return code, summary.get("engine"), summary.get("counts")

    same = ("distinct_states", "transitions", "terminal_states", "depth")
    code, engine, kernel = check()
    assert (code, engine) == (0, "kernel-simulate") and kernel["transitions"] > 100
    code, engine, python = check("--engine", "python")
    assert (code, engine) == (0, "simulate") and {k: python[k] for k in same} == {k: kernel[k] for k in same}
    code, _, _ = check("--engine", "kernel", "--bound", "records=31")   # more records than a row holds
    assert code == 2
    code, engine, python = check("--bound", "records=31")
    assert (code, engine) == (0, "simulate") and python["transitions"] > 100


def test_interpreted_and_compiled_walks_agree():
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]);"
              "from tests.verifier.engines.test_kernel_walks import _facts, _walk;"
              "from specs.config import PRESETS, make_config;"
              "r = _walk(make_config('kafka', mutant='hwm-ignores-min-isr'), 'kernel', walks=40, depth=40, seed=3);"
              "print(json.dumps(repr(_facts(r))))")
    outs = []
    for jit in ("0", "1"):
        env = dict(os.environ, NUMBA_DISABLE_JIT=jit, PYTHONPATH=str(ROOT))
        proc = subprocess.run([sys.executable, "-c", script, str(ROOT)], env=env, capture_output=True, text=True,
                              cwd=ROOT, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        outs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert outs[0] == outs[1]
    assert outs[0].startswith("('violation'")
