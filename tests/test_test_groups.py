"""`make test` runs two pytest-xdist workers with `--dist loadgroup`, and the modules that start a
cluster or a server (tests/spark/test_cluster.py, test_s3.py) rely on their group running whole
on one worker: one cluster start, never two clusters competing for the two cores. pytest 9.2
silently broke that (pytest-xdist issue 1386: the group is written into a node id field pytest
no longer reads, so grouped tests were dealt out one by one and each worker started its own
cluster). This runs a grouped module under the same options and asserts one worker ran it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

GROUPED = '''
import os, pytest
pytestmark = pytest.mark.xdist_group("cluster")

@pytest.fixture(scope="module")
def cluster():
    with open(os.environ["LOG"], "a") as log:
        log.write(f"start {os.getpid()}\\n")
    yield

@pytest.mark.parametrize("i", range(6))
def test_uses_the_cluster(cluster, i):
    with open(os.environ["LOG"], "a") as log:
        log.write(f"test {os.getpid()}\\n")
'''
OTHER = '''
import pytest
@pytest.mark.parametrize("i", range(6))
def test_other(i):
    pass
'''


def test_a_group_runs_whole_on_one_worker_with_one_fixture_start(tmp_path):
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "test_other.py").write_text(OTHER)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    log = tmp_path / "log"
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-q", "-p",
                          "no:cacheprovider", "-c", str(tmp_path / "pytest.ini"), str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, env={"LOG": str(log), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stdout + run.stderr
    lines = log.read_text().split()
    starts = [pid for what, pid in zip(lines[::2], lines[1::2]) if what == "start"]
    workers = {pid for what, pid in zip(lines[::2], lines[1::2]) if what == "test"}
    assert len(starts) == 1 and len(workers) == 1, f"the group ran on {len(workers)} workers and started " \
                                                    f"its fixture {len(starts)} times"


PROBE = '''
def pytest_collection_finish(session):
    with open(__import__("os").environ["TIERS"], "w") as out:
        for item in session.items:
            out.write(item.nodeid + "\\t" + ",".join(sorted(m.name for m in item.iter_markers())) + "\\n")
'''


def test_the_fast_tier_leaves_out_only_slow_cases_ci_runs_and_keeps_every_module(tmp_path):
    """`make test-fast` leaves out the `slow` cases; each must still run in CI (`make test` filters
    no mark but nightly) and no module goes whole to CI (the tier a developer runs touches every
    module it would have)."""
    (tmp_path / "tier_probe.py").write_text(PROBE)
    listing = tmp_path / "tiers"
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "", "-p", "tier_probe"],
                         cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ, TIERS=str(listing), PYTHONPATH=f"{tmp_path}:{ROOT}"))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = [line.split("\t") for line in listing.read_text().splitlines()]
    marks = {nodeid: set(names.split(",")) for nodeid, names in rows}
    slow = {n for n, m in marks.items() if "slow" in m and "nightly" not in m}    # a nightly case is nightly's
    assert slow, "no test is marked slow: the Makefile's tier says otherwise"
    fast_modules = {n.split("::")[0] for n, m in marks.items() if not m & {"slow", "deps", "nightly"}}
    whole = sorted({n.split("::")[0] for n in slow} - fast_modules)
    assert not whole, f"every case of {whole} is slow: the fast tier would not touch it"
    make = (ROOT / "Makefile").read_text()
    assert "-m 'not nightly and not deps and not slow'" in make.split("\ntest-fast:")[1].split("\n\n")[0]
    assert "pytest -n $(CI_WORKERS) --dist loadgroup --durations" in make.split("\ntest:")[1].split("\n\n")[0], \
        "make test must run every tier (no -m but pyproject's 'not nightly')"
