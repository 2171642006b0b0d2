"""The Spark engine: check's exhaustive search (the compiled kernel's rules) sharded over Spark
executors (the level loop is spark/explore.py, the executors' work on the compiled kernel
spark/kernel_tasks.py, the level store spark/store.py). Called like every engine,
`run(model, properties, settings)`; what only
Spark needs (its master, memory, partitions, the checkpoint location) is its `Knobs`, and
`refuse` checks what can be checked before a JVM starts. The command line reaches this module
only through its binding (verifier/cli/binding.py).
"""
from __future__ import annotations

import os
import re
import uuid
from typing import Any, Callable, Optional

from spark.exchange import Exchange, by_file
from spark.explore import _Run
from spark.hadoopfs import HadoopFs
from spark.local_files import FileLevels, Files
from spark.session import Interrupts, SparkGone, SparkSetupError
from spark.store import MAX_PARTITIONS, HadoopLevels, LevelStore, SparkLevels
from verifier.core import knobs
from verifier.core.checkpoint import CheckpointError, identity_of
from verifier.core.exitcodes import InputError
from verifier.core.result import Progress, SearchResult
from verifier.core.settings import Limits, Settings

DRIVER_LEVELS = 5000      # levels smaller than this are expanded on the driver (see spark_explore)
ROWS_EVERY = 300.0        # seconds between two levels whose rows a local master's store keeps (spark/chain.py)
TASKS = ("auto", "kernel")
EXCHANGES = ("auto", "shuffle")
SIZE = re.compile(r"[1-9][0-9]*([kmgtp]b?|b)?", re.IGNORECASE)   # Spark's own (JavaUtils.byteStringAs)


@knobs.declare("spark")
class Knobs(knobs.Knobs):
    master: str = "local[*]"  # a Spark master URL (spark-submit's own under spark-submit)
    partitions: Optional[int] = None  # owners of the visited set (None: the default parallelism)
    executor_memory: Optional[str] = None  # e.g. 4g
    driver_memory: Optional[str] = None  # e.g. 2g
    driver_levels: int = DRIVER_LEVELS  # levels smaller than this run on the driver
    checkpoint_dir: Optional[str] = None  # a path or Hadoop URL the levels go to (resumable)
    resume: bool = False  # continue the run in checkpoint_dir from its last good level
    rows_every: float = ROWS_EVERY  # seconds between two levels whose rows a local master's store keeps
    log: Optional[str] = None  # where the JVM's stderr goes
    session: Any = None  # a SparkSession to use (None: made from master)
    store: Any = None  # a LevelStore already claimed (a session serving several runs), else checkpoint_dir's
    on_level: Optional[Callable] = None  # called with each level committed
    tasks: str = "auto"  # what executors run: the compiled kernel (auto and kernel alike)
    exchange: str = "auto"  # how the kernel's blocks reach owners: shuffle, or auto (files on a local master)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.partitions is not None and not 1 <= self.partitions <= MAX_PARTITIONS:
            # each partition is a file per level in the store, and a shuffle partition
            raise knobs.KnobError(f"--partitions must be between 1 and {MAX_PARTITIONS}, got {self.partitions}")
        for option, size in (("--executor-memory", self.executor_memory), ("--driver-memory", self.driver_memory)):
            if size is not None and not SIZE.fullmatch(size):
                raise knobs.KnobError(f"{option} {size}: expected a size such as 512m or 4g")
        if not 0 <= self.rows_every < float("inf"):
            raise knobs.KnobError(f"--checkpoint-every must be a finite number of seconds, at least 0, got {self.rows_every}")
        if self.driver_levels < 0:
            raise knobs.KnobError("--driver-levels must be >= 0")
        if self.tasks not in TASKS:
            raise knobs.KnobError(f"--engine {self.tasks}: expected one of {', '.join(TASKS)}")
        if self.exchange not in EXCHANGES:
            raise knobs.KnobError(f"exchange {self.exchange}: expected one of {', '.join(EXCHANGES)}")
        if self.resume and not (self.checkpoint_dir or self.store):
            raise knobs.KnobError("--resume needs --checkpoint-dir")


