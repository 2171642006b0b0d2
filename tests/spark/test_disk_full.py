"""spark-check on a disk that fills under a level's job: one line, exit 3, a report, and a
checkpoint that resumes once there is room, to the counts of a run that had room. (The
billion run's part 3 filled this machine's disk in level 23 and ended in a traceback, exit 1:
a Python worker's OSError reached the driver as pyspark's PythonException, which nothing
caught.)"""
from __future__ import annotations

import json
import subprocess

import pytest

from spark.session import disk_full, worker_cause
from tests.conftest import run_cli, tmpfs

CFG = ("--max-depth", "13")


def _summary(out):
    return json.loads(next(out.glob("*/summary.json")).read_text())


@pytest.fixture
def small_scratch(tmp_path):
    """Spark's scratch (SPARK_LOCAL_DIRS: the exchange's levels, visited runs and catalogue) on
    a tmpfs of 1 MB, unmounted after."""
    with tmpfs(tmp_path / "scratch", "1m") as where:
        yield where


def test_a_scratch_disk_that_fills_stops_in_one_line_and_resumes_once_there_is_room(tmp_path, small_scratch):
    want = run_cli("check", *CFG, "-q", "--out", str(tmp_path / "o0"))
    assert want.returncode == 3, want.stdout + want.stderr            # the depth bound
    want = _summary(tmp_path / "o0")["counts"]["states_per_level"]
    ck, env = tmp_path / "ck", {"SPARK_LOCAL_DIRS": str(small_scratch)}
    args = ("spark-check", *CFG, "--master", "local[2]", "--partitions", "2", "--checkpoint-dir", str(ck))
    full = run_cli(*args, "--out", str(tmp_path / "o1"), env=env)
    assert full.returncode == 3, full.stdout + full.stderr
    assert "Traceback" not in full.stdout + full.stderr
    reason = _summary(tmp_path / "o1")["stop_reason"]
    assert "--resume" in reason and "SPARK_LOCAL_DIRS" in reason, reason
    # the disk's budget (2 GB spare, as check's) stops the first write, before the disk fills
    assert "disk budget reached" in reason and "less than 2 GB of its disk free" in reason, reason
    assert "disk full" not in reason, reason
    assert "\n" not in reason and reason in full.stdout + full.stderr
    # room: the budget's 2 GB and the run's few MB (a tmpfs takes memory only for what it holds)
    subprocess.run(["mount", "-o", "remount,size=2200m", str(small_scratch)], check=True)
    again = run_cli(*args, "--resume", "--out", str(tmp_path / "o2"), env=env)
    assert again.returncode == 3, again.stdout + again.stderr        # the depth bound again
    assert "resuming" in again.stdout
    assert _summary(tmp_path / "o2")["counts"]["states_per_level"] == want


def test_a_workers_traceback_is_its_last_line_and_a_full_disk_says_what_to_free():
    desc = ("An exception was thrown from the Python worker. Please see the stack trace below.\n"
            "Traceback (most recent call last):\n"
            '  File "/x/spark/exchange.py", line 208, in add\n'
            "    f.write(block)\n"
            "^^^^^^^^^^^^^^^\n"
            "OSError: [Errno 28] No space left on device\n\n"
            "JVM stacktrace:\norg.apache.spark.SparkException: Job aborted\n\tat org.apache.spark.Foo(Foo.scala:1)\n")
    cause = worker_cause(desc)
    assert cause == "OSError: [Errno 28] No space left on device"
    said = disk_full(cause, "in a task")
    assert said.startswith("disk full in a task (OSError: [Errno 28]") and "SPARK_LOCAL_DIRS" in said
    assert disk_full("BadData: a record cut short", "in a task") == "BadData: a record cut short"
    budget = "OSError: [Errno 28] disk budget: 8 bytes more in /x would leave less than 2 GB of its disk free"
    assert disk_full(budget, "in a task").startswith(f"disk budget reached in a task ({budget})")
    assert worker_cause("no traceback here") == "" and worker_cause(None) == ""
    java = ("org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 5.0 failed 1 times, "
            "most recent failure: org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was "
            "thrown from the Python worker: Traceback (most recent call last):\n"
            '  File "/x/spark/local_files.py", line 156, in owned\n'
            "    write_framed(files.rows(level, owner), whole)\n"
            "OSError: [Errno 28] No space left on device\n\n"
            "\tat org.apache.spark.api.python.BasePythonRunner.handle(PythonRunner.scala:1)\n"
            "Caused by: java.io.EOFException\n")
    assert worker_cause(java) == "OSError: [Errno 28] No space left on device"
