"""A shared-nothing Spark cluster and a real HDFS on this one machine, for the tests that run
spark-check as an operator would on separate hosts (tests/spark/test_cluster.py) and for
trying it by hand:

    .venv/bin/python -m spark.cluster start      # prints the master URL and the HDFS URL
    .venv/bin/kraft-verify spark-check --master spark://... --checkpoint-dir hdfs://.../ck
    .venv/bin/python -m spark.cluster stop
    .venv/bin/python -m spark.cluster fetch      # only fetch Hadoop's jar (make hadoop)
    .venv/bin/python -m spark.cluster hdfs 1     # HDFS alone, one DataNode (replication 1):
                                                 # a local master's checkpoint store

Each Spark process (the master, every worker and its executors, and a driver started with
`driver()`) runs in its own mount namespace (`unshare --mount`) whose /tmp and /var/tmp are
its own empty directories on the disk (`<base>/hosts/<name>/`): what one of them writes to
its local disk no other sees, as on separate hosts. Only the installed software (the
virtualenv, the project, the JDK) is common, as it is on a cluster whose hosts were
provisioned alike. The driver keeps /var/tmp, where the cluster's base directory (its logs,
the HDFS disks and the driver's --out) lives.

HDFS is Apache Hadoop's own NameNode and DataNodes (from `hadoop-client-minicluster`, the
version pyspark's Hadoop client has, fetched from Maven Central into ~/.m2), two DataNodes
with replication 2, so one can be restarted while the run goes on.
"""
from __future__ import annotations

import glob
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

from spark.standalone import HOST, command_line, kill_from_pid_files, listening, spark_home

PRIVATE = ("/tmp", "/var/tmp")        # each Spark process's own "local disk"
BASE = Path(os.environ.get("KRAFT_VERIFY_CLUSTER_DIR", "/var/tmp/kraft-verify-cluster"))


class ClusterError(Exception):
    """Something the cluster needs is missing or did not start: one line."""


def hadoop_version() -> str:
    """The Hadoop client pyspark ships (the NameNode and DataNodes run the same version)."""
    jars = glob.glob(os.path.join(spark_home(), "jars", "hadoop-client-api-*.jar"))
    if not jars:
        raise ClusterError("pyspark has no hadoop-client-api jar")
    return os.path.basename(jars[0])[len("hadoop-client-api-"):-len(".jar")]


