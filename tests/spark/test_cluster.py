"""spark-check on a shared-nothing cluster, as an operator runs it: a Spark standalone master
and two workers and the driver, each in its own mount namespace (its own /tmp and /var/tmp),
and Apache Hadoop's own NameNode and DataNodes as the checkpoint store (spark/cluster.py),
started when a test first asks for an HDFS URL.
Nothing is mocked; every run is compared with `kraft-verify check` on the same config.

CI runs a two-worker run with a shared-nothing /tmp (a 25-level config) and the two refusals;
a shared checkpoint store is run in CI by tests/spark/test_s3.py. The operator's experiment on
the default config, the runs with an HDFS checkpoint (the default config, a violating preset,
4 brokers to depth 12), spark-submit of the packed project and the fault cases (a worker
killed mid-level, the driver killed and resumed, a DataNode restarted between levels) and
HDFS alone from the command line (started, stopped, started again with its files) are
marked nightly, minutes each: `make nightly` runs them.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("namespace-cluster")     # one cluster, on one test worker

from spark.cluster import Cluster, ClusterError
from tests.conftest import run_cli

DEFAULT: list[str] = []
VIOLATING = ["--preset", "pre-kip-966"]
WIDE = ["--brokers", "4", "--max-depth", "12"]
SHARED_NOTHING = ["--bound", "lossy_crashes=0"]     # 25 levels, 15,232 states: CI's two-worker run
_checks: dict = {}


@pytest.fixture(scope="module")
def cluster():
    base = Path(f"/var/tmp/kraft-verify-test-cluster-{os.getpid()}")
    try:
        c = Cluster(base).start(hdfs=False)          # HDFS on first use: CI's tests here need none
    except ClusterError as exc:        # never a skip: the cluster is what these tests are about
        pytest.fail(f"cannot start the namespace cluster: {exc}", pytrace=False)
    yield c
    c.stop()
    shutil.rmtree(base, ignore_errors=True)


def facts(summary: dict) -> dict:
    """What must be equal between check and spark-check: counts, levels, verdicts, and each
    counterexample's length."""
    counts = summary["counts"]
    return {"result": summary["result"], "exit_code": summary["exit_code"],
            "states": counts["distinct_states"], "transitions": counts["transitions"], "depth": counts["depth"],
            "per_level": counts["states_per_level"], "terminal": counts["terminal_states"],
            "verdicts": {i["name"]: i["status"] for i in summary["invariants"]},
            "lengths": {n: c["length"] for n, c in summary["counterexamples"].items()}}


def summary_in(out: Path) -> dict:
    runs = sorted(out.glob("*/summary.json"), key=lambda p: p.stat().st_mtime)
    assert runs, f"no report under {out}"
    return json.loads(runs[-1].read_text())


def check(args: list[str], tmp: Path) -> dict:
    """`kraft-verify check ARGS`, once per config in this module."""
    key = tuple(args)
    if key not in _checks:
        got = run_cli("check", *args, "-q", "--out", str(tmp / "check"))
        assert got.returncode in (0, 1, 3), got.stderr
        _checks[key] = facts(summary_in(tmp / "check"))
    return _checks[key]


