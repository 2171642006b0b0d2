"""The Spark session for spark-check: quiet (no console progress bars, warnings only),
and checked before use so an unreachable master is one line, not a JVM stack trace."""
from __future__ import annotations

import os
import socket
import sys
from typing import Optional
from urllib.parse import urlparse


class SparkSetupError(Exception):
    """The master cannot be reached or Spark cannot start: the CLI exits 2."""


def check_master(master: str, timeout: float = 5.0) -> None:
    """local[...] needs nothing; spark://host:port must accept a TCP connection."""
    if master == "local" or master.startswith("local["):
        return
    if master.startswith("spark://"):
        for hostport in master[len("spark://"):].split(","):
            url = urlparse("spark://" + hostport)
            if not url.hostname or not url.port:
                raise SparkSetupError(f"--master {master}: expected spark://HOST:PORT")
            try:
                with socket.create_connection((url.hostname, url.port), timeout=timeout):
                    return
            except OSError as exc:
                last = exc
        raise SparkSetupError(f"cannot reach Spark master {master} ({last.strerror or last})")
    if master in ("yarn",) or master.startswith("k8s://"):
        return
    raise SparkSetupError(f"--master {master}: expected local[N], local[*], spark://HOST:PORT, yarn or k8s://...")


def under_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands Python its gateway."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def make_session(master: str = "local[*]", partitions: Optional[int] = None,
                 executor_memory: Optional[str] = None, app: str = "kraft-verify spark-check"):
    """A SparkSession; reuses a running one (tests share one local[2] session). Under
    spark-submit the master is spark-submit's."""
    if not under_spark_submit():
        check_master(master)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder if under_spark_submit() else SparkSession.builder.master(master)
    builder = (builder.appName(app)
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.ansi.enabled", "false")
               .config("spark.python.worker.reuse", "true")
               .config("spark.driver.extraJavaOptions", "-Dlog4j2.level=ERROR")
               .config("spark.sql.adaptive.enabled", "false"))
    if partitions:
        builder = builder.config("spark.sql.shuffle.partitions", str(partitions)) \
                         .config("spark.default.parallelism", str(partitions))
    if executor_memory:
        builder = builder.config("spark.executor.memory", executor_memory)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:   # the JVM's reason, on one line
        raise SparkSetupError(f"Spark did not start on {master}: {str(exc).strip().splitlines()[0][:200]}") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark
