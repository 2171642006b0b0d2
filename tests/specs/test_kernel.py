"""The kernel is the model's one copy of its steps and properties (specs/kernel,
specs/kernel/properties.py): the same functions compiled and interpreted (NUMBA_DISABLE_JIT=1) must
give the same rows, labels, guards, errors and verdicts on every preset, every mutant and
configs that switch every action on (tests/specs/kernel_diff.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specs.config import make_config
from specs.kernel import Kernel, KernelUnsupported
from tests.specs.kernel_diff import configs

ROOT = Path(__file__).resolve().parents[2]
NAMES = [name for name, _ in configs()]
# one test process: the digests (a compiled and an interpreted run over every config, about 35 s
# of CPU) are made once, not once by each process that draws one of the cases
pytestmark = pytest.mark.xdist_group("kernel-digests")


def _start(interpreted: bool, limit: int, names=()) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_DISABLE_JIT", None)
    if interpreted:
        env["NUMBA_DISABLE_JIT"] = "1"
    return subprocess.Popen([sys.executable, str(ROOT / "tests" / "specs" / "kernel_diff.py"), str(limit), *names],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _answer(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=1200)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out)


def _digests(interpreted: bool, limit: int, names=()) -> dict:
    return _answer(_start(interpreted, limit, names))


@pytest.fixture(scope="module")
def compiled_digests():
    return _digests(False, 150)


@pytest.fixture(scope="module")
def digests(compiled_digests):
    """The compiled digests and the interpreted ones (the long run: `make test-fast` leaves it
    out, and the test that only reads the compiled digests never waits for it)."""
    return compiled_digests, _digests(True, 150)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_compiled_and_interpreted_kernels_agree(digests, name):
    compiled, interpreted = digests
    assert len(compiled[name]) == 150
    for a, b in zip(compiled[name], interpreted[name]):
        assert a == b, f"{name}: compiled and interpreted differ at row {a['row']}"
    assert all(step["same"] for entry in compiled[name] for step in entry["steps"]), \
        "a step by label differs from the successor it labels"


def test_the_comparison_catches_a_difference(compiled_digests):
    """The digests are not vacuous: they hold rows, steps and verdicts that differ between
    states, and one changed value makes two digests differ."""
    entries = compiled_digests["preset-kafka"]
    assert len({json.dumps(e["row"]) for e in entries}) == len(entries)
    assert sum(len(e["steps"]) for e in entries) > 300
    changed = json.loads(json.dumps(entries))
    changed[100]["steps"][0]["row"][0] += 1
    assert changed != entries


def test_a_mutant_changes_the_rows():
    """A rule switch reaches the compiled code: a mutant's digest differs from Kafka's."""
    d = _digests(False, 400, ["preset-kafka", "mutant-follower-no-truncate"])
    assert d["preset-kafka"] != d["mutant-follower-no-truncate"]


def test_the_kernel_refuses_what_it_cannot_hold():
    from specs.actions import init_state
    from verifier.core.exitcodes import InputError
    from verifier.engines import kernel as engine
    cfg = make_config(bounds={"records": 31})
    with pytest.raises(InputError, match="records=31"):
        engine.refuse(__import__("specs").Model(cfg, symmetry=False), (), __import__("verifier.core.settings",
                      fromlist=["x"]).Settings())
    k = Kernel(cfg)
    s = init_state(cfg)
    s = s._replace(hist=s.hist._replace(acked=(31,)))
    with pytest.raises(KernelUnsupported, match="record id"):
        k.pack(s)
