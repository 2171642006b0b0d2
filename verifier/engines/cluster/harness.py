"""The harness: a real cluster started in the model's initial state, the model's steps acted out
on it, and what it shows after each step.

`observe()` returns the controller views the metadata log went through since the last call (one
per record batch that changed the view: a batch is one controller event's atomic write) and the
data side now (each replica's log from its files, which brokers run, the leader's high
watermark, the acknowledged records). Broker epochs are shown as incarnation numbers, Kafka's and
the model's alike: an epoch is compared by when it changed, which is all any rule reads of it
(docs/conform.md, "Broker epochs").
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, NamedTuple, Optional

from kafka.protocol.admin import (AlterPartitionReassignmentsRequest, CreateTopicsRequest, ElectLeadersRequest,
                                  IncrementalAlterConfigsRequest)

from verifier.core import stop
from verifier.engines.cluster import observe as O
from verifier.engines.cluster import wire as W
from verifier.engines.cluster.cluster import CONTROLLER_ID, Cluster, ClusterError
from verifier.engines.cluster.net import Held
from verifier.engines.cluster.dist import Dist

TOPIC = "kv"
PRODUCE_TIMEOUT_MS = 900_000          # an acks=all produce waits this long for the HWM


class Stopped(Exception):
    """A signal asked the run to stop while it waited on the cluster (str() is the reason)."""


class Data(NamedTuple):
    """What the cluster holds now, of partition 0; with several partitions, `parts` holds each
    partition's own (every field but `alive` that partition's)."""
    alive: dict[int, bool]
    logs: dict[int, list]               # broker -> [(leader epoch, record id)]
    hwm: Optional[int]                  # the leader's high watermark as a consumer sees it (None: no answer)
    acked: tuple[int, ...]              # records whose acks=all produce succeeded
    hwms: dict = {}                     # running broker -> its HWM checkpoint (written every 200 ms)
    parts: tuple = ()                   # with several partitions: each one's Data

    def each(self) -> tuple:
        """Each partition's Data, in partition order."""
        return self.parts or (self,)


class Observation(NamedTuple):
    views: list[dict]                   # controller views after each batch that changed it
    records: list[list[str]]            # the record types of each of those batches
    data: Data
    error: Optional[str]                # the answer to the step's request (admin steps), None otherwise


