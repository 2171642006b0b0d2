"""Every malformed input of the corpus (tests/hostile/corpus.py, at least 200 cases): exit 2,
one line on stderr naming the problem, no traceback, and no report under a final name.
The command line runs in this process (`verifier.cli.main`), so the corpus costs seconds."""
from __future__ import annotations

import pytest

from tests.hostile.corpus import CASES, materialize
from verifier.cli import main

REPORT_NAMES = ("summary.json", "report.md", "report.html", "junit.xml", "counterexample.json")


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 200
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