class Driver:
    """spark-check on the driver's own "host"; its progress lines are collected as they come."""

    def __init__(self, cluster: Cluster, args: list[str], out: Path):
        argv = [sys.executable, "-m", "verifier.cli", "spark-check", "--master", cluster.master_url, *args,
                "--out", str(out)]
        self.proc = cluster.driver(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env_extra={"COLUMNS": "200"})
        self.lines: list[str] = []
        self.err = ""
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def _read_err(self) -> None:
        self.err = self.proc.stderr.read()

    def level_done(self, level: int) -> bool:
        """A progress line ("level  12:  ...") of `level` or later has been printed."""
        for line in list(self.lines):
            words = line.split()
            if len(words) > 1 and words[0] == "level" and words[1].rstrip(":").isdigit() \
                    and int(words[1].rstrip(":")) >= level:
                return True
        return False

    def wait_for_level(self, level: int, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while not self.level_done(level):
            assert self.proc.poll() is None, f"the driver ended (exit {self.proc.returncode}) before level {level}: " \
                                             f"{self.err[-500:]}"
            assert time.monotonic() < deadline, f"level {level} not reached in {timeout}s"
            time.sleep(0.1)

    def wait(self, timeout: float = 1800) -> int:
        code = self.proc.wait(timeout=timeout)
        self._t.join(timeout=10)
        return code


def spark_check(cluster: Cluster, args: list[str], out: Path) -> tuple[int, str, str]:
    d = Driver(cluster, args, out)
    code = d.wait()
    time.sleep(0.2)
    return code, "\n".join(d.lines), d.err


def hdfs(cluster: Cluster, name: str) -> str:
    """A checkpoint URL on the cluster's HDFS, started by the first test that asks."""
    if not cluster.hdfs_url:
        try:
            cluster.start_hdfs()
        except ClusterError as exc:
            pytest.fail(f"cannot start HDFS: {exc}", pytrace=False)
    return f"{cluster.hdfs_url}/{name}"


# ---------------------------------------------------------------- equal to check (CI: the operator's experiment)

def test_a_two_worker_run_with_a_shared_nothing_tmp_ends_green_with_checks_states(cluster, tmp_path):
    """CI's run of the operator's experiment (below, nightly): no checkpoint, every level on
    the executors, each with its own /tmp; a config of 25 levels (15,232 states) instead of the
    default's 32 (324,861), since what fails without a shared disk fails at the first level."""
    out = cluster.base / "out-shared-nothing"
    code, stdout, err = spark_check(cluster, [*SHARED_NOTHING, "--driver-levels", "0", "-q"], out)
    assert code == 0, err[-2000:]
    got = facts(summary_in(out))
    assert got == check(SHARED_NOTHING, tmp_path)
    assert got["states"] == 15_232 and got["depth"] == 25


def test_each_host_has_its_own_tmp_on_the_disk_not_in_ram(cluster):
    """A host's scratch is a disk, as on a real cluster: on a tmpfs the shuffle files and
    spilled blocks of the old overnight config (125,726,174 states) took 14 GB of RAM and the
    kernel's OOM killer took the executors in level 19."""
    def on_a_driver(script: str) -> str:
        proc = cluster.driver(["sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        return out
    kinds = on_a_driver("echo one > /tmp/kv-mark && stat -f -c %T /tmp && stat -f -c %T /var/tmp").split()
    assert kinds and "tmpfs" not in kinds, kinds
    assert (cluster.host(f"driver{cluster.drivers}") / "tmp" / "kv-mark").read_text() == "one\n"
    assert "kv-mark" not in on_a_driver("ls -a /tmp").split()       # another host's /tmp
    assert (cluster.host("worker0") / "tmp" / "spark-work").is_dir()      # a worker's, where Spark put it
    assert "tmpfs" not in subprocess.run(["stat", "-f", "-c", "%T", str(cluster.host("worker0"))],
                                         capture_output=True, text=True, check=True).stdout


@pytest.mark.nightly
def test_the_operators_experiment_ends_green_with_checks_states(cluster, tmp_path):
    """The run that died on the driver's /tmp: the default config, no checkpoint, every level on
    the executors."""
    out = cluster.base / "out-operator"
    code, stdout, err = spark_check(cluster, ["--driver-levels", "0", "-q"], out)
    assert code == 0, err[-2000:]
    got = facts(summary_in(out))
    assert got == check(DEFAULT, tmp_path)
    assert got["states"] == 324_861


@pytest.mark.nightly
@pytest.mark.parametrize("args", [DEFAULT, VIOLATING, WIDE],
                         ids=["default", "pre-kip-966", "brokers4-depth12"])
def test_with_an_hdfs_checkpoint_spark_check_is_checks_run(cluster, tmp_path, args):
    name = "ck-" + ("-".join(a.strip("-") for a in args) or "default")
    out = cluster.base / f"out-{name}"
    code, stdout, err = spark_check(cluster, [*args, "--driver-levels", "0", "-q", "--checkpoint-dir",
                                              hdfs(cluster, name)], out)
    want = check(args, tmp_path)
    assert code == want["exit_code"], err[-2000:]
    assert facts(summary_in(out)) == want
    assert f"checkpoint={hdfs(cluster, name)}" in stdout


def test_a_checkpoint_no_executor_can_write_is_one_line_and_exit_2(cluster):
    """The driver's own /tmp: the driver can write there, the executors (other hosts) cannot
    see what it wrote nor it theirs; refused before the first level."""
    code, stdout, err = spark_check(cluster, ["--checkpoint-dir", "/tmp/kv-ck"], cluster.base / "out-local")
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "executors" in err, err
    assert "level   1" not in stdout


def test_an_unreachable_namenode_is_one_line_and_exit_2(cluster):
    from spark.cluster import _free_port
    url = f"hdfs://127.0.0.1:{_free_port()}/ck"
    t0 = time.monotonic()
    code, stdout, err = spark_check(cluster, ["--checkpoint-dir", url], cluster.base / "out-nn")
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and url in err and "Connect" in err, err
    assert time.monotonic() - t0 < 120


@pytest.mark.nightly
def test_spark_submit_of_the_packed_project(cluster, tmp_path):
    """README's standalone recipe: the environment shipped with --archives, the executors
    running ./environment/bin/python, the driver the same environment unpacked."""
    from spark.package import build
    work = cluster.base / "package"
    archive = build(work / "kraft-verify-env.tar.gz", work)
    python = work / "env" / "bin" / "python"
    app = subprocess.run([str(python), "-c", "import verifier.cli.submit as m; print(m.__file__)"], capture_output=True,
                         text=True, cwd="/", check=True).stdout.strip()
    assert app.startswith(str(work / "env")), app          # the packed project, not this checkout
    out = cluster.base / "out-submit"
    args = ["--preset", "pre-kip-966", "--brokers", "2", "--bound", "lossy_crashes=1", "--bound", "isr_shrinks=1"]
    submit = os.path.join(os.path.dirname(__import__("pyspark").__file__), "bin", "spark-submit")
    proc = cluster.driver([submit, "--master", cluster.master_url, "--archives", f"{archive}#environment", app,
                           "spark-check", *args, "--driver-levels", "0", "-q", "--out", str(out),
                           "--checkpoint-dir", hdfs(cluster, "ck-submit")],
                          env_extra={"PYSPARK_PYTHON": "./environment/bin/python",
                                     "PYSPARK_DRIVER_PYTHON": str(python)},
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, err = proc.communicate(timeout=1200)
    want = check(args, tmp_path)
    assert proc.returncode == want["exit_code"], (stdout + err)[-3000:]
    assert facts(summary_in(out)) == want
    assert f"master={cluster.master_url}" in stdout


# ---------------------------------------------------------------- nightly: faults

@pytest.mark.nightly
def test_a_worker_killed_mid_level_loses_and_doubles_nothing(cluster, tmp_path):
    out = cluster.base / "out-worker-kill"
    d = Driver(cluster, [*WIDE, "--driver-levels", "0", "--checkpoint-dir", hdfs(cluster, "ck-worker-kill")], out)
    d.wait_for_level(9)
    time.sleep(1.0)                       # inside level 10's job
    assert d.proc.poll() is None
    cluster.signal("worker1", signal.SIGKILL)      # the worker and its executor (one process group)
    try:
        code = d.wait()
    finally:
        cluster.start_worker(1)           # the next tests have two workers again
    want = check(WIDE, tmp_path)
    assert code == want["exit_code"], d.err[-2000:]
    assert facts(summary_in(out)) == want
    assert "Lost executor" in next(out.glob("*/spark.log")).read_text()     # Spark saw it go


@pytest.mark.nightly
def test_the_driver_killed_resumes_from_the_hdfs_checkpoint(cluster, tmp_path):
    out = cluster.base / "out-driver-kill"
    args = [*WIDE, "--driver-levels", "0", "--checkpoint-dir", hdfs(cluster, "ck-driver-kill")]
    d = Driver(cluster, args, out)
    d.wait_for_level(9)
    time.sleep(1.0)
    os.killpg(d.proc.pid, signal.SIGKILL)
    d.wait()
    code, stdout, err = spark_check(cluster, [*args, "--resume"], out)
    want = check(WIDE, tmp_path)
    assert code == want["exit_code"], err[-2000:]
    assert "(resuming)" in stdout
    first = int(next(line for line in stdout.splitlines() if line.startswith("level")).split()[1].rstrip(":"))
    assert first >= 10, stdout            # it went on from the checkpoint, not from level 1
    assert facts(summary_in(out)) == want


@pytest.mark.nightly
def test_a_datanode_restarted_between_levels_loses_nothing(cluster, tmp_path):
    out = cluster.base / "out-datanode"
    d = Driver(cluster, [*WIDE, "--driver-levels", "0", "--checkpoint-dir", hdfs(cluster, "ck-datanode")], out)
    d.wait_for_level(8)
    cluster.restart_datanode(0)           # SIGKILL, down 2 s, started again on its disk
    assert d.proc.poll() is None and not d.level_done(12)      # while the run went on
    code = d.wait()
    want = check(WIDE, tmp_path)
    assert code == want["exit_code"], d.err[-2000:]
    assert facts(summary_in(out)) == want


@pytest.mark.nightly
def test_hdfs_alone_from_the_command_line_keeps_its_files_across_a_stop(tmp_path):
    """`python -m spark.cluster hdfs 1`: a local master's checkpoint store (BENCHMARKS' billion
    run on HDFS): the NameNode listening with one DataNode and replication 1, gone after `stop`;
    `hdfs 1 keep` starts it again on the same port with the files written before (a run
    resumed in a later session); a bad count, a bad word or one argument too many is one line
    and exit 2."""
    from spark.standalone import listening
    base = tmp_path / "hdfs"
    env = dict(os.environ, KRAFT_VERIFY_CLUSTER_DIR=str(base))

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "spark.cluster", *args], env=env, capture_output=True,
                              text=True, timeout=300)

    def shell(url, *args):       # Hadoop's own FsShell, as a client on another host would be
        java, henv = Cluster(base)._hadoop_env(base / "conf" / "namenode")
        return subprocess.run(java + ["org.apache.hadoop.fs.FsShell", "-fs", url, *args], env=henv,
                              capture_output=True, text=True, timeout=120)
    for bad in (["hdfs", "0"], ["hdfs", "two"], ["hdfs", "1", "again"], ["hdfs", "1", "keep", "3"]):
        got = cli(*bad)
        assert got.returncode == 2 and len(got.stderr.strip().splitlines()) == 1, (bad, got.stderr)
        assert not (base / "pids").exists()
    assert cli("hdfs", "1", "keep").returncode == 2           # nothing to keep yet
    (tmp_path / "f").write_bytes(b"level 0\n" * 1000)
    ports = []
    try:
        for keep in ((), ("keep",)):
            got = cli("hdfs", "1", *keep)
            if got.returncode != 0:
                pytest.fail(f"cannot start HDFS alone: {got.stderr.strip()[-300:]}", pytrace=False)
            url = got.stdout.split()[1]
            ports.append(int(url.rsplit(":", 1)[1]))
            assert url.startswith("hdfs://") and listening(ports[-1])
            assert sorted(p.name for p in (base / "pids").iterdir()) == ["datanode0", "namenode"]
            site = (base / "conf" / "namenode" / "hdfs-site.xml").read_text()
            assert "<name>dfs.replication</name><value>1</value>" in site
            if not keep:
                put = shell(url, "-put", str(tmp_path / "f"), "/kv-f")
                assert put.returncode == 0, put.stderr[-500:]
            else:
                cat = shell(url, "-cat", "/kv-f")
                # (log4j's console lines come first on the same stdout)
                lines = cat.stdout.splitlines()
                assert cat.returncode == 0 and lines.count("level 0") == 1000 == len(lines[lines.index("level 0"):]), \
                    cat.stderr[-500:]
            assert cli("stop").returncode == 0
            deadline = time.monotonic() + 30
            while listening(ports[-1]) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not listening(ports[-1])
    finally:
        cli("stop")
    assert ports[0] == ports[1]
