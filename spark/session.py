"""The Spark session for spark-check: quiet (no console progress bars; the JVM's own output
in a log file), checked before use so an unreachable master is one line, not a JVM stack
trace, and interruptible: Ctrl-C or SIGTERM stops the run at a level boundary with a report."""
from __future__ import annotations

import logging
import os
import re
import signal
import socket
import sys
import threading
import time
from typing import Optional
from urllib.parse import urlparse


class SparkSetupError(Exception):
    """The master cannot be reached or Spark cannot start: the CLI exits 2."""


# The JVMs only schedule tasks and carry small results (the states never enter them: see
# spark/kernel_tasks.py), so their own optimising compiler and parallel GC threads cost CPU that the
# Python workers need, for no gain.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def check_master(master: str, timeout: float = 5.0) -> None:
    try:
        _check_master(master, timeout)
    except ValueError as exc:            # urlparse on "spark://[::1:7077" and the like
        raise SparkSetupError(f"--master {master}: not a URL ({exc})") from None


def _check_master(master: str, timeout: float) -> None:
    """local[...] needs nothing but a thread count Spark accepts (local[0] or local[abc] would
    start a JVM only to fail in it); spark://host:port must accept a TCP connection."""
    if master == "local" or master.startswith("local["):
        if master != "local" and not re.fullmatch(r"local\[(\*|[1-9][0-9]*)(\s*,\s*[1-9][0-9]*)?\]", master):
            raise SparkSetupError(f"--master {master}: expected local, local[*], local[N] or local[N,F] "
                                  "with N and F >= 1")
        return
    if master.startswith("spark://"):
        for hostport in master[len("spark://"):].split(","):
            url = urlparse("spark://" + hostport)
            try:
                port = url.port
            except ValueError:         # urlparse refuses a port that is not a number
                port = None
            if not url.hostname or not port:
                raise SparkSetupError(f"--master {master}: expected spark://HOST:PORT")
            try:
                with socket.create_connection((url.hostname, port), timeout=timeout):
                    return
            except OSError as exc:
                last = exc
        raise SparkSetupError(f"cannot reach Spark master {master} ({last.strerror or last})")
    if master == "yarn":
        return
    if master.startswith("k8s://"):        # k8s://https://HOST:PORT or k8s://HOST:PORT (Spark's forms)
        api = master[len("k8s://"):]
        if not urlparse(api if "://" in api else "https://" + api).hostname:
            raise SparkSetupError(f"--master {master}: expected k8s://https://HOST:PORT (the Kubernetes API server)")
        return
    raise SparkSetupError(f"--master {master}: expected local[N], local[*], spark://HOST:PORT, yarn or k8s://...")


