"""`make test` runs two pytest-xdist workers with `--dist loadgroup`, and the modules that start a
cluster or a server (tests/spark/test_cluster.py, test_s3.py) rely on their group running whole
on one worker: one cluster start, never two clusters competing for the two cores. pytest 9.2
silently broke that (pytest-xdist issue 1386: the group is written into a node id field pytest
no longer reads, so grouped tests were dealt out one by one and each worker started its own
cluster). This runs a grouped module under the same options and asserts one worker ran it."""
from __future__ import annotations

import subprocess
import sys

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
