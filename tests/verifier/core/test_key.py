"""The key (specs/userkey.py) as hostile input (issue 37): whatever sits at
its path, or whatever the environment names, the run either gets a key or stops before it
starts with one line and exit 2; a FIFO or a device is refused without being read (a FIFO would
block the run, /dev/zero fill its memory), and no checkpoint is begun."""
from __future__ import annotations

import os

import pytest

from tests.verifier.core.test_checkpoint import SMALL

ARGS = ("check", *SMALL, "--max-depth", "2", "-q")


def _run(cli, tmp_path, env):
    ck = tmp_path / "ck"
    r = cli(*ARGS, "--checkpoint-dir", str(ck), "--out", str(tmp_path / "out"), env=env)
    return r, ck


def _one_line_exit_2(r, *words):
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("kraft-verify: error: ") and "Errno" not in line, line
    for w in words:
        assert w in line, line


@pytest.mark.parametrize("kind, words", [
    ("fifo", ("is a FIFO",)),
    ("directory", ("is a directory",)),
    ("short", ("shorter than 16 bytes",)),
    ("huge", ("more than a key",)),
])
def test_a_key_path_that_holds_no_usable_key_is_one_line_and_exit_2(cli, tmp_path, kind, words):
    path = tmp_path / "key"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "short":
        path.write_bytes(b"0123456789")
    else:
        path.write_bytes(b"k" * 100_000)
    r, ck = _run(cli, tmp_path, {"KRAFT_VERIFY_KEY": str(path)})
    _one_line_exit_2(r, str(path), *words)
    assert not ck.exists() or not any(ck.iterdir())      # no checkpoint begun


def test_a_device_as_key_is_refused_unread(cli, tmp_path):
    r, _ = _run(cli, tmp_path, {"KRAFT_VERIFY_KEY": "/dev/zero"})
    _one_line_exit_2(r, "/dev/zero is a device")


def test_a_relative_key_path_is_refused_and_nothing_is_made(cli, tmp_path):
    work = tmp_path / "cwd"
    work.mkdir()
    ck = tmp_path / "ck"
    r = cli(*ARGS, "--checkpoint-dir", str(ck), "--out", str(tmp_path / "out"),
            env={"KRAFT_VERIFY_KEY": "kv/key"}, cwd=work)
    _one_line_exit_2(r, "KRAFT_VERIFY_KEY='kv/key' is not an absolute path")
    assert list(work.iterdir()) == []


def test_a_config_home_that_is_a_file_is_one_line_and_exit_2(cli, tmp_path):
    home = tmp_path / "config-home"
    home.write_text("not a directory")
    r, _ = _run(cli, tmp_path, {"XDG_CONFIG_HOME": str(home), "KRAFT_VERIFY_KEY": ""})     # "": unset
    _one_line_exit_2(r, "cannot read or make the key", "Not a directory")


def test_a_relative_config_home_is_ignored_as_xdg_says(cli, tmp_path):
    """XDG Base Directory: a relative XDG_CONFIG_HOME is invalid and ignored; the key is made
    under HOME's .config, never in the working directory."""
    work, home = tmp_path / "cwd", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    r = cli(*ARGS, "--checkpoint-dir", str(tmp_path / "ck"), "--out", str(tmp_path / "out"),
            env={"XDG_CONFIG_HOME": "rel", "HOME": str(home), "KRAFT_VERIFY_KEY": "",
                 "NUMBA_DISABLE_JIT": "1"}, cwd=work)     # a new key is a new kernel cache: no compile for 2 levels
    assert r.returncode == 3, r.stderr            # --max-depth stops it: a bound, exit 3
    assert (home / ".config" / "kraft-verify" / "key").stat().st_size == 32
    assert list(work.iterdir()) == []


def test_the_matrix_with_an_unusable_key_is_one_line_and_exit_2(cli, tmp_path):
    path = tmp_path / "key"
    os.mkfifo(path)
    r = cli("matrix", "--presets", "pre-kip-966", "--bound-sets", "default", "--row-budget", "0.2",
            "--examples", "10", "--out", str(tmp_path / "m"), env={"KRAFT_VERIFY_KEY": str(path)})
    _one_line_exit_2(r, "is a FIFO")


def test_spark_check_with_an_unusable_key_is_refused_before_spark_starts(cli, tmp_path):
    path = tmp_path / "key"
    os.mkfifo(path)
    r = cli("spark-check", "--checkpoint-dir", str(tmp_path / "ck"), "--out", str(tmp_path / "out"),
            env={"KRAFT_VERIFY_KEY": str(path)})
    _one_line_exit_2(r, "is a FIFO")
    assert not (tmp_path / "out").exists()            # no run directory: Spark never started
