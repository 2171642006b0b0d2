"""Exit 1 means a violation, a divergence or a surviving mutant, and nothing else (issue 61):
a config no engine can hold is one line and exit 2 on one thread and several, and an error no
part of the run expected (a bug) is its traceback, a report that says the run did not finish,
and exit 2, never Python's exit 1 read as a violation."""
from __future__ import annotations

import json

import pytest

from verifier.cli import main


@pytest.mark.parametrize("workers", ["1", "2"])
def test_more_brokers_than_the_model_holds_is_one_line_and_exit_2(cli, tmp_path, workers):
    config = tmp_path / "spare.toml"
    config.write_text("spare_brokers = [" + ", ".join(str(b) for b in range(100, 10100)) + "]\n")
    res = cli("check", "--config", str(config), "--workers", workers, "--out", str(tmp_path / "r"))
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stderr.strip().splitlines() == [
        "kraft-verify: error: 10003 brokers (replicas and spare_brokers): the model holds at most 15"]


def test_the_most_brokers_the_model_holds_are_checked(cli, tmp_path):
    """Twelve spare brokers beside three replicas: taken, on two threads (whose buffers were sized
    by the 531,200 successors a state could have, and died allocating 32 GB)."""
    config = tmp_path / "spare.toml"
    config.write_text("spare_brokers = [" + ", ".join(str(b) for b in range(100, 112)) + "]\n")
    res = cli("check", "--config", str(config), "--workers", "2", "--max-depth", "3", "-q", "--out", str(tmp_path))
    assert res.returncode == 3 and "max depth 3 reached" in res.stdout, res.stderr[-2000:]


def test_an_internal_error_is_exit_2_with_its_traceback_and_a_report(tmp_path, monkeypatch, capsys):
    import verifier.engines.kernel as kernel

    def broken(*args, **kwargs):
        raise RuntimeError("a bug planted by the test")
    monkeypatch.setattr(kernel.Search, "run", broken)
    code = main(["check", "-q", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" in err and "RuntimeError: a bug planted by the test" in err
    assert err.strip().splitlines()[-1].startswith(
        "kraft-verify: internal error: RuntimeError: a bug planted by the test: a bug in kraft-verify, not a verdict")
    (summary,) = [json.loads(p.read_text()) for p in tmp_path.glob("*/summary.json")]
    assert summary["result"] == "stopped" and summary["exit_code"] == 2
    assert "internal error" in summary["stop_reason"]
