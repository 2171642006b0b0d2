"""A real KRaft cluster of one Kafka release on this machine: a dedicated controller and the
model's brokers (broker ids equal to the model's), one JVM each under a numeric uid of its own
(no user is created), on free loopback ports, in a temporary directory, with the iptables rules
that cut links in a chain of its own.

Why this shape (docs/cluster.md has the measurements): a separate controller keeps the
whole metadata log in one place, like the model's one controller; per-broker uids let iptables
tell brokers apart on loopback (`-m owner`), and marking each connection when it opens
(`CONNMARK`) cuts both directions of one follower-leader link.

`Cluster` is a context manager: `close()` kills every JVM it started, deletes its chain and
removes its directory, on every exit path (the caller holds it under verifier.core.stop, so
SIGINT and SIGTERM end in close()); each JVM also gets SIGKILL if this process dies
(`setpriv --pdeathsig`). A chain left by a harness killed with SIGKILL is removed by the next
start (its pid is gone).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from verifier.engines.cluster.dist import Dist
from verifier.engines.cluster.observe import record_batches
from verifier.engines.cluster.net import (CHAIN_PREFIX, DIR_PREFIX, ClusterError, Held, iptables, remove_chain,
                                          remove_stale_chains, remove_stale_dirs)

CONTROLLER_ID = 999           # not a model broker id (the model's are small)
UID_BASE = 47000              # node n runs as uid UID_BASE + n (numeric: no /etc/passwd entry)
MARK_BASE = 0x4B560000        # "KV": connection marks of this harness
def free_ports(n: int) -> list[int]:
    socks, out = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            out.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return out


def _run(cmd: list[str], what: str, timeout: float = 60) -> str:
    try:      # its own session: a terminal's Ctrl-C is the harness's to handle, which cleans up
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, start_new_session=True)
    except FileNotFoundError:
        raise ClusterError(f"{what}: {cmd[0]} is not installed") from None
    except subprocess.TimeoutExpired:
        raise ClusterError(f"{what}: {cmd[0]} did not finish within {timeout:g} s") from None
    if p.returncode != 0:
        last = (p.stderr or p.stdout).strip().splitlines()[-1:] or [f"exit {p.returncode}"]
        raise ClusterError(f"{what}: {last[0][:300]}")
    return p.stdout


COMMON = """controller.listener.names=CONTROLLER
controller.quorum.voters={cid}@127.0.0.1:{cport}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
broker.session.timeout.ms={session_ms}
broker.heartbeat.interval.ms=500
replica.lag.time.max.ms={lag_ms}
replica.fetch.wait.max.ms=200
replica.fetch.backoff.ms=200
replica.socket.timeout.ms=5000
socket.connection.setup.timeout.ms=1000
socket.connection.setup.timeout.max.ms=3000
controller.socket.timeout.ms=5000
auto.leader.rebalance.enable=false
unclean.leader.election.enable=false
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
replica.high.watermark.checkpoint.interval.ms=200
log.dirs={data}
"""

LOG4J2 = """status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
"""

LOG4J = """log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=${kafka.logs.dir}/server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