def under_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands Python its gateway."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def make_session(master: str = "local[*]", partitions: Optional[int] = None,
                 executor_memory: Optional[str] = None, driver_memory: Optional[str] = None,
                 app: str = "kraft-verify spark-check", log: Optional[str] = None):
    """A SparkSession; reuses a running one (tests share one local[2] session). Under
    spark-submit the master is spark-submit's. With `log`, the JVM (and the Python workers it
    starts) write their stderr there: its start-up warnings and, on an interrupt, its task
    kill reports are not the user's business, but are kept."""
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
               .config("spark.driver.extraJavaOptions", f"-Dlog4j2.level=ERROR {JVM_OPTIONS}")
               .config("spark.executor.extraJavaOptions", JVM_OPTIONS)
               .config("spark.sql.adaptive.enabled", "false")
               # a task is CPU-bound and its input is a few MB: waiting up to 3 s (Spark's
               # default) for a slot beside its data costs more than reading it from elsewhere
               .config("spark.locality.wait", "0s")
               # numpy asks for huge pages for every array of 4 MB or more; the kernel
               # executors' arrays are made and dropped by the gigabyte each level, and without
               # that a level of 6.5 million states ran 8% faster (BENCHMARKS.md, "Levels and
               # visited runs as files"). The user's own setting wins.
               .config("spark.executorEnv.NUMPY_MADVISE_HUGEPAGE", os.environ.get("NUMPY_MADVISE_HUGEPAGE", "0")))
    if partitions:
        builder = builder.config("spark.sql.shuffle.partitions", str(partitions)) \
                         .config("spark.default.parallelism", str(partitions))
    if executor_memory:
        builder = builder.config("spark.executor.memory", executor_memory)
    if driver_memory:       # read when this process launches the JVM (spark-submit's own flag sets it there)
        builder = builder.config("spark.driver.memory", driver_memory)
    # The JVM shares the driver's process group, so a SIGTERM meant for the run reaches it too
    # and its shutdown hook would stop the SparkContext under the driver. Started with SIGTERM
    # ignored (as PySpark starts it with SIGINT ignored), it keeps that, and lets the driver
    # decide (Interrupts, below); it still exits when the driver does.
    old_term = signal.signal(signal.SIGTERM, signal.SIG_IGN) if _main_thread() else None
    saved = None
    if log is not None:        # the JVM inherits fd 2 when it is launched, and keeps it
        sys.stderr.flush()
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        saved = os.dup(2)
        os.dup2(fd, 2)
        os.close(fd)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:   # the JVM's reason, on one line
        where = f" (log: {log})" if log else ""
        raise SparkSetupError(f"Spark did not start on {master}: "
                              f"{str(exc).strip().splitlines()[0][:200]}{where}") from None
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
        if saved is not None:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
    spark.sparkContext.setLogLevel("ERROR")
    # PySpark's accumulator server (a socketserver thread in this process) prints a traceback
    # to the user's terminal when the JVM's connection to it ends without a word, that is
    # when the JVM dies; the run says that itself (failure(), below), on one line
    server = getattr(spark.sparkContext, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, client_address: None
    # and py4j logs "Exception while sending command" with its traceback through Python's root
    # logger, which prints to the terminal when it has no handler: to the JVM's log instead
    if log is not None and not logging.getLogger().handlers:
        logging.getLogger().addHandler(logging.FileHandler(log))
    return spark


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class Interrupts:
    """SIGINT and SIGTERM during a run: the first cancels the running Spark job from another
    thread (never inside the handler, where a Py4J call would re-enter the socket the main
    thread is reading: that is where PySpark's own handler prints its tracebacks) and records
    the signal, so the search stops at a level boundary and reports. A second one ends the
    process at once; the checkpoint's manifest is replaced atomically, so it stays resumable."""

    def __init__(self, spark, note: str = ""):
        self.sc, self.note = spark.sparkContext, note
        self.signal: Optional[str] = None
        self.budget_spent = False
        self._old: dict = {}
        self._thread: Optional[threading.Thread] = None
        self._timer: Optional[threading.Timer] = None

    def cancel_at(self, deadline: float) -> None:
        """At time.monotonic() == deadline (the time budget), cancel the running job: the
        budget holds within seconds, not at the end of a level that may take an hour."""
        def spent():
            if self.signal is None:
                self.budget_spent = True
                self._cancel()
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), spent)
        self._timer.daemon = True
        self._timer.start()

    def __enter__(self) -> "Interrupts":
        if _main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for sig, old in self._old.items():
            signal.signal(sig, old)

    def _handle(self, signum, frame) -> None:
        if self.signal is not None:
            os.write(2, f"kraft-verify: {signal.Signals(signum).name} again: stopped at once{self.note}\n".encode())
            os._exit(3)
        self.signal = signal.Signals(signum).name
        self._thread = threading.Thread(target=self._cancel, daemon=True)
        self._thread.start()

    def settle(self) -> None:
        """Wait for the cancellation to be done, before running the jobs that write the report."""
        if self._thread is not None:
            self._thread.join()

    def _cancel(self) -> None:
        try:
            self.sc.cancelAllJobs()
        except Exception:     # the JVM is gone: the main thread sees that itself
            pass


def collect_garbage(sc) -> None:
    """Let Spark's ContextCleaner remove the shuffle files of RDDs the driver dropped. It acts
    only once the JVM has collected them, and a JVM with room to spare may not for the
    cleaner's half hour: a resume's visited set (one shuffle of every level's fingerprints)
    held 6 GB of a full disk in blockmgr-* while the run went on (BENCHMARKS.md, "A billion
    states")."""
    import gc

    from py4j.protocol import Py4JError
    try:
        for pause in (1.0, 0.0):         # measured: one round is too early, a second a second later not
            gc.collect()                 # py4j frees the JVM's side of a proxy Python collected
            sc._jvm.System.gc()
            time.sleep(pause)
    except (Py4JError, OSError):
        pass


