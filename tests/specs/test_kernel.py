"""The compiled kernel against the NamedTuple model (tests/specs/kernel_diff.py): the same
successors, labels, steps, deadlocks and property verdicts, state by state, on every preset,
every mutant and configs that switch every action on; and the same rows interpreted
(NUMBA_DISABLE_JIT=1) as compiled, one source run two ways."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specs.config import make_config
from specs.kernel import Kernel, KernelUnsupported
from tests.specs.kernel_diff import configs, differential

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = configs()


@pytest.mark.parametrize("cfg", [c for _, c in CONFIGS], ids=[n for n, _ in CONFIGS])
def test_the_kernel_steps_like_the_model(cfg):
    assert differential(cfg, limit=1200, step_labels=False) == 1200


def test_every_step_by_label_is_the_models():
    """Kernel.step (what replay and traces use) on every label of the first states."""
    assert differential(make_config(bounds={"crashes": 1, "clean_shutdowns": 1, "admin_elections": 1,
                                            "config_changes": 1}), limit=300) == 300


def test_a_difference_is_caught(monkeypatch):
    """The comparison is not vacuous: a kernel that drops the last successor of a state fails."""
    real = Kernel.successors

    def fewer(self, s, unbounded=False, only=None):
        out = real(self, s, unbounded, only)
        return out[:-1] if len(out) > 2 else out
    monkeypatch.setattr(Kernel, "successors", fewer)
    with pytest.raises(AssertionError, match="labels differ"):
        differential(make_config(), limit=50)


def test_the_layout_refuses_what_it_cannot_hold():
    with pytest.raises(KernelUnsupported, match="records=31"):
        Kernel(make_config(bounds={"records": 31}))


_ROWS = r"""
import json, sys
import numpy as np
from collections import deque
from specs.config import make_config
from verifier.engines.kernel import search as K
from specs.kernel import Kernel
cfg = make_config(sys.argv[1])
k = Kernel(cfg)
row = k.pack(__import__("specs.actions", fromlist=["x"]).init_state(cfg))
seen, queue, out = set(), deque([row]), []
while queue and len(out) < int(sys.argv[2]):
    r = queue.popleft()
    n = k.successor_rows(r)
    for j in range(n):
        t = k.out[j].copy()
        a, b = K.row_hash(t)
        out.append([int(a), int(b)] + [int(v) for v in k.labels[j]] + [int(v) for v in t])
        if (int(a), int(b)) not in seen:
            seen.add((int(a), int(b)))
            queue.append(t)
print(json.dumps(out))
"""


@pytest.mark.parametrize("preset", ["kafka", "recovery"])
def test_interpreted_and_compiled_kernels_give_the_same_rows(preset):
    """The same functions run by CPython (NUMBA_DISABLE_JIT=1) and compiled give the same
    successor rows, labels and fingerprints."""
    def rows(interpreted: bool) -> list:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env.pop("NUMBA_DISABLE_JIT", None)
        if interpreted:
            env["NUMBA_DISABLE_JIT"] = "1"
        proc = subprocess.run([sys.executable, "-c", _ROWS, preset, "400"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout)
    compiled, interpreted = rows(False), rows(True)
    assert len(compiled) >= 400
    assert compiled == interpreted
