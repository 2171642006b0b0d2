"""`check --workers N` and `--estimate`: the compiled search on every core by default, the
interpreted one in one process; the estimate samples the engine the check would run. (That the
kernel's threads find what one thread finds: test_kernel_engine.py.)"""
from __future__ import annotations

import json
import re


def test_the_cli_runs_on_every_core_by_default_and_says_so(cli, tmp_path):
    r = cli("check", "--bound", "isr_shrinks=0", "-q", "--out", str(tmp_path))
    assert r.returncode == 0 and "engine: kernel (the model compiled), 2 threads" in r.stdout, r.stdout
    r = cli("check", "--bound", "isr_shrinks=0", "-q", "--out", str(tmp_path), "--engine", "python")
    assert r.returncode == 0 and "engine: bfs, the interpreted Python search, one process" in r.stdout, r.stdout
    for extra, why in ((["--workers", "2"], "runs in one process"),
                       (["--checkpoint-dir", str(tmp_path / "ck")], "checkpoints are the compiled search's")):
        bad = cli("check", "--engine", "python", *extra, "--out", str(tmp_path))
        assert bad.returncode == 2 and why in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert not (tmp_path / "ck").exists()


def test_the_estimate_of_a_known_config_lands_within_its_range(cli, tmp_path):
    """The default config has 324,861 states and depth 32 (an exhaustive run says so); the
    interpreted search, 4 s in, has not seen them all."""
    r = cli("check", "--estimate", "4", "--engine", "python", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    est = json.loads(next(tmp_path.glob("estimate-*/estimate.json")).read_text())
    assert est["engine"] == "bfs"
    assert not est["exact"] and est["states_low"] <= 324_861 <= est["states_high"], est
    assert est["seconds_low"] <= est["seconds"] <= est["seconds_high"]
    assert "a forecast" in r.stdout


def test_the_estimate_samples_on_the_engine_the_check_would_run(cli, tmp_path):
    """check runs the kernel by default, so --estimate samples the kernel: its time forecast is
    the kernel's, not the Python search's 20-40x slower one. brokers 4 has 7,499,896 states (an
    exhaustive run says so); the kernel stops inside a level, whose part the forecast drops."""
    r = cli("check", "--estimate", "4", "--brokers", "4", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "sampled on: kernel" in r.stdout
    est = json.loads(next(tmp_path.glob("estimate-*/estimate.json")).read_text())
    assert est["engine"] == "kernel" and not est["exact"], est
    assert est["states_low"] <= 7_499_896 <= est["states_high"], est
    finished = int(re.search(r"forecast from (\d+) finished levels", r.stdout).group(1))
    assert finished == len(est["sample_levels"]) - 1, "the level the sample stopped in was not dropped"
