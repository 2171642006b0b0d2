"""An environment that refuses the run's files is one line and exit 2, never a traceback and
never a verdict (0 or 1); the terminal still says what the search found; nothing is left
half-written under a final name; report files get the user's umask."""
from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SMALL = ["--brokers", "2", "--bound", "lossy_crashes=0"]
VIOLATING = ["--preset", "pre-kip-966", "--brokers", "2"]


def _cli(args, limit_bytes=None, stdout=subprocess.PIPE, umask=None):
    def limit():
        if limit_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
        if umask is not None:
            os.umask(umask)
    return subprocess.run([sys.executable, "-m", "verifier.cli", *args], cwd=ROOT, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, preexec_fn=limit, env=dict(os.environ, COLUMNS="200"))


COMMANDS = {
    "check with a counterexample": ["check", *VIOLATING, "-q"],
    "check --liveness": ["check", "--liveness", *SMALL, "-q"],
    "fuzz": ["fuzz", "--brokers", "2", "--examples", "50", "--preset", "pre-kip-966"],
    "availability": ["availability", "--runs", "20"],
    "matrix": ["matrix", "--presets", "pre-kip-966", "--bound-sets", "default", "--brokers", "2"],
    "prove": ["prove", "--max-brokers", "1", "--self-check-samples", "2"],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_file_size_limit_is_one_line_and_exit_2(name, tmp_path):
    """`ulimit -f 2`: every report beyond 2 KiB fails with EFBIG (the signal it would raise is ignored)."""
    r = _cli([*COMMANDS[name], "--out", str(tmp_path / "out")], limit_bytes=2048)
    err = r.stderr.strip()
    assert r.returncode == 2, (r.returncode, err[-300:])
    assert "Traceback" not in r.stderr and len(err.splitlines()) == 1 and "cannot write" in err, err
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file() and path.name.endswith(".json") and path.stat().st_size:
            json.loads(path.read_text())          # whatever was written is whole


def test_the_terminal_says_what_the_search_found_when_its_files_cannot_be_written(tmp_path):
    r = _cli(["check", *VIOLATING, "-q", "--out", str(tmp_path / "out")], limit_bytes=2048)
    assert r.returncode == 2
    assert "violation:" in r.stdout and "LeaderCandidateCompleteness" in r.stdout


def test_standard_output_that_cannot_be_written_is_one_line(tmp_path):
    with open("/dev/full", "w") as full:
        r = _cli(["check", *SMALL, "--out", str(tmp_path / "out")], stdout=full)
    err = r.stderr.strip()
    assert r.returncode == 2 and len(err.splitlines()) == 1 and "standard output" in err, err


def test_standard_output_closed_is_one_line_and_the_run_still_writes_its_report(tmp_path):
    """`kraft-verify check >&-`: Python starts with no sys.stdout (it exited 120 with a traceback)."""
    r = subprocess.run(f"{sys.executable} -m verifier.cli check {' '.join(SMALL)} --out {tmp_path / 'out'} >&-",
                       shell=True, cwd=ROOT, capture_output=False, stderr=subprocess.PIPE, text=True)
    err = r.stderr.strip()
    assert r.returncode == 2 and err == "kraft-verify: error: cannot write to standard output (it is closed)", err
    assert list((tmp_path / "out").glob("*/summary.json"))


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_report_files_get_the_users_umask(tmp_path, umask, mode):
    junit = tmp_path / "j.xml"
    junit.write_text("old")
    os.chmod(junit, 0o644)
    r = _cli(["check", *SMALL, "-q", "--out", str(tmp_path / "out"), "--junit", str(junit)], umask=umask)
    assert r.returncode == 0, r.stderr
    (run,) = (tmp_path / "out").iterdir()
    for path in [junit, *run.iterdir()]:
        assert stat.S_IMODE(path.stat().st_mode) == mode, (path.name, oct(path.stat().st_mode))


def test_spark_check_under_a_working_directory_that_is_not_utf8_is_one_line(tmp_path):
    """A relative --checkpoint-dir under such a directory reached Hadoop as a URI it could not
    parse (a raw Java error, issue 37); refused before Spark starts."""
    odd = os.path.join(os.fsencode(str(tmp_path)), b"dir\xff")
    os.mkdir(odd)
    r = subprocess.run([sys.executable, "-m", "verifier.cli", "spark-check", "--checkpoint-dir", "ck",
                        "--out", str(tmp_path / "out")], cwd=odd, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 2, r.stdout + r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "is not valid UTF-8" in line and "dir\\xff" in line, line
    assert not (tmp_path / "out").exists()
