"""What spark/session.py promises a run: the shuffle files of an RDD it dropped leave the disk."""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

from spark.session import Interrupts, collect_garbage


def _shuffle_files(sc) -> set:
    """Every shuffle file under the session's local directories (Spark's blockmgr-*)."""
    roots = sc.getConf().get("spark.local.dir", os.environ.get("SPARK_LOCAL_DIRS", tempfile.gettempdir()))
    return {p for root in roots.split(",") for p in Path(root).glob("blockmgr-*/*/shuffle_*.data")}


def test_a_dropped_rdds_shuffle_files_go_once_the_garbage_is_collected(spark_session):
    """A resume's visited set is one shuffle of every level's fingerprints; unpersisted, its
    files stayed on the disk while the run went on (6 GB in BENCHMARKS.md, "A billion
    states"), until the JVM happened to collect the RDD."""
    sc = spark_session.sparkContext
    before = _shuffle_files(sc)
    rdd = sc.parallelize(range(20000), 2).map(lambda x: (x, x)).partitionBy(2).persist()
    count = rdd.count()                  # not in an assert: pytest's rewrite would keep a reference to rdd
    assert count == 20000
    made = _shuffle_files(sc) - before
    assert made, "the shuffle wrote no files to look for"
    rdd.unpersist()
    del rdd
    collect_garbage(sc)
    deadline = time.monotonic() + 20
    while made & _shuffle_files(sc) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not made & _shuffle_files(sc)


def test_the_time_budget_cancels_a_running_spark_job(spark_session):
    """The budget holds within seconds, not at the end of a level that may take an hour: the
    Interrupts' timer cancels the job that runs when it fires (a job that would sleep 120 s)."""
    with Interrupts(spark_session) as interrupts:
        interrupts.cancel_at(time.monotonic() + 2)
        t0 = time.monotonic()
        with pytest.raises(Exception, match="cancel"):
            spark_session.sparkContext.parallelize(range(2), 2).foreach(lambda _: time.sleep(120))
    assert interrupts.budget_spent and time.monotonic() - t0 < 100