class Harness(Held):
    def __init__(self, dist: Dist, brokers: tuple, replicas: tuple, min_isr: int, unclean: bool,
                 session_ms: int = 3000, lag_ms: int = 10000, timeout: float = 45.0, elr: bool = False,
                 partitions: int = 1):
        # ELR: the feature the model's rules assume, set when the cluster is formatted (4.0 to 4.3
        # format without it; 3.9 runs it only at its unstable metadata version 4.0-IV0, which the
        # command line refuses before this)
        features = ("eligible.leader.replicas.version=1",) if elr else ()
        self.cluster = Cluster(dist, brokers, replicas, min_isr, unclean, session_ms=session_ms, lag_ms=lag_ms,
                               features=features)
        self.dist, self.timeout, self.partitions = dist, timeout, partitions
        self.tail: Optional[O.Tail] = None
        self.fold = O.Fold(TOPIC, CONTROLLER_ID)
        self.read = 0                    # batches folded so far
        self.view = self.fold.view()
        self.produces: list[W.Produce] = []
        self.incarnations: dict[int, list[int]] = {}     # broker -> Kafka epochs seen, in order
        self.pending: list[tuple[dict, list[str]]] = []  # views drained since the last observation

    # ---------------------------------------------------------------- setup and teardown
    def setup(self) -> None:
        c = self.cluster
        c.setup()
        self.tail = O.Tail(self.dist.classpath, c.controller.data / "__cluster_metadata-0")
        for node in c.nodes.values():
            node.start()
        self.until(lambda: set(self.fold.brokers) >= set(c.brokers)
                   and not any(self.fold.brokers[b]["fenced"] for b in c.brokers), "every broker registered and unfenced")
        T = CreateTopicsRequest.CreatableTopic
        resp = W.call(c.controller_port, CreateTopicsRequest(topics=[T(
            name=TOPIC, num_partitions=-1, replication_factor=-1,
            assignments=[T.CreatableReplicaAssignment(partition_index=p, broker_ids=list(c.replicas))
                         for p in range(self.partitions)],
            configs=[T.CreatableTopicConfig(name="min.insync.replicas", value=str(c.min_isr)),
                     T.CreatableTopicConfig(name="unclean.leader.election.enable", value=str(c.unclean).lower())])],
            timeout_ms=30000, validate_only=False), self.timeout)
        if resp.topics[0].error_code != 0:
            raise ClusterError(f"creating the topic: {W.error_name(resp.topics[0].error_code)} "
                               f"{resp.topics[0].error_message or ''}".strip())
        self.until(lambda: len(self.fold.parts) == self.partitions
                   and all(p["isr"] == list(c.replicas) for p in self.fold.parts.values())
                   and self.fold.configs.get("unclean.leader.election.enable") is not None,
                   "the topic created, each partition with its whole ISR")
        self.settle()
        self.view = self.fold.view()
        self.pending = []
        # the incarnation each broker runs now is the model's first (a broker may register twice
        # while the cluster starts)
        self.incarnations = {b: [v["epoch"]] for b, v in self.fold.brokers.items()}

    def keep_metadata(self, where: Path) -> Path:
        """A copy of the controller's metadata log (`__cluster_metadata-0`: its segments and
        snapshots, as the controller wrote them) in `where`, so that the run can be validated
        afterwards (`kraft-verify validate-log`) and kept as evidence."""
        import shutil
        source = self.cluster.controller.data / "__cluster_metadata-0"
        target = where / "__cluster_metadata-0"
        target.mkdir(parents=True, exist_ok=True)
        for f in source.iterdir():          # the records; not the indexes (sparse, 10 MB each) or the lock
            if f.suffix in (".log", ".checkpoint") and f.is_file():
                shutil.copy2(f, target / f.name)
        return target

    def close(self) -> None:
        if self.tail is not None:
            self.tail.close()
            self.tail = None
        self.cluster.close()

    # ---------------------------------------------------------------- reading
    def drain(self) -> list[tuple[dict, list[str]]]:
        """Fold the batches that arrived; the views they changed to, with their record types."""
        if self.tail.error and self.read >= len(self.tail.batches):
            raise ClusterError(self.tail.error)
        out = []
        while self.read < len(self.tail.batches):
            kinds = self.fold.apply(self.tail.batches[self.read])
            self.read += 1
            for b, v in self.fold.brokers.items():
                seen = self.incarnations.setdefault(b, [])
                if v["epoch"] not in seen:
                    seen.append(v["epoch"])
            now = self.fold.view()
            if now != self.view and len(self.fold.parts) == self.partitions:
                out.append((now, kinds))
            self.view = now
        self.pending += out
        return out

    def until(self, test, what: str, timeout: Optional[float] = None) -> None:
        """Wait for `test()` (read after each drain); ClusterError naming `what` on timeout; a stop
        request (SIGINT, SIGTERM) ends the wait with stop.Stopped."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            self.drain()
            if test():
                return
            if stop.requested():
                raise Stopped(stop.reason())
            if time.monotonic() > deadline:
                raise ClusterError(f"the cluster did not reach {what} within "
                                   f"{self.timeout if timeout is None else timeout:g} s")
            self.check_alive()
            time.sleep(0.05)

    def check_alive(self) -> None:
        """A JVM that died without the harness stopping it ends the run (one line, exit 2)."""
        for node in self.cluster.nodes.values():
            if node.died():
                raise ClusterError(f"broker {node.id} died (exit {node.proc.returncode}) without the harness "
                                   f"stopping it: {node.last_log_line()}")
        if not self.cluster.controller.running:
            raise ClusterError(f"the controller exited: {self.cluster.controller.last_log_line()}")

    def log(self, b: int, partition: int = 0) -> list:
        return O.read_log(self.cluster.partition_dir(b, TOPIC, partition))

    def data(self) -> Data:
        c = self.cluster
        alive = {b: n.running for b, n in c.nodes.items()}
        each = [self._data(alive, p) for p in range(self.partitions)]
        return each[0] if self.partitions == 1 else each[0]._replace(parts=tuple(each))

    def leader_hwm(self, leader: int, p: int) -> Optional[int]:
        """Partition p's high watermark as a consumer sees it from `leader` (None: no answer)."""
        try:
            return W.high_watermark(self.cluster.nodes[leader].port, TOPIC, 5, p)
        except W.WireError:
            return None

    def _data(self, alive: dict, p: int) -> Data:
        """Partition p's replicas, leader HWM, acknowledgements and HWM checkpoints."""
        c = self.cluster
        logs = {b: self.log(b, p) for b in c.brokers}
        leader = self.fold.parts.get(p, {}).get("leader", -1)
        hwm = self.leader_hwm(leader, p) if alive.get(leader) and not c.controller_cut(leader) else None
        acked = tuple(sorted(int(x.value[1:]) for x in self.produces if x.result == "NONE" and x.partition == p))
        # Kafka loads a replica's HWM as min(checkpoint, log end) (a lossy crash leaves a checkpoint
        # above the cut log until the broker writes it again, 200 ms after it loaded the partition)
        hwms = {b: _at_most(O.hwm_checkpoint(c.nodes[b].data, TOPIC, p), len(logs[b] or ())) for b in c.brokers
                if alive[b]}
        return Data(alive, logs, hwm, acked, hwms)

    def observe(self, error: Optional[str] = None) -> Observation:
        """Everything since the last observation: the views the log went through and the data now."""
        self.settle()
        self.check_alive()
        views, self.pending = self.pending, []
        return Observation([v for v, _ in views], [k for _, k in views], self.data(), error)

    def settle(self, quiet: float = 1.2) -> list[tuple[dict, list[str]]]:
        """Wait until no batch changed the view for `quiet` seconds and the data stood still."""
        seen, last, data = [], time.monotonic(), None
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            got = self.drain()
            now = (self.data(), len(self.tail.batches))
            if got or now[0] != data:
                seen += got
                data, last = now[0], time.monotonic()
            elif time.monotonic() - last >= quiet:
                break
            if stop.requested():
                raise Stopped(stop.reason())
            time.sleep(0.1)
        return seen

    def epoch_index(self, b: int, epoch: int) -> int:
        seen = self.incarnations.setdefault(b, [])
        if epoch not in seen:
            seen.append(epoch)
        return seen.index(epoch)

    # ---------------------------------------------------------------- admin requests (to the controller)
    def admin(self, request) -> Any:
        return W.call(self.cluster.controller_port, request, self.timeout)

    def set_config(self, name: str, value: str) -> Optional[str]:
        R = IncrementalAlterConfigsRequest.AlterConfigsResource
        resp = self.admin(IncrementalAlterConfigsRequest(resources=[R(resource_type=2, resource_name=TOPIC, configs=[
            R.AlterableConfig(name=name, config_operation=0, value=value)])], validate_only=False))
        return _error(resp.responses[0].error_code)

    def elect(self, unclean: bool, partition: int = 0) -> Optional[str]:
        T = ElectLeadersRequest.TopicPartitions
        resp = self.admin(ElectLeadersRequest(election_type=1 if unclean else 0,
                                              topic_partitions=[T(topic=TOPIC, partitions=[partition])],
                                              timeout_ms=30000))
        return _error(resp.error_code) or _error(resp.replica_election_results[0].partition_result[0].error_code)

    def reassign(self, replicas: list[int], partition: int = 0) -> Optional[str]:
        T = AlterPartitionReassignmentsRequest.ReassignableTopic
        resp = self.admin(AlterPartitionReassignmentsRequest(timeout_ms=30000, topics=[T(name=TOPIC, partitions=[
            T.ReassignablePartition(partition_index=partition, replicas=replicas)])]))
        return _error(resp.error_code) or _error(resp.responses[0].partitions[0].error_code)

    def produce(self, leader: int, record: int, partition: int = 0) -> W.Produce:
        p = W.Produce(self.cluster.nodes[leader].port, TOPIC, f"r{record}".encode(), PRODUCE_TIMEOUT_MS, partition)
        self.produces.append(p)
        return p


def _error(code: int) -> Optional[str]:
    """Kafka's name for an answer's error code, None for 0 (no error)."""
    return None if code == 0 else W.error_name(code)


def _at_most(hwm: Optional[int], log_end: int) -> Optional[int]:
    return None if hwm is None else min(hwm, log_end)
