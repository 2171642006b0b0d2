"""spark-check against the local checker, and its crash and input handling.

The in-process tests share one local[2] session (tests/conftest.py); the SIGKILL and the
standalone-cluster tests run the CLI in a subprocess, as an operator would.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import invariants as I
from specs import Model, make_config
from specs.catalogue import MUTANTS
import spark.engine as SE
from spark.hadoopfs import open_store
from spark.store import LevelStore
from verifier.core.settings import Limits, Options, Settings

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"lossy_crashes": 1, "isr_shrinks": 1}
DEPTH = 5
# CI runs the presets and one mutant of each kind of property (a state invariant, a transition
# invariant, a broker's log, the HWM); `make nightly` runs every other mutant too (6 s each).
CI_MUTANTS = ("elr-not-cleared", "leader-epoch-not-bumped", "follower-no-truncate", "hwm-ignores-min-isr")
VARIANTS = [pytest.param(p, None, id=p) for p in ("kafka", "kip-966", "pre-kip-966", "pre-kip-903")] + \
    [pytest.param("kafka", m, id=m, marks=() if m in CI_MUTANTS else pytest.mark.nightly) for m in MUTANTS]


# The executors run the compiled kernel over chunks of rows (spark/kernel_tasks.py), with
# symmetry reduction ("symmetric": the config lets any candidate be elected, so brokers are
# interchangeable) and without; since issue 57 there are no interpreted executors.
PATHS = [pytest.param(True, id="symmetric"), pytest.param(False, id="kernel")]
# and the kernel's blocks through Spark's shuffle, as on a cluster (a local master sends them by
# file: spark/exchange.py): 10-20x the files' time on these configs (16-43 s a case), so CI runs
# it on a complete run and a violating one (CI_SHUFFLED), `make nightly` on every other case.
SHUFFLE, CI_SHUFFLED = pytest.param("shuffle", id="kernel-shuffle"), ("kafka", "pre-kip-903")
SHUFFLE_NIGHTLY = pytest.param("shuffle", id="kernel-shuffle", marks=pytest.mark.nightly)


def small(preset="kafka", mutant=None, rf=2, **bounds):
    return make_config(preset, mutant=mutant, replicas=list(range(1, rf + 1)), bounds={**SMALL, **bounds})


def model_of(cfg, symmetry=False):
    """cfg's model; with `symmetry` True, cfg with any_candidate_elections (a model whose
    brokers are interchangeable, so symmetry reduction is on)."""
    if symmetry is True:
        from specs.config import BOUND_NAMES
        cfg = make_config(cfg.preset, mutant=cfg.mutant, replicas=list(cfg.replicas), min_isr=cfg.min_isr,
                          bounds={b: getattr(cfg.bounds, b) for b in BOUND_NAMES},
                          flags={"any_candidate_elections": True})
        assert Model(cfg).symmetric
    return Model(cfg, symmetry=symmetry is True)


def local(cfg, max_depth=None, symmetry=False):
    """check's answer (the compiled kernel, itself held to the interpreted search by
    tests/verifier/engines/test_kernel_engine.py and bench/equivalence.py)."""
    from verifier.cli import binding
    return binding.engine("kernel")(model_of(cfg, symmetry), I.REGISTRY,
                                    Settings(limits=Limits(max_depth=max_depth), options=Options(keep_going=True)))


def on_spark(session, cfg, limits=Limits(), symmetry=False, **knobs):
    """spark-check's engine as the command line runs it (every violation kept), on `session`:
    symmetric or not ("shuffle": not, its blocks through Spark's shuffle)."""
    knobs = dict(knobs, exchange="shuffle" if symmetry == "shuffle" else "auto")
    return SE.run(model_of(cfg, symmetry), I.REGISTRY,
                  Settings(limits=limits, options=Options(keep_going=True), knobs=SE.Knobs(session=session, **knobs)))


def same(a, b) -> None:
    assert (a.status, a.distinct_states, a.depth, a.transitions, a.terminal_states) == \
           (b.status, b.distinct_states, b.depth, b.transitions, b.terminal_states)
    assert a.states_per_level == b.states_per_level
    assert {n: len(t) for n, t in a.counterexamples.items()} == {n: len(t) for n, t in b.counterexamples.items()}


@pytest.mark.parametrize("preset,mutant,symmetry", [
    pytest.param(*v.values, x.values[0], id=f"{v.id}-{x.id}", marks=[*v.marks] if x is not SHUFFLE
                 or v.id in CI_SHUFFLED else [*v.marks, pytest.mark.nightly]) for v in VARIANTS for x in PATHS + [SHUFFLE]])
def test_spark_check_finds_what_check_finds(spark_session, preset, mutant, symmetry):
    cfg = small(preset, mutant)
    want = local(cfg, DEPTH, symmetry)
    got = on_spark(spark_session, cfg, Limits(max_depth=DEPTH), symmetry, partitions=2, driver_levels=0)
    same(got, want)
    for name, trace in got.counterexamples.items():     # a real run of the model, breaking that invariant
        inv = I.BY_NAME.get(name)
        if inv is not None and inv.kind == "state":
            assert not inv.check(trace.config, trace.final)


def test_a_reducing_executor_judges_a_step_before_it_renames_the_successor(spark_session):
    """A step property compares a state with its successor under one naming: the executors,
    like check's search, once renamed the successors first and held OneLeaderPerEpoch on a
    model that breaks it in one step. The reduced run breaks what the unreduced one breaks."""
    cfg = small("kafka", "leader-epoch-not-bumped")
    got = on_spark(spark_session, cfg, Limits(max_depth=DEPTH), True, partitions=2, driver_levels=0)
    want = local(cfg, DEPTH, False)
    assert "OneLeaderPerEpoch" in got.counterexamples
    assert {n: len(t) for n, t in got.counterexamples.items()} == {n: len(t) for n, t in want.counterexamples.items()}


@pytest.mark.parametrize("symmetry", PATHS + [SHUFFLE_NIGHTLY])
def test_a_complete_run_matches_to_the_last_level(spark_session, symmetry):
    """Levels of fewer than 40 states on the driver, the others on Spark: both in one run."""
    cfg = small(records=1, fences=1, lossy_crashes=0)
    same(on_spark(spark_session, cfg, Limits(), symmetry, partitions=3, driver_levels=40), local(cfg, None, symmetry))


@pytest.mark.parametrize("symmetry", PATHS + [SHUFFLE_NIGHTLY])
def test_spark_traces_are_the_same_run_after_run_and_with_any_partition_count(spark_session, symmetry):
    cfg = small("pre-kip-966")
    a, b = (on_spark(spark_session, cfg, Limits(max_depth=5), symmetry, partitions=n, driver_levels=d)
            for n, d in ((2, 0), (3, 10**9)))     # on Spark, on the driver
    assert a.counterexamples and {n: t.steps for n, t in a.counterexamples.items()} == \
           {n: t.steps for n, t in b.counterexamples.items()}


@pytest.mark.parametrize("preset,mutant,limits", [
    pytest.param("pre-kip-966", None, Limits(max_depth=8), id="state-violation"),
    pytest.param("kafka", "leader-epoch-not-bumped", Limits(max_depth=8), id="step-violation"),
    pytest.param("kafka", None, Limits(max_states=600), id="max-states"),
    pytest.param("kafka", None, Limits(max_depth=4), id="max-depth")])
def test_a_chained_level_stops_where_a_job_per_stage_stops(spark_session, preset, mutant, limits):
    """On a local master a level's task expands it before the driver has seen it
    (spark/chain.py). A run that stops after that level (its first violation without
    --continue, max states, max depth) counts and reports what the two-stage job does (Spark's
    shuffle, not chained): the expansion it did not need is dropped."""
    cfg = small(preset, mutant)
    got, want = (SE.run(Model(cfg, symmetry=False), I.REGISTRY,
                        Settings(limits=limits, options=Options(keep_going=False),
                                 knobs=SE.Knobs(session=spark_session, partitions=2, driver_levels=0, tasks="kernel",
                                                exchange=exchange)))
                 for exchange in ("auto", "shuffle"))
    same(got, want)
    assert (got.enabled, got.taken, got.stop_reason) == (want.enabled, want.taken, want.stop_reason)
    assert {n: t.steps for n, t in got.counterexamples.items()} == {n: t.steps for n, t in want.counterexamples.items()}
    assert got.status == ("violation" if mutant or preset != "kafka" else "stopped")


def _identity(cfg):
    return {"what": cfg.preset, "test": True}


def checkpoint(spark, path, cfg, resume=False) -> LevelStore:
    """A --checkpoint-dir as the CLI claims it (through Hadoop's file system API)."""
    store = LevelStore(open_store(spark, str(path)), _identity(cfg))
    store.claim(resume)
    return store


def part(path, level, owner):
    return path / "levels" / f"{level:05d}" / f"part-{owner:05d}"


def test_a_corrupted_or_partial_level_is_recomputed_not_trusted(spark_session, tmp_path, symmetry=False):
    # (the store holds the kernel's levels alike with symmetry or without: one case)
    """A level that does not read back as the manifest has it is recomputed, with every level
    after it, from the level before it. The kernel's levels on a local master are links, only
    the last two that keep their rows do (spark/store.py; here every level gets its rows,
    --checkpoint-every 0): a torn level before them is recomputed from the start (level 0,
    the driver's), a torn last level from the one before."""
    cfg = small()
    limits = Limits(max_depth=9)
    want = local(cfg, 9, symmetry)
    store = checkpoint(spark_session, tmp_path / "ck", cfg)
    on_spark(spark_session, cfg, limits, symmetry, store=store, partitions=2, driver_levels=0, rows_every=0)
    # corrupt level 5 (garbage in a part file) and make level 7 partial (a part missing)
    part(tmp_path / "ck", 5, 0).write_bytes(b"not a part" * 10)
    part(tmp_path / "ck", 7, 1).unlink()
    store = checkpoint(spark_session, tmp_path / "ck", cfg, resume=True)
    redone = []
    got = on_spark(spark_session, cfg, limits, symmetry, store=store, resume=True, partitions=2,
                   on_level=redone.append, driver_levels=0, rows_every=0)
    assert redone == list(range(1, 10))
    same(got, want)
    assert sorted(os.listdir(tmp_path / "ck" / "rows")) == ["00008", "00009"]     # the last two levels' rows
    (tmp_path / "ck" / "rows" / "00009" / "part-00001").write_bytes(b"torn")
    store = checkpoint(spark_session, tmp_path / "ck", cfg, resume=True)
    redone = []
    got = on_spark(spark_session, cfg, limits, symmetry, store=store, resume=True, partitions=2,
                   on_level=redone.append, driver_levels=0, rows_every=0)
    assert redone == [9]                 # from level 8's rows
    same(got, want)


def test_a_planted_pickle_as_a_level_runs_nothing_and_the_level_is_recomputed(spark_session, tmp_path, symmetry=False):
    # (the store holds the kernel's levels alike with symmetry or without: one case)
    """A co-tenant's pickle in place of a level's part file (and its manifest entry re-signed
    with the user's key): read back as data, it is not a level; it is recomputed, nothing runs."""
    import pickle

    from verifier.core.signing import mac

    class Payload:
        def __reduce__(self):
            return os.system, (f"touch {tmp_path / 'ran'}",)
    cfg = small()
    limits = Limits(max_depth=7)
    want = local(cfg, 7, symmetry)
    store = checkpoint(spark_session, tmp_path / "ck", cfg)
    on_spark(spark_session, cfg, limits, symmetry, store=store, partitions=2, driver_levels=0, rows_every=0)
    payload = pickle.dumps(Payload())
    part(tmp_path / "ck", 5, 0).write_bytes(payload)
    manifest = json.loads((tmp_path / "ck" / "manifest.json").read_text())
    import hashlib
    for chunk in manifest["levels"][5]["chunks"]:
        if chunk[0].startswith("00000-"):
            chunk[3] = hashlib.sha256(payload).hexdigest()
    manifest.pop("mac")
    manifest["mac"] = mac(manifest)
    (tmp_path / "ck" / "manifest.json").write_text(json.dumps(manifest))
    store = checkpoint(spark_session, tmp_path / "ck", cfg, resume=True)
    redone = []
    got = on_spark(spark_session, cfg, limits, symmetry, store=store, resume=True, partitions=2,
                   on_level=redone.append, driver_levels=0, rows_every=0)
    assert not (tmp_path / "ran").exists()
    assert redone == list(range(1, 8))     # links before level 6: from the start
    same(got, want)


@pytest.mark.parametrize("symmetry", PATHS)
def test_resume_of_a_finished_run_recomputes_only_its_empty_last_level(spark_session, tmp_path, symmetry):
    """A manifest whose last level is empty says the search is over: that claim is checked by
    expanding the level before it again, never taken on trust."""
    cfg = small("pre-kip-966", records=1, fences=1, lossy_crashes=0)
    store = checkpoint(spark_session, tmp_path / "ck", cfg)
    first = on_spark(spark_session, cfg, Limits(), symmetry, store=store, partitions=2, rows_every=0)
    store = checkpoint(spark_session, tmp_path / "ck", cfg, resume=True)
    redone = []
    again = on_spark(spark_session, cfg, Limits(), symmetry, store=store, resume=True, partitions=2,
                     on_level=redone.append, rows_every=0)
    assert redone == [len(first.states_per_level)]
    same(again, first)


def test_a_manifest_beside_a_stale_hadoop_checksum_file_resumes(spark_session, tmp_path):
    """A driver killed between the two renames of Hadoop's checksummed local file system (the
    file, then its hidden .crc) left a whole new manifest beside the old checksum: every later
    read was a ChecksumException and --resume was refused (CI, the SIGKILL test). The store
    reads and renames without side files, so that directory resumes to the same counts."""
    cfg = small()
    want = local(cfg, 6)
    store = checkpoint(spark_session, tmp_path / "ck", cfg)
    on_spark(spark_session, cfg, Limits(max_depth=4), store=store, partitions=2, driver_levels=0, rows_every=0)
    manifest = tmp_path / "ck" / "manifest.json"
    whole = manifest.read_bytes()
    jvm = spark_session.sparkContext._jvm
    checked = jvm.org.apache.hadoop.fs.FileSystem.getLocal(spark_session.sparkContext._jsc.hadoopConfiguration())
    out = checked.create(jvm.org.apache.hadoop.fs.Path(str(manifest)), True)
    out.write(bytearray(b"{" + b" " * (len(whole) - 2) + b"}"))       # the old manifest, with its .crc
    out.close()
    manifest.write_bytes(whole)                                       # the rename of the new one
    assert (tmp_path / "ck" / ".manifest.json.crc").exists()
    store = checkpoint(spark_session, tmp_path / "ck", cfg, resume=True)
    redone = []
    got = on_spark(spark_session, cfg, Limits(max_depth=6), store=store, resume=True, partitions=2,
                   on_level=redone.append, driver_levels=0, rows_every=0)
    assert redone == [5, 6]
    same(got, want)


def _spark_cli(*args, **kw):
    env = dict(os.environ, COLUMNS="200")
    return subprocess.Popen([sys.executable, "-m", "verifier.cli", "spark-check", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kw)


RESUMABLE = {"lossy_crashes": 0, "fences": 0}      # with SMALL's isr_shrinks=1: 9 levels, 31 states


def _resumable_args(tmp_path) -> list[str]:
    """The CLI run the SIGKILL and interrupt tests stop and resume (the config `small(**RESUMABLE)`)."""
    bounds = [a for k, v in {**SMALL, **RESUMABLE}.items() for a in ("--bound", f"{k}={v}")]
    return ["--brokers", "2", *bounds, "--master", "local[2]", "--partitions", "2", "--driver-levels", "0",
            "--checkpoint-dir", str(tmp_path / "ck"), "--out", str(tmp_path / "out")]


def test_sigkill_mid_run_then_resume_gives_the_uninterrupted_counts(tmp_path):
    """9 levels (31 states): the kill lands after level 3, with levels still to go; what costs here
    is Spark's per-level overhead, not the states."""
    args = [*_resumable_args(tmp_path), "-q"]
    proc, manifest = _started_with_levels(args, tmp_path, 4)
    os.killpg(proc.pid, signal.SIGKILL)           # the driver and its JVM, mid-run
    proc.wait()
    killed_at = len(json.loads(manifest.read_text())["levels"])
    want = local(small(**RESUMABLE))
    assert killed_at < len(want.states_per_level)
    out = _spark_cli(*args, "--resume")
    stdout, stderr = out.communicate(timeout=300)
    assert out.returncode == 0, stderr
    assert "resuming" in stdout
    summary = json.loads(next((tmp_path / "out").glob("spark-check-*/summary.json")).read_text())
    assert summary["counts"]["distinct_states"] == want.distinct_states
    assert summary["counts"]["states_per_level"] == want.states_per_level
    assert summary["counts"]["transitions"] == want.transitions


def test_a_jvm_gone_between_two_levels_jobs_stops_the_run_with_the_levels_it_has(spark_session, tmp_path,
                                                                                 monkeypatch):
    """The JVM can die while the driver writes the manifest (no job running): the store's call
    fails with a plain Py4JError. That is the JVM's death, not the store's fault (exit 2 would
    say the user's checkpoint location is wrong): the run stops with the levels committed."""
    from py4j.protocol import Py4JError
    import spark.session as session
    cfg = small()
    store = checkpoint(spark_session, tmp_path / "ck", cfg)
    real = store.fs.write

    def write(name, data, **kw):
        if name == "manifest.json" and len(json.loads(data)["levels"]) == 4:
            monkeypatch.setattr(session, "jvm_alive", lambda: False)
            return store.fs._call("write the manifest", lambda: (_ for _ in ()).throw(Py4JError("cut")))
        return real(name, data, **kw)
    monkeypatch.setattr(store.fs, "write", write)
    got = on_spark(spark_session, cfg, Limits(max_depth=6), store=store, partitions=2, driver_levels=0)
    assert got.status == "stopped" and got.stop_reason.startswith("Spark's JVM exited"), got.stop_reason
    # level 3's manifest was never written: the run and its message hold levels 0-2
    assert "the checkpoint keeps levels 0-2: rerun with --resume" in got.stop_reason
    assert got.states_per_level == local(cfg, 6).states_per_level[:3]
    assert len(json.loads((tmp_path / "ck" / "manifest.json").read_text())["levels"]) == 3


def _hugepages(_):
    import numpy._core.multiarray as multiarray
    return [multiarray._get_madvise_hugepage()]


def test_the_executors_numpy_asks_for_no_huge_pages(spark_session):
    """Its arrays are made and dropped by the gigabyte each level: 8% of a level went to huge
    pages (spark/session.py)."""
    if "NUMPY_MADVISE_HUGEPAGE" not in os.environ:       # numpy's default: the executors' False is the session's
        assert _hugepages(None) == [True]
    assert spark_session.sparkContext.parallelize([0, 1], 2).flatMap(_hugepages).collect() == [False, False]


def test_a_context_spark_shut_down_itself_names_the_log_not_only_the_cancelled_job(monkeypatch):
    """An executor thread out of heap makes Spark shut its context down while the JVM lives on:
    the overnight run's resume said only "Job 22 cancelled because SparkContext was shut
    down". The line now says where the cause is and what to give more of."""
    import spark.session as session
    monkeypatch.setattr(session, "jvm_alive", lambda: True)
    line = session.failure(RuntimeError("Job 22 cancelled because SparkContext was shut down\n at ..."))
    assert line.startswith("Job 22 cancelled because SparkContext was shut down (spark.log in the run's directory")
    assert "spark.log in the run's directory" in line and "--driver-memory" in line and "\n" not in line
    assert session.failure(RuntimeError("a task failed 4 times")) == "a task failed 4 times"


def _started_with_levels(args, tmp_path, levels: int = 3):
    """The CLI run of `args`, once its manifest holds `levels` levels (the run still going)."""
    proc = _spark_cli(*args)
    manifest = tmp_path / "ck" / "manifest.json"
    deadline = time.monotonic() + 180
    while not (manifest.exists() and len(json.loads(manifest.read_text())["levels"]) >= levels):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    return proc, manifest


def _jvm_of(group: int) -> int:
    """The java process in the CLI's process group (PySpark's spark-submit launcher execs it)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == group and \
                        (entry / "cmdline").read_bytes().split(b"\0")[0].endswith(b"java"):
                    return int(entry.name)
            except (OSError, ProcessLookupError):
                continue
    raise AssertionError("no JVM in the run's process group")


def test_a_jvm_that_dies_under_the_run_is_one_line_exit_3_and_a_report(tmp_path):
    """Spark's JVM killed mid-run (as the kernel's OOM killer or an OutOfMemoryError ends it):
    the overnight run's JVM died of Java heap space reading level 18, and the CLI printed py4j's
    tracebacks and exit 1, "a property is violated", with no report. Now: exit 3, the reason on
    one line, a stopped report, and the checkpoint as the last level left it."""
    args = _resumable_args(tmp_path)
    proc, manifest = _started_with_levels(args, tmp_path)
    os.kill(_jvm_of(proc.pid), signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 3, stdout + stderr
    assert "Traceback" not in stdout + stderr and stderr.strip() == "", stderr
    stopped = [line for line in stdout.splitlines() if "Spark's JVM exited" in line]
    assert len(stopped) == 1 and "the checkpoint keeps levels 0-" in stopped[0], stdout
    summary = json.loads(next((tmp_path / "out").glob("spark-check-*/summary.json")).read_text())
    assert summary["result"] == "stopped" and summary["exit_code"] == 3
    # the levels it names are the manifest's, and the levels check finds (a resume from such a
    # checkpoint: test_sigkill_mid_run_then_resume_gives_the_uninterrupted_counts)
    kept = json.loads(manifest.read_text())["levels"]
    assert f"keeps levels 0-{len(kept) - 1}:" in stopped[0]
    assert [m["states"] for m in kept] == local(small(**RESUMABLE)).states_per_level[:len(kept)]


# SIGTERM (what YARN, Kubernetes and a standalone master send) in CI; Ctrl-C, the same stop
# through the same handler, nightly (tests/verifier/cli/test_interrupts.py has Ctrl-C locally).
@pytest.mark.parametrize("sig", [pytest.param(signal.SIGINT, marks=pytest.mark.nightly), signal.SIGTERM],
                         ids=["ctrl-c", "sigterm"])
def test_an_interrupt_is_one_line_and_leaves_a_resumable_checkpoint(tmp_path, sig):
    """Ctrl-C reaches the whole foreground process group: the driver, its JVM and the Python
    workers. The run stops at a level boundary with a report and exit 3, no stack trace."""
    args = _resumable_args(tmp_path)
    proc, manifest = _started_with_levels(args, tmp_path)
    os.killpg(proc.pid, sig)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 3, stderr
    assert stderr.strip() == "", stderr
    stopped = [line for line in stdout.splitlines() if "interrupted by" in line]
    assert len(stopped) == 1 and f"interrupted by {sig.name}; the checkpoint keeps levels 0-" in stopped[0]
    summary = json.loads(next((tmp_path / "out").glob("spark-check-*/summary.json")).read_text())
    assert summary["result"] == "stopped" and summary["exit_code"] == 3
    want = local(small(**RESUMABLE))
    out = _spark_cli(*args, "--resume", "-q", "--partitions", "3")
    stdout, stderr = out.communicate(timeout=300)
    assert out.returncode == 0, stderr
    assert "resuming with the run's 2 partitions, not 3" in stdout
    summaries = sorted((tmp_path / "out").glob("spark-check-*/summary.json"), key=lambda p: p.stat().st_mtime)
    counts = json.loads(summaries[-1].read_text())["counts"]
    assert (counts["distinct_states"], counts["states_per_level"], counts["transitions"]) == \
           (want.distinct_states, want.states_per_level, want.transitions)


def test_the_time_budget_stops_the_run_with_the_levels_before_it_exactly_checks(spark_session):
    """Wherever the deadline falls (in a level's job, which is cancelled, or in the driver's
    work between two jobs, when the level is done), the run stops saying which, and the levels
    it kept are exactly check's. (CI once saw the second: the deadline fell between jobs.)"""
    cfg = make_config("kafka", replicas=[1, 2, 3, 4])
    got = on_spark(spark_session, cfg, Limits(time_budget=6), partitions=2, driver_levels=0)
    assert got.status == "stopped", got.stop_reason
    assert re.fullmatch(r"time budget 6s spent \((level \d+ cancelled|after level \d+); "
                        r"no --checkpoint-dir, so nothing to resume from\)", got.stop_reason), got.stop_reason
    want = local(cfg, len(got.states_per_level) - 1)
    assert got.states_per_level == want.states_per_level
    assert (got.distinct_states, got.transitions) == (want.distinct_states, want.transitions)


@pytest.mark.parametrize("args,needle", [
    (["--master", "spark://127.0.0.1:1"], "cannot reach Spark master spark://127.0.0.1:1"),
    (["--master", "spark://[::1:7077"], "--master spark://[::1:7077: not a URL"),
    (["--master", "mesos://x"], "--master mesos://x"),
    (["--resume"], "--resume needs --checkpoint-dir"),
    (["--partitions", "0"], "--partitions must be between 1 and 10000, got 0"),
    (["--partitions", "99999999999"], "--partitions must be between 1 and 10000"),
    (["--driver-levels", "-1"], "--driver-levels must be >= 0"),
    (["--checkpoint-every", "5"], "--checkpoint-every needs --checkpoint-dir"),
    (["--checkpoint-dir", "/nonexistent-kv/ck", "--checkpoint-every", "-1"], "--checkpoint-every must be a finite number of seconds"),
    (["--checkpoint-dir", "/nonexistent-kv/ck", "--checkpoint-every", "inf"], "--checkpoint-every must be a finite number of seconds"),
    (["--engine", "kernel", "--bound", "records=31"], "spark-check: records=31: the kernel holds at most 30"),
    (["--bound", "records=31"], "spark-check: records=31: the kernel holds at most 30"),     # no fallback
    (["--engine", "python"], "invalid choice: 'python'"),                  # no interpreted executors
])
def test_bad_master_or_options_are_one_line_exit_2(cli, args, needle):
    out = cli("spark-check", *args)
    assert out.returncode == 2, out.stderr
    assert needle in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_bad_checkpoint_dirs_are_one_line_exit_2(cli, tmp_path):
    afile = tmp_path / "file"
    afile.write_text("x")
    out = cli("spark-check", "--checkpoint-dir", str(afile))
    assert out.returncode == 2 and "not a directory" in out.stderr
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "manifest.json").write_text("{not json")
    out = cli("spark-check", "--checkpoint-dir", str(ck), "--resume")
    assert out.returncode == 2 and "unreadable manifest" in out.stderr
    store = LevelStore(str(ck), {"what": "kafka --mutant elr-not-cleared"})
    store.save({"levels": [], "partitions": 2})
    out = cli("spark-check", "--checkpoint-dir", str(ck), "--resume")
    assert out.returncode == 2 and "holds a run of another config" in out.stderr
    for o in (out,):
        assert len(o.stderr.strip().splitlines()) == 1


