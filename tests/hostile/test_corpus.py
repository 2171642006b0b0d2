"""Every malformed input of the corpus (tests/hostile/corpus.py and corpus_types.py, at least
800 cases): exit 2,
one line on stderr naming the problem, no traceback, no report under a final name, and the
case's own files as they were.
The command line runs in this process (`verifier.cli.main`), so the corpus costs seconds; two
hostile environments (a deleted working directory, a console that is not UTF-8) follow it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile import corpus_types
from tests.hostile.corpus import CASES as FIRST
from tests.hostile.corpus import GOOD_SCENARIO, materialize
from verifier.cli import main

REPORT_NAMES = ("summary.json", "report.md", "report.html", "junit.xml", "counterexample.json")
CASES = FIRST + corpus_types.CASES


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 800
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_malformed_input_is_one_line_and_exit_2(case, tmp_path, capsys):
    argv = materialize(case, tmp_path)
    before = {p for p in tmp_path.rglob("*")}
    code = main(argv)
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code == 2, f"exit {code}: {err[-300:] or captured.out[-300:]}"
    assert "Traceback" not in captured.err + captured.out
    assert len(err.splitlines()) == 1 and err.startswith("kraft-verify: error:"), err
    left = [p for p in tmp_path.rglob("*") if p not in before and p.name in REPORT_NAMES]
    assert not left, left
    changed = [name for name, content in case.files.items() if content is not None
               and (not (tmp_path / name).is_file() or (tmp_path / name).read_bytes() != content)]
    assert not changed, f"the user's files were changed or removed: {changed}"


# Two hostile environments the corpus's argument lists cannot carry.

def test_a_deleted_working_directory_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()                 # Hypothesis' database asked os.getcwd() for it: a FileNotFoundError traceback
    code = main(["fuzz", "--examples", "1", "--steps", "1", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("kraft-verify: error:"), err
    assert not (tmp_path / "r").exists()


def test_a_console_that_is_not_utf8_gets_escapes_not_a_traceback(tmp_path):
    scenario = dict(GOOD_SCENARIO, name="caf\u00e9")
    (tmp_path / "s.json").write_text(json.dumps(scenario))
    env = dict(os.environ, PYTHONIOENCODING="ascii")
    r = subprocess.run([sys.executable, "-m", "verifier.cli", "replay", "-v", str(tmp_path / "s.json")],
                       capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-300:]
    assert "caf\\xe9" in r.stdout