def refuse(model, properties, settings: Settings) -> None:
    """What can be refused before Spark starts (InputError, exit 2): a master that cannot be
    reached, a key that cannot be had (it signs the manifest), a local checkpoint path's faults
    and its manifest's refusals."""
    from spark.session import check_master, under_spark_submit
    from verifier.core.checkpoint import LocalFiles
    own = Knobs.of(settings)
    tasks = tasks_of(model, properties, own.tasks)      # InputError for --engine kernel on what it cannot run
    where = own.checkpoint_dir
    if where and is_plain_path(where):
        absolute = os.path.abspath(where)
        try:
            absolute.encode("utf-8")
        except UnicodeEncodeError:      # Hadoop's URI of it would not name it (a non-UTF-8 working directory)
            raise InputError(f"--checkpoint-dir {where}: its absolute path "
                             f"{os.fsencode(absolute).decode('utf-8', 'backslashreplace')} is not valid UTF-8; "
                             f"give a path without such bytes") from None
    try:
        if not under_spark_submit():     # before the JVM starts
            check_master(own.master)
        if where:                       # the key signs the manifest: one that cannot be had is refused now
            from verifier.core.signing import key
            key()                       # KeyError_: one line, exit 2 (verifier/cli/__init__.py)
        if where and is_plain_path(where):
            LevelStore(LocalFiles(where), identity(model, properties, settings.options, tasks)).refusal(own.resume)
    except (SparkSetupError, CheckpointError) as exc:
        raise InputError(str(exc)) from None


def run(model, properties, settings: Settings = Settings(), progress=None) -> SearchResult:
    """The engine interface: the session (made from the knobs unless one is given), the
    checkpoint location claimed, then the search. `progress` gets a note saying where the run
    goes, then one `Progress` per level (with `level_seconds`)."""
    own = Knobs.of(settings)
    tasks = tasks_of(model, properties, own.tasks)
    try:
        spark = own.session or make_session(own)
    except SparkSetupError as exc:
        raise InputError(str(exc)) from None
    partitions = own.partitions or spark.sparkContext.defaultParallelism
    store, manifest = own.store, None
    if own.checkpoint_dir and store is None:
        try:
            store, manifest = claim(spark, own.checkpoint_dir, identity(model, properties, settings.options, tasks),
                                    own.resume, partitions)
        except InputError:       # refused before any level: no run directory holding only its log
            if own.session is None:         # a session it was handed is its owner's to stop
                spark.stop()
            if own.log and os.path.exists(own.log):
                os.unlink(own.log)
            raise

    def note(text: str) -> None:
        if progress:
            progress(Progress(0, 0, 0, 0, 0.0, note=text))

    if manifest and manifest["partitions"] != partitions:     # owners are fp mod P: a run keeps its P
        note(f"note: resuming with the run's {manifest['partitions']} partitions, not {partitions}")
        partitions = manifest["partitions"]
    files = tasks == "kernel" and own.exchange == "auto" and by_file(spark.sparkContext.master)
    note(f"spark: master={spark.sparkContext.master} partitions={partitions} "
         f"symmetry={'on' if model.symmetric else 'off'} executors={tasks} "
         f"exchange={'files' if files else 'shuffle'} "
         f"checkpoint={own.checkpoint_dir or '(in Spark)'}{' (resuming)' if own.resume else ''}")
    try:
        return spark_explore(spark, model, properties, store, own.resume, settings.limits,
                             settings.options.keep_going, settings.options.check_deadlock, partitions,
                             progress, own.on_level, own.driver_levels, tasks, own.exchange, own.rows_every)
    except CheckpointError as exc:       # the store failed under the run (a NameNode gone for good)
        raise InputError(str(exc)) from None


def tasks_of(model, properties, asked: str) -> str:
    """"kernel": what the executors run (the compiled kernel, with symmetry reduction when the
    model has it); InputError, one line, for what the kernel cannot check (since issue 57 no
    interpreted executors stand behind it)."""
    from specs.kernel import unsupported
    why = unsupported(model, tuple(properties), symmetry=True)
    if why:
        raise InputError(f"spark-check: {why}")
    return "kernel"