def minicluster_jar(fetch: bool = True) -> str:
    """Hadoop's server classes (NameNode, DataNode), fetched once with Maven."""
    version = hadoop_version()
    path = Path.home() / ".m2/repository/org/apache/hadoop/hadoop-client-minicluster" / version / \
        f"hadoop-client-minicluster-{version}.jar"
    if not path.is_file() and fetch:
        if shutil.which("mvn") is None:
            raise ClusterError("Maven (mvn) is needed to fetch hadoop-client-minicluster; run .ci/run's installer")
        got = subprocess.run(["mvn", "-q", "-B", "dependency:get", "-Dtransitive=false",
                              f"-Dartifact=org.apache.hadoop:hadoop-client-minicluster:{version}"],
                             capture_output=True, text=True)
        if got.returncode != 0 or not path.is_file():
            raise ClusterError(f"cannot fetch org.apache.hadoop:hadoop-client-minicluster:{version} from Maven "
                               "Central (no network?)")
    return str(path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def installed() -> str:
    """The directory holding this checkout and its virtualenv: the "installed software" every
    host of the cluster has, so it stays visible when /tmp or /var/tmp is masked (a clean
    clone under /tmp, as CI's may be)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.commonpath([os.path.realpath(sys.prefix), os.path.realpath(root)])


def private_disk(argv: list[str], home: Path, keep: tuple = ()) -> list[str]:
    """`argv` in a new mount namespace whose /tmp and /var/tmp (but `keep`) are its own empty
    directories under `home`, on the real disk: a host's scratch (Spark's shuffle files and
    spilled blocks, tens of GB on a long run) must not live in RAM, as it did on a tmpfs (the
    kernel's OOM killer took the executors of a 125-million-state run). The installed software
    stays visible where it lay under one of them: the shell holds it as its working directory
    while the mount goes over it, then binds "." back. `home` is bound from where it lies
    before the directory it lies under is masked (that one is masked last)."""
    home = Path(os.path.realpath(home))
    masked = sorted((d for d in PRIVATE if d not in keep), key=lambda d: str(home).startswith(d + "/"))
    soft = installed()
    under = [d for d in masked if soft == d or soft.startswith(d + "/")]
    if any(soft == d for d in under):
        raise ClusterError(f"the checkout and its virtualenv share no directory below {soft}: put them in one")
    quote = shlex.quote
    sources = {d: home / d.strip("/").replace("/", "-") for d in masked}
    for src in sources.values():
        src.mkdir(parents=True, exist_ok=True)
    steps = ['start="$PWD"']
    if under:
        steps.append(f"cd {quote(soft)}")
    steps += [f"mount --no-canonicalize --bind {quote(str(sources[d]))} {d}" for d in masked]
    if under:
        steps += [f"mkdir -p {quote(soft)}", f"mount --no-canonicalize --bind . {quote(soft)}"]
    steps += ['{ cd "$start" 2>/dev/null || cd /; }', 'exec "$@"']
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", " && ".join(steps), "sh", *argv]


def _site(props: dict) -> str:
    rows = "".join(f"<property><name>{k}</name><value>{v}</value></property>\n" for k, v in props.items())
    return f"<?xml version=\"1.0\"?>\n<configuration>\n{rows}</configuration>\n"


class Cluster:
    """Start with `start()`, stop with `stop()` (or use it as a context manager)."""

    def __init__(self, base: Path = BASE, workers: int = 2, cores: int = 1, memory: str = "1g", datanodes: int = 2):
        self.base, self.n_workers, self.cores, self.memory, self.n_datanodes = Path(base), workers, cores, memory, datanodes
        self.procs: dict[str, subprocess.Popen] = {}
        self.master_url = self.hdfs_url = ""
        self.nn_port = self.drivers = 0

    # ------------------------------------------------------------ processes

    def _launch(self, name: str, argv: list[str], env: dict, private: bool = True) -> subprocess.Popen:
        log = open(self.base / "logs" / f"{name}.log", "ab")
        proc = subprocess.Popen(private_disk(argv, self.host(name)) if private else argv, env=env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, cwd="/")
        log.close()
        self.procs[name] = proc
        (self.base / "pids").mkdir(exist_ok=True)
        (self.base / "pids" / name).write_text(str(proc.pid))
        return proc

    def host(self, name: str) -> Path:
        """Where process `name`'s private /tmp and /var/tmp lie (its "local disk")."""
        return self.base / "hosts" / name

    def log(self, name: str) -> str:
        try:
            return (self.base / "logs" / f"{name}.log").read_text(errors="replace")
        except OSError:
            return ""

    def _wait(self, what: str, ready, name: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is not None:
                raise ClusterError(f"{what} exited with {proc.returncode} (see {self.base / 'logs' / (name + '.log')})")
            if time.monotonic() > deadline:
                raise ClusterError(f"{what} did not start in {timeout:g}s (see {self.base / 'logs' / (name + '.log')})")
            time.sleep(0.3)

    def signal(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs[name]
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        proc.wait(timeout=60)

    # ------------------------------------------------------------ HDFS

    def _hadoop_env(self, conf: Path) -> tuple[list[str], dict]:
        jars = os.path.join(spark_home(), "jars")
        pick = ["hadoop-client-api-*", "hadoop-client-runtime-*", "slf4j-api-*", "log4j-api-*", "log4j-core-*",
                "log4j-slf4j2-impl-*", "log4j-1.2-api-*", "jcl-over-slf4j-*"]
        cp = [str(conf), minicluster_jar()] + [j for p in pick for j in glob.glob(os.path.join(jars, p + ".jar"))]
        java = shutil.which("java") or "java"
        tmp = self.base / "tmp"          # their jetty-* directories go with the cluster, not to /tmp
        tmp.mkdir(parents=True, exist_ok=True)
        return [java, "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", f"-Djava.io.tmpdir={tmp}",
                "-cp", ":".join(cp)], \
            dict(os.environ, HADOOP_USER_NAME="kraft-verify")

    def _hdfs_conf(self, name: str, extra: dict) -> Path:
        conf = self.base / "conf" / name
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "core-site.xml").write_text(_site({"fs.defaultFS": self.hdfs_url}))
        (conf / "hdfs-site.xml").write_text(_site({
            "dfs.replication": str(min(2, self.n_datanodes)), "dfs.permissions.enabled": "false",
            "dfs.namenode.rpc-address": f"{HOST}:{self.nn_port}", "dfs.namenode.http-address": f"{HOST}:0",
            "dfs.namenode.name.dir": str(self.base / "hdfs" / "name"),
            "dfs.namenode.safemode.extension": "0", "dfs.namenode.safemode.min.datanodes": "1",
            "dfs.heartbeat.interval": "1", "dfs.namenode.heartbeat.recheck-interval": "5000",
            # one DataNode of two down must not stop a write (nothing to replace it with here)
            "dfs.client.block.write.replace-datanode-on-failure.enable": "false",
            "dfs.datanode.address": f"{HOST}:0", "dfs.datanode.http.address": f"{HOST}:0",
            "dfs.datanode.ipc.address": f"{HOST}:0", "dfs.datanode.hostname": HOST,
            **extra}))
        (conf / "log4j2.properties").write_text("rootLogger.level = warn\nrootLogger.appenderRef.o.ref = o\n"
                                                "appender.o.type = Console\nappender.o.name = o\n"
                                                "appender.o.layout.type = PatternLayout\n"
                                                "appender.o.layout.pattern = %d %p %c{1}: %m%n\n"
                                                "logger.dn.name = org.apache.hadoop.hdfs.server.datanode.DataNode\n"
                                                "logger.dn.level = info\n")
        return conf

    def start_hdfs(self, port: int = 0) -> None:
        """A new HDFS, or (`port`: the one it listened on) the one kept under the base
        directory, started again on its own disks, unformatted: a checkpoint there outlives
        the processes (a run resumed in a later session)."""
        again = port > 0
        self.nn_port = port or _free_port()
        self.hdfs_url = f"hdfs://{HOST}:{self.nn_port}"
        conf = self._hdfs_conf("namenode", {})
        java, env = self._hadoop_env(conf)
        if not again:
            fmt = subprocess.run(java + ["org.apache.hadoop.hdfs.server.namenode.NameNode", "-format",
                                         "-nonInteractive", "-force"], env=env, capture_output=True, text=True)
            if fmt.returncode != 0:
                raise ClusterError(f"HDFS NameNode -format failed: "
                                   f"{(fmt.stderr or fmt.stdout).strip().splitlines()[-1:]}")
        before = [self._reports(i) for i in range(self.n_datanodes)]    # started again: its logs had some
        self._launch("namenode", java + ["org.apache.hadoop.hdfs.server.namenode.NameNode"], env, private=False)
        self._wait("the HDFS NameNode", lambda: listening(self.nn_port), "namenode")
        for i in range(self.n_datanodes):
            self.start_datanode(i)
        self._wait("the HDFS DataNodes", lambda: all(self._reports(i) > n for i, n in enumerate(before)), "namenode")

    def start_datanode(self, i: int) -> None:
        name = f"datanode{i}"
        conf = self._hdfs_conf(name, {"dfs.datanode.data.dir": str(self.base / "hdfs" / name)})
        java, env = self._hadoop_env(conf)
        self._launch(name, java + ["org.apache.hadoop.hdfs.server.datanode.DataNode"], env, private=False)

    def _reports(self, i: int) -> int:
        """Block reports DataNode i has sent the NameNode (its log says so): one more than
        before it started means it is registered."""
        return self.log(f"datanode{i}").count("Successfully sent block report")

    def restart_datanode(self, i: int, down: float = 2.0) -> None:
        """Kill DataNode i (SIGKILL), keep it down `down` seconds, start it again on its disk."""
        name = f"datanode{i}"
        reports = self._reports(i)
        self.signal(name, signal.SIGKILL)
        time.sleep(down)
        self.start_datanode(i)
        self._wait(f"DataNode {i}", lambda: self._reports(i) > reports, name)

    # ------------------------------------------------------------ Spark

    def spark_conf(self) -> Path:
        """spark-defaults.conf of every process here. All the "hosts" share one IP, so Spark
        would take two executors for one host and read each other's shuffle files straight
        from "their" disk (spark.shuffle.readHostLocalDisk), which separate hosts never do."""
        conf = self.base / "conf" / "spark"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "spark-defaults.conf").write_text("spark.shuffle.readHostLocalDisk false\n")
        return conf

    def spark_env(self, **extra) -> dict:
        env = dict(os.environ, SPARK_HOME=spark_home(), PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP=HOST,
                   SPARK_CONF_DIR=str(self.spark_conf()),
                   SPARK_NO_DAEMONIZE="1", SPARK_WORKER_DIR="/tmp/spark-work", SPARK_LOCAL_DIRS="/tmp/spark-local",
                   SPARK_LOG_DIR="/tmp/spark-logs", SPARK_PID_DIR="/tmp",
                   SPARK_SUBMIT_OPTS="-Djava.io.tmpdir=/tmp")      # each "host's" own /tmp, whatever the caller's
        env.update(extra)
        return env

    def start_spark(self) -> None:
        port = _free_port()
        cls = os.path.join(spark_home(), "bin", "spark-class")
        self._launch("master", [cls, "org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port),
                                "--webui-port", str(_free_port())], self.spark_env())
        self._wait("the Spark master", lambda: listening(port), "master")
        self.master_url = f"spark://{HOST}:{port}"
        for i in range(self.n_workers):
            self.start_worker(i)

    def start_worker(self, i: int) -> None:
        name = f"worker{i}"
        cls = os.path.join(spark_home(), "bin", "spark-class")
        self._launch(name, [cls, "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", HOST,
                            "--cores", str(self.cores), "--memory", self.memory, "--webui-port", str(_free_port())],
                     self.spark_env())
        self._wait(f"Spark worker {i}", lambda: "Successfully registered with master" in self.log(name), name)

    def executors_of(self, i: int) -> list[int]:
        """Pids of worker i's executor JVMs (its children)."""
        try:
            kids = Path(f"/proc/{self.procs[f'worker{i}'].pid}/task/{self.procs[f'worker{i}'].pid}/children").read_text()
        except OSError:
            return []
        return [int(k) for k in kids.split()]

    def driver(self, argv: list[str], env_extra: Optional[dict] = None, **popen) -> subprocess.Popen:
        """A driver process on its own "host": private /tmp, the cluster's /var/tmp kept."""
        self.drivers += 1
        argv = private_disk(argv, self.host(f"driver{self.drivers}"), keep=("/var/tmp",))
        return subprocess.Popen(argv, env=self.spark_env(**(env_extra or {})), cwd=str(self.base),
                                start_new_session=True, **popen)

    # ------------------------------------------------------------ whole

    def fresh_base(self) -> None:
        """The base directory made anew (an earlier cluster's files, logs and urls gone)."""
        if self.base.exists():
            shutil.rmtree(self.base)
        (self.base / "logs").mkdir(parents=True)

    def start(self, hdfs: bool = True) -> "Cluster":
        """The Spark master and workers, and (with `hdfs`) the NameNode and DataNodes; a caller
        that may not need HDFS starts it later with `start_hdfs()`."""
        if shutil.which("unshare") is None:
            raise ClusterError("unshare (util-linux) is needed for the namespace cluster")
        self.fresh_base()
        probe = subprocess.run(private_disk(["true"], self.host("probe")), capture_output=True, text=True)
        if probe.returncode != 0:
            raise ClusterError(f"cannot make a private mount namespace here ({probe.stderr.strip()[:200]}): "
                               "the namespace cluster needs root or user namespaces")
        try:
            if hdfs:
                self.start_hdfs()
            self.start_spark()
        except BaseException:
            self.stop()
            raise
        (self.base / "urls").write_text(f"{self.master_url}\n{self.hdfs_url}\n")
        return self

    def stop(self) -> None:
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=60)
        self.procs.clear()

    def __enter__(self) -> "Cluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _start() -> str:
    cluster = Cluster().start()
    return f"master: {cluster.master_url}\nhdfs:   {cluster.hdfs_url}\nlogs:   {cluster.base / 'logs'}"


