"""`check --checkpoint-dir` / `--resume` (on the kernel): a run killed with SIGKILL, or stopped by
its time budget inside a level, resumes to exactly the counts of an uninterrupted run, with any
number of threads; a torn or altered checkpoint is recomputed, a foreign or older one refused."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, kill_at_depth

CONFIG = ("--brokers", "4", "--bound", "isr_shrinks=1")     # 1,942,387 states, 30 levels: a few seconds
# What a damaged or planted checkpoint is recomputed on: 15,232 states, 25 levels, about a
# second; its checkpoint is the one --max-depth 10 leaves (level 10's 1,439 states unexpanded).
SMALL = ("--bound", "lossy_crashes=0")
# one test process: the module's fixtures (an uninterrupted run of CONFIG, of SMALL, and a stopped
# run of SMALL) are made once, not once by each process that draws a test that takes them
pytestmark = pytest.mark.xdist_group("checkpoint")


def _summary(out):
    return json.loads(next(out.glob("*/summary.json")).read_text())


def _counts(summary):
    c = summary["counts"]
    return (c["distinct_states"], c["transitions"], c["depth"], c["states_per_level"], c["terminal_states"],
            summary["result"], summary["violated"])


def _check(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verifier.cli", "check", *args, "-q"], cwd=ROOT,
                          capture_output=True, text=True)


def _plain(out, config) -> tuple:
    """The counts of an uninterrupted run of `config`, without a checkpoint."""
    r = _check(*config, "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    return _counts(_summary(out))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    return _plain(tmp_path_factory.mktemp("plain"), CONFIG)


@pytest.fixture(scope="module")
def uninterrupted_small(tmp_path_factory):
    return _plain(tmp_path_factory.mktemp("plain-small"), SMALL)


def _stopped_run(ck, out):
    """A checkpointed run of SMALL stopped by --max-depth (exit 3): a resumable checkpoint with a
    frontier still to expand, made without racing a kill."""
    r = _check(*SMALL, "--out", str(out), "--checkpoint-dir", str(ck), "--max-depth", "10")
    assert r.returncode == 3 and "max depth 10 reached" in r.stdout, r.stdout + r.stderr
    return json.loads((ck / "manifest.json").read_text())


@pytest.fixture(scope="module")
def stopped_small(tmp_path_factory):
    """One `_stopped_run` per test module: the tests that damage or plant a checkpoint each take
    a copy of it (`_stopped_copy`). The run is deterministic and its checkpoint names no path,
    so a copy holds what a stopped run of their own would leave, less a process each."""
    where = tmp_path_factory.mktemp("stopped-small")
    _stopped_run(where / "ck", where / "out")
    return where / "ck"


def _stopped_copy(stopped, ck):
    """A copy of the stopped run's checkpoint at `ck` (the files' modes kept); its manifest."""
    shutil.copytree(stopped, ck)
    return json.loads((ck / "manifest.json").read_text())


def _killed_run(ck, out):
    """Start a checkpointed run and SIGKILL it once a checkpoint from inside a level exists."""
    return kill_at_depth((*CONFIG, "--out", str(out), "--checkpoint-every", "0.5"), ck, 10, wait=60)


@pytest.mark.slow
def test_sigkill_then_resume_gives_the_uninterrupted_counts(cli, tmp_path, uninterrupted):
    manifest = _killed_run(tmp_path / "ck", tmp_path / "out1")
    assert 0 < manifest["states"] < uninterrupted[0]
    r = cli("check", *CONFIG, "-q", "--out", str(tmp_path / "out2"), "--checkpoint-dir", str(tmp_path / "ck"),
            "--resume")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "resuming from" in r.stdout
    assert _counts(_summary(tmp_path / "out2")) == uninterrupted


@pytest.mark.parametrize("threads", [("1", "2"), pytest.param(("2", "1"), marks=pytest.mark.slow)],
                         ids=["1 thread then 2", "2 threads then 1"])
def test_a_run_stopped_inside_a_level_resumes_to_the_uninterrupted_counts(cli, tmp_path, uninterrupted, threads):
    """The time budget stops the run between two stretches of a level: the checkpoint then holds
    part of the level expanded and part of the next written, and the resumed run, on another
    number of threads, finds exactly what one run would."""
    for budget in ("1", "1.3", "1.7"):   # a stop can fall on a level's first state (position 0): rare, and tried again
        ck = str(tmp_path / f"ck-{budget}")
        first = cli("check", *CONFIG, "-q", "--out", str(tmp_path / f"o1-{budget}"), "--checkpoint-dir", ck,
                    "--workers", threads[0], "--time-budget", budget)
        assert first.returncode == 3 and "time budget" in first.stdout, first.stdout + first.stderr
        manifest = json.loads((tmp_path / f"ck-{budget}" / "manifest.json").read_text())
        if manifest["position"] > 0:
            break
    assert manifest["position"] > 0 and 0 < manifest["states"] < uninterrupted[0]
    r = cli("check", *CONFIG, "-q", "--out", str(tmp_path / "o2"), "--checkpoint-dir", ck, "--workers", threads[1],
            "--resume")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"resuming from {ck}: {manifest['states']:,} states" in r.stdout
    assert _counts(_summary(tmp_path / "o2")) == uninterrupted


def test_a_checkpoint_of_the_python_search_is_refused_in_one_line(cli, tmp_path):
    """Checkpoints written before the kernel was the one search (version 3) name states by
    another codec: refused, with and without --resume, and left as they were."""
    ck = tmp_path / "ck"
    ck.mkdir()
    manifest = json.dumps({"kind": "check", "version": 3, "identity": {"what": "kafka"}, "states": 1, "depth": 0})
    (ck / "manifest.json").write_text(manifest)
    for resume in ([], ["--resume"]):
        r = cli("check", *SMALL, "-q", "--out", str(tmp_path / "o"), "--checkpoint-dir", str(ck), *resume)
        assert r.returncode == 2, r.stdout + r.stderr
        (line,) = r.stderr.strip().splitlines()
        assert "a checkpoint of the Python search" in line and "cannot be resumed" in line
    assert (ck / "manifest.json").read_text() == manifest


def _torn(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _altered(data: bytes) -> bytes:
    """One byte changed in the middle, the length kept: only the checksum can tell."""
    i = len(data) // 2
    return data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:]


@pytest.mark.parametrize("damage", [_torn, _altered], ids=["torn", "altered"])
def test_a_damaged_checkpoint_is_recomputed_not_trusted(cli, tmp_path, uninterrupted_small, stopped_small, damage):
    _stopped_copy(stopped_small, tmp_path / "ck")
    data = tmp_path / "ck" / "search.bin"
    data.write_bytes(damage(data.read_bytes()))
    r = cli("check", *SMALL, "-q", "--out", str(tmp_path / "out2"), "--checkpoint-dir", str(tmp_path / "ck"),
            "--resume")
    assert r.returncode == 0 and "search.bin is torn or altered): starting over" in r.stdout, r.stdout
    assert _counts(_summary(tmp_path / "out2")) == uninterrupted_small


def test_another_configs_or_an_unresumed_checkpoint_is_refused(cli, tmp_path):
    ck = str(tmp_path / "ck")
    r = cli("check", "--bound", "isr_shrinks=0", "-q", "--out", str(tmp_path / "o"), "--checkpoint-dir", ck)
    assert r.returncode == 0, r.stderr
    again = cli("check", "--bound", "isr_shrinks=0", "-q", "--out", str(tmp_path / "o"), "--checkpoint-dir", ck)
    assert again.returncode == 2 and "pass --resume" in again.stderr
    other = cli("check", "--bound", "isr_shrinks=1", "-q", "--out", str(tmp_path / "o"), "--checkpoint-dir", ck,
                "--resume")
    assert other.returncode == 2 and "another config" in other.stderr
    assert len(other.stderr.strip().splitlines()) == 1
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "manifest.json").write_text("{not json")
    junk = cli("check", "-q", "--out", str(tmp_path / "o"), "--checkpoint-dir", str(tmp_path / "junk"), "--resume")
    assert junk.returncode == 2 and "unreadable manifest" in junk.stderr


@pytest.mark.parametrize("engine", ["check", "spark-check"])
def test_a_directory_that_is_not_a_checkpoint_is_never_cleared(cli, tmp_path, engine):
    """A fresh run clears what an earlier run left; pointed at the user's own directory (here
    one with a `levels/` folder, the name spark-check keeps its levels under) it must refuse
    before Spark starts, and leave every file as it was."""
    user = tmp_path / "mine"
    (user / "levels").mkdir(parents=True)
    (user / "levels" / "notes.txt").write_text("precious")
    for resume in ([], ["--resume"]):
        r = cli(engine, "--brokers", "2", "-q", "--out", str(tmp_path / "o"), "--checkpoint-dir", str(user), *resume)
        assert r.returncode == 2 and "not a kraft-verify checkpoint" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    assert (user / "levels" / "notes.txt").read_text() == "precious"
    assert sorted(p.name for p in user.iterdir()) == ["levels"]


def test_a_run_that_died_before_its_first_manifest_starts_over(cli, tmp_path):
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / ".kraft-verify-checkpoint").write_text("kraft-verify check checkpoint\n")
    (ck / "search.pickle.tmp").write_bytes(b"torn")          # what a killed first save leaves
    r = cli("check", "--brokers", "2", "-q", "--out", str(tmp_path / "o"), "--checkpoint-dir", str(ck))
    assert r.returncode == 0, r.stderr
    assert (ck / "manifest.json").exists()


@pytest.mark.parametrize("shape", ["a name over 255 bytes", "a path over 4096 bytes"])
def test_a_checkpoint_dir_the_file_system_cannot_name_is_one_line(cli, tmp_path, shape):
    long = tmp_path / ("a" * 300) if shape.startswith("a name") else tmp_path.joinpath(*["b" * 200] * 25)
    r = cli("check", *SMALL, "-q", "--checkpoint-dir", str(long), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("kraft-verify: error: --checkpoint-dir ") and "too long" in line