def identity(model, properties, options, tasks: str) -> dict:
    """A checkpoint's identity: the run's (verifier/core/checkpoint.py), and which executors
    wrote its chunks (the two paths' chunks are different records)."""
    return dict(identity_of(model, properties, options), executors=tasks)


def make_session(own: Knobs):
    from spark.session import make_session as session
    return session(own.master, own.partitions, own.executor_memory, own.driver_memory, log=own.log)


def is_plain_path(location: str) -> bool:
    return not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", location)


def claim(spark, location: str, identity: dict, resume: bool, partitions: int):
    """The checkpoint location, claimed for this run and checked usable by the executors
    (before the first level): (LevelStore, the manifest to resume or None). InputError if not."""
    from spark.hadoopfs import open_store
    try:
        fs = open_store(spark, location)
        store = LevelStore(fs, identity)
        manifest = store.claim(resume)
        HadoopLevels(spark, fs, partitions).probe()
    except CheckpointError as exc:
        raise InputError(str(exc)) from None
    return store, manifest


def spark_explore(spark, model, invariants, store: Optional[LevelStore] = None, resume: bool = False,
                  limits: Limits = Limits(), keep_going: bool = True, check_deadlock: bool = True,
                  partitions: Optional[int] = None, progress: Optional[Callable] = None,
                  on_level: Optional[Callable[[int], None]] = None, driver_levels: int = DRIVER_LEVELS,
                  tasks: str = "auto", exchange: str = "auto", rows_every: float = ROWS_EVERY) -> SearchResult:
    """BFS from the model's initial states on Spark. With `store` (a claimed --checkpoint-dir)
    the levels go there and a killed run resumes from them; without, to Spark's checkpoint
    directory if one is set (removed at the end), else they stay in Spark (or in files,
    below). A resumed run keeps the partition count it was started with (owners are fp mod
    P). A level of fewer than
    `driver_levels` states is expanded on the driver, by the same task functions: a Spark job
    costs a good part of a second however small, more than such a level's work. On the
    kernel's path with a local master, `exchange` "auto" sends the successor blocks to their
    owners by file (spark/exchange.py), "shuffle" through Spark's shuffle (as on a cluster);
    by file, the owners' visited runs and the levels are files too (spark/local_files.py)."""
    invariants = tuple(invariants)
    note = f"; --resume --checkpoint-dir {store.where} continues from the last complete level" if store else ""
    manifest = store.load() if store is not None and resume else None
    if manifest:
        partitions = manifest["partitions"]
    partitions = partitions or spark.sparkContext.defaultParallelism
    tasks_of(model, invariants, tasks)                 # InputError for what the kernel cannot check
    shared = Exchange.open(spark.sparkContext) if exchange == "auto" else None
    files = Files(shared.root, partitions) if shared is not None else None
    run = levels = None
    try:
        if store is not None:
            levels = HadoopLevels(spark, store.fs, partitions)
        else:
            levels = FileLevels(files) if files is not None else temporary_levels(spark, partitions)
        from spark.kernel_tasks import KernelJob
        job = KernelJob(model, invariants, check_deadlock, partitions)
        # A level kept in a store or in Spark is squeezed (spark/rows.py): it stays to the
        # run's end, a checkpoint's size is what bounds a night's run on one disk. Kept as
        # local files with no store, a level is read once more and then only by a trace
        # walk: raw, since squeezing cost that fastest path about 5% (BENCHMARKS.md,
        # "Squeezed rows"), and a run meant to be large keeps a checkpoint.
        job.squeeze = store is not None or files is None
        # A local master's levels are expanded from their owners' memory (spark/chain.py):
        # afterwards a level serves only a trace's walk back and a resume's visited set, so
        # its chunks are links; a store also keeps the chunks with their rows of its last two
        # levels, the ones a resume can expand (spark/store.py).
        job.links = files is not None
        job.rows = store is not None and files is not None
        with Interrupts(spark, note) as interrupts:
            run = _Run(spark, model, job, store, levels, progress, on_level, interrupts)
            run.driver_levels, run.rows_every = driver_levels, rows_every
            run.exchange, run.files = shared, files
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
            run.copying.abandon()        # a copy still running (the run failed) must not outlive the JVM
            run.release()
        if levels is not None:
            levels.close()
        if shared is not None:
            shared.close()


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


