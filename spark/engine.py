"""The Spark engine: the exhaustive search of verifier/engines/bfs/ sharded over Spark
executors (the level loop is spark/explore.py, the executors' work spark/tasks.py, the level
store spark/store.py). Called like every engine, `run(model, properties, settings)`; what only
Spark needs (the session, the checkpoint store, partitions) is in `settings.engine`.
"""
from __future__ import annotations

import uuid
from typing import Callable, Optional

from spark.explore import _Run
from spark.hadoopfs import HadoopFs
from spark.session import Interrupts, SparkGone
from spark.store import HadoopLevels, LevelStore, SparkLevels
from spark.tasks import Job
from verifier.core.result import SearchResult
from verifier.core.settings import Limits, Settings

DRIVER_LEVELS = 5000      # levels smaller than this are expanded on the driver (see spark_explore)


def run(model, properties, settings: Settings = Settings(), progress=None) -> SearchResult:
    """`settings.engine`: `spark` (the session), `store` (a claimed LevelStore or None),
    `resume`, `partitions`, `driver_levels`, `on_level`; `progress` is called once per level
    with (level, new states, total, states/s, seconds)."""
    e = settings.engine
    return spark_explore(e["spark"], model, properties, e.get("store"), e.get("resume", False), settings.limits,
                         settings.options.keep_going, settings.options.check_deadlock, e.get("partitions"),
                         progress, e.get("on_level"), e.get("driver_levels", DRIVER_LEVELS))


class Progress:
    """One line per level on the driver."""

    def __init__(self, console, quiet: bool):
        self.console, self.quiet = console, quiet

    def __call__(self, level: int, new: int, total: int, rate: float, elapsed: float) -> None:
        if not self.quiet:
            self.console.print(f"level {level:>3}: {new:>10,} new  {total:>12,} total  "
                               f"{rate:>9,.0f} states/s  {elapsed:>8.1f}s elapsed", markup=False)


def spark_explore(spark, model, invariants, store: Optional[LevelStore] = None, resume: bool = False,
                  limits: Limits = Limits(), keep_going: bool = True, check_deadlock: bool = True,
                  partitions: Optional[int] = None, progress: Optional[Callable] = None,
                  on_level: Optional[Callable[[int], None]] = None, driver_levels: int = DRIVER_LEVELS) -> SearchResult:
    """BFS from the model's initial states on Spark. With `store` (a claimed --checkpoint-dir)
    the levels go there and a killed run resumes from them; without, to Spark's checkpoint
    directory if one is set (removed at the end), else they stay in Spark. A resumed run keeps
    the partition count it was started with (owners are fp mod P). A level of fewer than
    `driver_levels` states is expanded on the driver, by the same task functions: a Spark job
    costs a good part of a second however small, more than such a level's work."""
    invariants = tuple(invariants)
    note = f"; --resume --checkpoint-dir {store.where} continues from the last complete level" if store else ""
    manifest = store.load() if store is not None and resume else None
    if manifest:
        partitions = manifest["partitions"]
    partitions = partitions or spark.sparkContext.defaultParallelism
    levels = temporary_levels(spark, partitions) if store is None else HadoopLevels(spark, store.fs, partitions)
    run = None
    try:
        job = Job(model, invariants, check_deadlock, partitions)
        with Interrupts(spark, note) as interrupts:
            run = _Run(spark, model, job, store, levels, progress, on_level, interrupts)
            run.driver_levels = driver_levels
            try:
                return run.go(manifest, limits, keep_going, invariants)
            except SparkGone as gone:        # between two levels' jobs (a level's own job: explore.py)
                return run.stopped(str(gone), invariants, keep_going)
            except Exception:
                if interrupts.signal is None:
                    raise
                # cancelled outside a level (checking a resumed level, rebuilding a trace): no
                # report to write, the checkpoint is as the last level left it
                raise KeyboardInterrupt from None
    finally:
        if run is not None:
            run.release()
        levels.close()


def temporary_levels(spark, partitions: int):
    """Spark's checkpoint directory (a location every executor reaches, by its definition),
    else Spark itself: never the driver's own disk."""
    sc = spark.sparkContext
    where = sc.getCheckpointDir() or sc.getConf().get("spark.checkpoint.dir", None)
    if where:
        fs = HadoopFs(spark, f"{where.rstrip('/')}/kraft-verify-{uuid.uuid4().hex[:12]}")
        fs.prepare()
        levels = HadoopLevels(spark, fs, partitions, temporary=True)
        levels.probe()
        return levels
    return SparkLevels(spark, partitions)