def _hdfs(datanodes: str = "2", keep: str = "") -> str:
    """HDFS alone, for `spark-check --master local[N] --checkpoint-dir hdfs://...`: with one
    DataNode the store holds one copy (replication 1), which is what this one disk has room for
    on a billion-state run (33 bytes a state); `stop` ends it. `hdfs N keep` starts the HDFS
    an earlier `hdfs N` left under the base directory again, on the same port and with its
    files (a checkpoint resumed after `stop`, in another session); without `keep` the base
    directory is made anew."""
    if not datanodes.isdigit() or not 1 <= int(datanodes) <= 8:
        raise ClusterError(f"hdfs DATANODES: a count from 1 to 8, not {datanodes!r}")
    if keep not in ("", "keep"):
        raise ClusterError(f"hdfs DATANODES [keep]: {keep!r} is not keep")
    cluster = Cluster(datanodes=int(datanodes))
    port = 0
    if keep:
        try:
            port = int((cluster.base / "urls").read_text().split()[-1].rsplit(":", 1)[1])
        except (OSError, IndexError, ValueError):
            raise ClusterError(f"no HDFS to keep under {cluster.base} (its urls file names none)") from None
        if not (cluster.base / "hdfs" / "name").is_dir():
            raise ClusterError(f"no HDFS to keep under {cluster.base} (no NameNode directory)")
    else:
        cluster.fresh_base()
    try:
        cluster.start_hdfs(port)
    except BaseException:
        cluster.stop()
        raise
    (cluster.base / "urls").write_text(f"\n{cluster.hdfs_url}\n")
    return f"hdfs:   {cluster.hdfs_url}\nlogs:   {cluster.base / 'logs'}"


if __name__ == "__main__":
    sys.exit(command_line("spark.cluster", {
        "start": _start, "hdfs": _hdfs, "stop": lambda: kill_from_pid_files(sorted((BASE / "pids").glob("*")), signal.SIGKILL),
        "fetch": minicluster_jar}, sys.argv[1:], (ClusterError,)))