def test_a_checkpoint_url_refused_after_spark_started_leaves_no_run_directory(cli, tmp_path):
    """A URL is checked from inside Spark (its file system is Hadoop's), so the JVM has started
    and written spark.log by then; the refusal takes the run directory back (issue 37: one was
    left holding only spark.log)."""
    out = tmp_path / "out"
    r = cli("spark-check", "--checkpoint-dir", "file:///proc/kraft-verify-ck", "--out", str(out))
    assert r.returncode == 2, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not out.exists() or not list(out.iterdir()), list(out.rglob("*"))


@pytest.mark.nightly
def test_standalone_master_recipe(tmp_path, cli):
    """README's recipe: a master and a worker from the installed pyspark on 127.0.0.1 (nightly:
    CI runs a standalone master and two workers in tests/spark/test_cluster.py)."""
    from spark import standalone
    os.environ["KRAFT_VERIFY_STANDALONE_DIR"] = str(tmp_path / "standalone")
    standalone.STATE = tmp_path / "standalone"
    url = standalone.start(port=7077)
    try:
        out = cli("spark-check", "--preset", "pre-kip-966", "--brokers", "2", "--bound", "lossy_crashes=1",
                  "--bound", "isr_shrinks=1", "--max-depth", "5", "--master", url, "--driver-levels", "0",
                  "--out", str(tmp_path / "out"),
                  "--junit", str(tmp_path / "j.xml"))
    finally:
        standalone.stop()
    assert out.returncode == 1, out.stderr
    assert f"master={url}" in out.stdout
    summary = json.loads(next((tmp_path / "out").glob("spark-check-*/summary.json")).read_text())
    want = local(small("pre-kip-966"), 5)
    assert summary["engine"] == "spark"
    assert summary["counts"]["distinct_states"] == want.distinct_states
    scenario = next((tmp_path / "out").glob("spark-check-*/counterexample.json"))
    replay = cli("replay", str(scenario))
    assert replay.returncode == 0 and "reproduces" in replay.stdout
    assert "<failure" in (tmp_path / "j.xml").read_text()