class Node:
    """One Kafka process: its directory, uid, port and JVM."""

    def __init__(self, cluster: "Cluster", node_id: int, port: int, role: str):
        self.cluster, self.id, self.port, self.role = cluster, node_id, port, role
        self.dir = cluster.dir / (f"b{node_id}" if role == "broker" else "controller")
        self.data = self.dir / "data"
        self.uid = UID_BASE + (0 if role == "controller" else node_id)
        self.proc: Optional[subprocess.Popen] = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def write_config(self) -> None:
        c = self.cluster
        self.data.mkdir(parents=True, exist_ok=True)
        (self.dir / "tmp").mkdir(exist_ok=True)
        lines = COMMON.format(cid=CONTROLLER_ID, cport=c.controller_port, session_ms=c.session_ms, lag_ms=c.lag_ms,
                              data=self.data)
        if self.role == "controller":
            lines += f"process.roles=controller\nnode.id={CONTROLLER_ID}\nlisteners=CONTROLLER://127.0.0.1:{self.port}\n"
        else:
            lines += (f"process.roles=broker\nnode.id={self.id}\nlisteners=PLAINTEXT://127.0.0.1:{self.port}\n"
                      f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}\ninter.broker.listener.name=PLAINTEXT\n"
                      f"default.replication.factor={len(c.replicas)}\nmin.insync.replicas={c.min_isr}\n")
        (self.dir / "server.properties").write_text(lines)
        (self.dir / "log4j2.properties").write_text(LOG4J2)
        (self.dir / "log4j.properties").write_text(LOG4J)

    def java(self, main: str, *args: str) -> list[str]:
        c = self.cluster
        logging = (f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}" if c.dist.log4j2
                   else f"-Dlog4j.configuration=file:{self.dir / 'log4j.properties'}")
        extra = os.environ.get("KRAFT_VERIFY_CLUSTER_JAVA_OPTS", "").split()   # docs/cluster.md
        return ["java", "-Xmx384m", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-XX:-UsePerfData", f"-Djava.io.tmpdir={self.dir / 'tmp'}", f"-Duser.home={self.dir}",
                f"-Dkafka.logs.dir={self.dir}", logging, *extra, "-cp", c.dist.classpath, main, *args]

    def start(self) -> None:
        if self.running:
            return
        cmd = ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--pdeathsig=KILL", "--",
               *self.java("kafka.Kafka", str(self.dir / "server.properties"))]
        out = open(self.dir / "stdout.log", "ab")
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True, env=dict(os.environ, HOME=str(self.dir)))
        except FileNotFoundError:
            raise ClusterError("a real cluster needs setpriv (util-linux) to run each broker under its own uid") \
                from None
        finally:
            out.close()

    def signal(self, sig: int) -> None:
        if self.running:
            os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        """SIGKILL and wait: the process is gone, its page cache stays (the files keep what it wrote)."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
        self.proc = None

    def stop(self, timeout: float = 30) -> bool:
        """SIGTERM (a clean shutdown) and wait; False if it had to be killed."""
        if not self.running:
            return True
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
            self.proc = None               # stopped by the harness: not a death to report
            return True
        except subprocess.TimeoutExpired:
            self.kill()
            return False

    def died(self) -> bool:
        """The process exited without the harness stopping it (a crash of its own, a kill by
        someone else): the cluster no longer runs what the model says."""
        return self.proc is not None and self.proc.poll() is not None

    def last_log_line(self) -> str:
        for name in ("server.log", "stdout.log"):
            p = self.dir / name
            if p.exists():
                lines = [ln for ln in p.read_text(errors="replace").splitlines() if ln.strip()]
                err = [ln for ln in lines if " ERROR " in ln or "Exception" in ln]
                if err or lines:
                    return (err or lines)[-1][:300]
        return "no output"


class Cluster(Held):
    """The cluster; see the module docstring. Start with `with Cluster(...) as c:`."""

    def __init__(self, dist: Dist, brokers: tuple[int, ...], replicas: tuple[int, ...], min_isr: int,
                 unclean: bool, *, session_ms: int = 3000, lag_ms: int = 10000, keep: Optional[Path] = None,
                 features: tuple[str, ...] = ()):
        self.dist, self.brokers, self.replicas = dist, tuple(brokers), tuple(replicas)
        self.min_isr, self.unclean = min_isr, unclean
        self.session_ms, self.lag_ms = session_ms, lag_ms
        self.keep = keep                 # copy the directory here before removing it (logs for a divergence)
        self.features = features         # feature=level settings at format (ELR is off by default in 4.0-4.3)
        self.chain = f"{CHAIN_PREFIX}{os.getpid()}"
        self.dir: Optional[Path] = None
        self.nodes: dict[int, Node] = {}
        self.controller: Optional[Node] = None
        self.controller_port = 0
        self._links_cut: set[str] = set()
        self._stale_kept: set[str] = set()     # links whose stale-connection rule is in the chain

    # ---------------------------------------------------------------- lifecycle
    def setup(self) -> None:
        for tool in ("setpriv", "iptables", "java"):
            if shutil.which(tool) is None:
                hint = {"iptables": " (apt-get install iptables; .ci/run does)", "setpriv": " (util-linux)"}.get(tool, "")
                raise ClusterError(f"a real cluster needs {tool}{hint}")
        if os.geteuid() != 0:
            raise ClusterError("a real cluster needs root: it runs each broker under its own uid and cuts links "
                               "with iptables")
        remove_stale_chains()
        remove_stale_dirs()
        self.dir = Path(tempfile.mkdtemp(prefix=f"{DIR_PREFIX}{os.getpid()}-"))
        self.dir.chmod(0o755)
        ports = free_ports(1 + len(self.brokers))
        self.controller_port = ports[0]
        self.controller = Node(self, CONTROLLER_ID, ports[0], "controller")
        self.nodes = {b: Node(self, b, p, "broker") for b, p in zip(self.brokers, ports[1:])}
        self._install_chain()
        cluster_id = _run(self.controller.java("kafka.tools.StorageTool", "random-uuid"), "StorageTool random-uuid",
                          120).strip().splitlines()[-1]
        for node in [self.controller, *self.nodes.values()]:
            node.write_config()
            feature_args = [a for f in self.features for a in ("--feature", f)]
            _run(node.java("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c",
                           str(node.dir / "server.properties"), *feature_args), f"formatting node {node.id}", 120)
            _chown(node.dir, node.uid)
        self.controller.start()

    def close(self) -> None:
        for node in ([*self.nodes.values(), self.controller] if self.controller else []):
            try:
                node.kill()
            except OSError:
                pass
        if shutil.which("iptables"):
            remove_chain(self.chain)
        if self.dir is not None:
            if self.keep is not None:
                shutil.copytree(self.dir, self.keep, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("*.index", "*.timeindex", "tmp"))
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    # ---------------------------------------------------------------- links
    def _ctrl_mark(self, b: int) -> int:
        return MARK_BASE | (b << 8) | 0xFF

    def _data_mark(self, follower: int, leader: int) -> int:
        return MARK_BASE | (follower << 8) | leader

    def _links(self, b: int):
        """(port, mark) of every link broker b opens: to the controller, and to each other broker."""
        yield self.controller_port, self._ctrl_mark(b)
        for l, other in self.nodes.items():
            if l != b:
                yield other.port, self._data_mark(b, l)

    def _install_chain(self) -> None:
        iptables("-N", self.chain)
        iptables("-I", "OUTPUT", "1", "-o", "lo", "-j", self.chain)
        # Every packet b sends on a link marks the link's connection (not only the first: a
        # connection conntrack picked up mid-stream is marked by b's next packet), so the other
        # side's packets on it carry the mark too.
        for b, node in self.nodes.items():
            for port, mark in self._links(b):
                iptables("-A", self.chain, "-p", "tcp", "-m", "owner", "--uid-owner", str(node.uid), "--dport",
                         str(port), "-j", "CONNMARK", "--set-mark", hex(mark))
        for b in self.nodes:
            for l in self.nodes:
                if l != b:
                    self.cut_data(b, l)

    def _cut_rules(self, b: int, port: int, mark: int) -> list[list[str]]:
        """A cut link: b's packets to the port by owner, and both sides' packets on a marked
        connection (a reply already on its way; a segment of a socket b has closed, which no
        longer has an owner and which TCP retransmits for a while). Dropped, not reset: a reset
        ends conntrack's entry, and with it the mark, and the next retransmission of a closed
        socket's request got through that way (a heartbeat 25 s after the cut unfenced its
        broker). Every connection b uses while the link is cut is marked stale (`_stale`)."""
        owner = ["-p", "tcp", "-m", "owner", "--uid-owner", str(self.nodes[b].uid), "--dport", str(port)]
        return [[*owner, "-j", "CONNMARK", "--set-mark", hex(self._stale(mark))],
                [*owner, "-j", "DROP"],
                ["-p", "tcp", "-m", "connmark", "--mark", hex(mark), "-j", "DROP"]]

    @staticmethod
    def _stale(mark: int) -> int:
        """A connection used while its link was cut stays cut after the heal (its rule comes
        first in the chain, before the marking): a request TCP kept retransmitting through the
        cut is never delivered late. Seen on 3.9.2: a heartbeat a broker sent while cut off,
        delivered by its orphaned socket's retransmission 2.6 s after the broker's controlled
        shutdown, unfenced the stopped broker. A healed link's broker reconnects on a new
        connection when its request times out (controller.socket.timeout.ms,
        replica.socket.timeout.ms: 5 s)."""
        return mark ^ 0x8000

    def _cut(self, b: int, port: int, mark: int, on: bool) -> None:
        key = hex(mark)
        if on and key not in self._links_cut:
            if key not in self._stale_kept:
                iptables("-I", self.chain, "1", "-p", "tcp", "-m", "connmark", "--mark", hex(self._stale(mark)),
                         "-j", "DROP")
                self._stale_kept.add(key)
            for rule in self._cut_rules(b, port, mark):
                iptables("-A", self.chain, *rule)
            self._links_cut.add(key)
        elif not on and key in self._links_cut:
            for rule in self._cut_rules(b, port, mark):
                iptables("-D", self.chain, *rule)
            self._links_cut.discard(key)

    def cut_data(self, follower: int, leader: int) -> None:
        self._cut(follower, self.nodes[leader].port, self._data_mark(follower, leader), True)

    def heal_data(self, follower: int, leader: int) -> None:
        self._cut(follower, self.nodes[leader].port, self._data_mark(follower, leader), False)

    def cut_controller(self, b: int) -> None:
        self._cut(b, self.controller_port, self._ctrl_mark(b), True)

    def heal_controller(self, b: int) -> None:
        self._cut(b, self.controller_port, self._ctrl_mark(b), False)

    def controller_cut(self, b: int) -> bool:
        return hex(self._ctrl_mark(b)) in self._links_cut

    # ---------------------------------------------------------------- replica files
    def partition_dir(self, b: int, topic: str, partition: int = 0) -> Path:
        return self.nodes[b].data / f"{topic}-{partition}"

    def truncate(self, b: int, topic: str, keep: int, partition: int = 0) -> None:
        """Cut b's stopped replica of `partition` to its first `keep` records (one per batch), as a
        crash that lost the unflushed rest leaves it; the indexes go (Kafka rebuilds them when it
        recovers the log)."""
        part = self.partition_dir(b, topic, partition)
        for seg in sorted(part.glob("*.log")):
            data = seg.read_bytes()
            pos = 0                         # the first batch to drop, or where the batches end
            for pos, base, length in record_batches(data):
                if base >= keep:
                    break
                pos += 12 + length
            if pos < len(data):
                with open(seg, "r+b") as f:
                    f.truncate(pos)
        for idx in list(part.glob("*.index")) + list(part.glob("*.timeindex")):
            idx.unlink()


def _chown(path: Path, uid: int) -> None:
    for root, dirs, files in os.walk(path):
        os.chown(root, uid, uid)
        for f in files:
            os.chown(os.path.join(root, f), uid, uid)


__all__ = ["Cluster", "ClusterError", "Node", "free_ports", "remove_stale_chains", "remove_stale_dirs"]
