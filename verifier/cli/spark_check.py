"""`kraft-verify spark-check`: the exhaustive search sharded over Spark executors (spark/)."""
from __future__ import annotations

import argparse
import os
import re

from spark.store import MAX_PARTITIONS, LevelStore
from specs import Model
from verifier.cli.common import UsageError, console, header_line, run_dir
from verifier.cli.search import report_search, search_inputs


def run(args: argparse.Namespace) -> int:
    from spark.session import SparkSetupError, check_master, make_session, under_spark_submit
    from verifier.core.checkpoint import CheckpointError, LocalFiles
    from specs import config_summary
    inputs = search_inputs(args)
    cfg, invs = inputs.cfg, inputs.invariants
    if args.resume and not args.checkpoint_dir:
        raise UsageError("--resume needs --checkpoint-dir")
    if args.partitions is not None and not 1 <= args.partitions <= MAX_PARTITIONS:
        # each partition is a file per level in the store, and a shuffle partition
        raise UsageError(f"--partitions must be between 1 and {MAX_PARTITIONS}, got {args.partitions}")
    if args.driver_levels is not None and args.driver_levels < 0:
        raise UsageError("--driver-levels must be >= 0")
    # Spark's own size syntax (JavaUtils.byteStringAs), checked here: Spark would find it in the JVM
    for option, size in (("--executor-memory", args.executor_memory), ("--driver-memory", args.driver_memory)):
        if size is not None and not re.fullmatch(r"[1-9][0-9]*([kmgtp]b?|b)?", size, re.IGNORECASE):
            raise UsageError(f"{option} {size}: expected a size such as 512m or 4g")
    model = Model(cfg, symmetry=inputs.symmetry)
    identity = {"what": cfg.preset + (f" --mutant {cfg.mutant}" if cfg.mutant else ""),
                "config": config_summary(cfg), "symmetry": model.symmetric, "deadlock": inputs.deadlock,
                "invariants": [inv.name for inv in invs]}
    if args.checkpoint_dir and is_plain_path(args.checkpoint_dir):
        where = os.path.abspath(args.checkpoint_dir)
        try:
            where.encode("utf-8")
        except UnicodeEncodeError:      # Hadoop's URI of it would not name it (a non-UTF-8 working directory)
            raise UsageError(f"--checkpoint-dir {args.checkpoint_dir}: its absolute path "
                             f"{os.fsencode(where).decode('utf-8', 'backslashreplace')} is not valid UTF-8; "
                             f"give a path without such bytes") from None
    try:
        if not under_spark_submit():     # before the JVM starts
            check_master(args.master)
        if args.checkpoint_dir:         # the key signs the manifest: one that cannot be had is refused now
            from verifier.core.signing import key
            key()                       # KeyError_: one line, exit 2 (verifier/cli/__init__.py)
        if args.checkpoint_dir and is_plain_path(args.checkpoint_dir):
            # a path's faults and the manifest's refusals, without starting Spark
            LevelStore(LocalFiles(args.checkpoint_dir), identity).refusal(args.resume)
    except (SparkSetupError, CheckpointError) as exc:
        raise UsageError(str(exc)) from None
    out = console()
    run_id, out_dir = run_dir(args.out, "spark-check", cfg)
    out.print(header_line("spark-check", cfg), markup=False)
    try:
        spark = make_session(args.master, args.partitions, args.executor_memory, args.driver_memory,
                             log=str(out_dir / "spark.log"))
    except SparkSetupError as exc:
        raise UsageError(str(exc)) from None
    from spark.engine import DRIVER_LEVELS, Progress
    from verifier.cli.binding import engine
    from verifier.core.settings import Options, Settings
    partitions = args.partitions or spark.sparkContext.defaultParallelism
    store, manifest = None, None
    if args.checkpoint_dir:
        try:
            store, manifest = claim(spark, args.checkpoint_dir, identity, args.resume, partitions)
        except UsageError:       # refused before any level: no run directory holding only spark.log
            spark.stop()
            (out_dir / "spark.log").unlink(missing_ok=True)
            raise
    if manifest and manifest["partitions"] != partitions:     # owners are fp mod P: a run keeps its P
        out.print(f"note: resuming with the run's {manifest['partitions']} partitions, not {partitions}",
                  markup=False)
        partitions = manifest["partitions"]
    out.print(f"spark: master={spark.sparkContext.master} partitions={partitions} "
              f"symmetry={'on' if model.symmetric else 'off'} "
              f"checkpoint={args.checkpoint_dir or '(in Spark)'}{' (resuming)' if args.resume else ''}",
              markup=False)
    try:
        settings = Settings(limits=inputs.limits, options=Options(check_deadlock=inputs.deadlock,
                                                                  keep_going=not inputs.stop_at_first),
                            engine={"spark": spark, "store": store, "resume": args.resume, "partitions": partitions,
                                    "driver_levels": DRIVER_LEVELS if args.driver_levels is None else args.driver_levels})
        result = engine("spark")(model, invs, settings, Progress(out, args.quiet))
    except CheckpointError as exc:       # the store failed under the run (a NameNode gone for good)
        raise UsageError(str(exc)) from None
    return report_search(args, out, "spark", model, invs, result, run_id, out_dir)


def is_plain_path(location: str) -> bool:
    return not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", location)


def claim(spark, location: str, identity: dict, resume: bool, partitions: int):
    """The checkpoint location, claimed for this run and checked usable by the executors
    (before the first level): (LevelStore, the manifest to resume or None). Exit 2 if not."""
    from spark.hadoopfs import open_store
    from spark.store import HadoopLevels, LevelStore
    from verifier.core.checkpoint import CheckpointError
    try:
        fs = open_store(spark, location)
        store = LevelStore(fs, identity)
        manifest = store.claim(resume)
        HadoopLevels(spark, fs, partitions).probe()
    except CheckpointError as exc:
        raise UsageError(str(exc)) from None
    return store, manifest
