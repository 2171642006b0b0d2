"""What spark/session.py promises a run: the shuffle files of an RDD it dropped leave the disk."""
from __future__ import annotations

import time
from pathlib import Path

from spark.session import collect_garbage


def _shuffle_files(sc) -> set:
    dirs = sc._jvm.org.apache.spark.SparkEnv.get().blockManager().diskBlockManager().localDirs()
    return {p for d in dirs for p in Path(d.getPath()).rglob("shuffle_*.data")}


def test_a_dropped_rdds_shuffle_files_go_once_the_garbage_is_collected(spark_session):
    """A resume's visited set is one shuffle of every level's fingerprints; unpersisted, its
    files stayed on the disk while the run went on (6 GB in BENCHMARKS.md, "A billion
    states"), until the JVM happened to collect the RDD."""
    sc = spark_session.sparkContext
    before = _shuffle_files(sc)
    rdd = sc.parallelize(range(20000), 2).map(lambda x: (x, x)).partitionBy(2).persist()
    assert rdd.count() == 20000
    made = _shuffle_files(sc) - before
    assert made, "the shuffle wrote no files to look for"
    rdd.unpersist()
    del rdd
    collect_garbage(sc)
    deadline = time.monotonic() + 20
    while made & _shuffle_files(sc) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not made & _shuffle_files(sc)