def unpersist(rdd) -> None:
    """Free a cached RDD. When Spark's JVM has died (out of memory, killed) there is nothing
    to free, and the run must still stop with its report, not with py4j's traceback."""
    from py4j.protocol import Py4JError
    try:
        rdd.unpersist()
    except (Py4JError, OSError):
        pass


class SparkGone(Exception):
    """Spark's JVM died under the run (out of memory, killed): the run stops with the levels it
    has and a report, exit 3, as when a level's job fails for good."""


def jvm_alive() -> bool:
    """Whether this process's Spark JVM still answers (a call cut by its death surfaces as a
    plain Py4JError "An error occurred while calling ...", which says nothing of the death)."""
    from pyspark import SparkContext
    gateway = SparkContext._gateway
    if gateway is None:
        return False
    try:
        gateway.jvm.java.lang.System.nanoTime()
        return True
    except Exception:       # noqa: BLE001 -- whatever py4j raises, nothing answered
        return False


DISK_FULL = ("[Errno 28]", "No space left on device", "[Errno 122]", "Disk quota exceeded")


def failure(exc: BaseException) -> str:
    """Why a level's Spark job failed, on one line. A JVM that died under the job cannot be
    asked for its exception: say that, and where its own log is; so does a context Spark shut
    down itself, whose cancelled job names no cause. A Python worker's exception is its
    traceback's last line, and a disk that filled says so and what to free."""
    from py4j.protocol import Py4JNetworkError
    from spark.hadoopfs import reason
    why = "(spark.log in the run's directory says why; out of memory: give it more with --driver-memory on a " \
          "local master, --executor-memory on a cluster)"
    gone = f"Spark's JVM exited under the job {why}"
    if isinstance(exc, OSError) and not isinstance(exc, ConnectionError):      # the driver's own files
        return disk_full(f"{type(exc).__name__}: {exc}", "on the driver")
    cause = worker_cause(getattr(exc, "_desc", None))
    if cause:
        return disk_full(cause, "in a task")
    if isinstance(exc, (Py4JNetworkError, ConnectionError)) or not jvm_alive():
        return gone
    try:
        text = reason(exc)
        whole = str(exc)        # the job's message: the failed task's, a Python worker's traceback in it
    except Exception:       # noqa: BLE001 -- asking the dead JVM for the cause fails too
        return gone
    cause = worker_cause(whole)
    if cause:               # the worker's exception, not the innermost Java cause (an EOF as it died)
        return disk_full(cause, "in a task")
    if "SparkContext was shut down" in text:     # Spark stopped itself (an executor thread out of heap)
        return f"{text} {why}"
    return disk_full(text, "in Spark's own scratch") if any(m in whole for m in DISK_FULL) else text


def worker_cause(desc) -> str:
    """The exception line of the last Python traceback in a Spark exception's description (a
    Python worker's failure, pyspark's PythonException), or ''."""
    if not isinstance(desc, str):
        return ""
    lines = desc.split("JVM stacktrace:")[0].splitlines()
    starts = [i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line]
    if not starts:
        return ""
    for line in lines[starts[-1] + 1:]:     # the frames are indented; the exception's line is not
        if line.strip() and not line[:1].isspace() and not line.startswith("^"):
            return " ".join(line.split())[:300]
    return ""


def disk_full(cause: str, where: str, sure: bool = False) -> str:
    """`cause`, and if it is a disk that filled (or `sure`), what to free before a resume."""
    if sure or any(mark in cause for mark in DISK_FULL):
        what = "disk budget reached" if "disk budget" in cause else "disk full"     # spark/exchange.room's, or the disk's
        return (f"{what} {where} ({cause}): free room where Spark keeps its scratch (SPARK_LOCAL_DIRS, else "
                f"spark.local.dir: the levels' blocks and visited runs) or on the store's disk")
    return cause
