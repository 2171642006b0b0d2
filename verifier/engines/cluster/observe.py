"""What the harness reads off a real cluster: the controller's metadata log (through
kraft-verify's metadata tail, Kafka's own serde) folded into the controller's state one record
batch at a time, and each replica's log read from its segment files.

The fold speaks the conform engine's vocabulary (specs/projection.py, `view`), so the model's
state and Kafka's are compared field by field the same way; broker epochs are Kafka's (the
offset of the registration record) until the comparator maps them to the model's. What the
log cannot show (the controller's ELR index) is not compared.
"""
from __future__ import annotations

import json
import subprocess
import threading
from copy import deepcopy
from pathlib import Path
from typing import Any, Iterator, Optional

from verifier.core import jvm

NO_CHANGE = -2          # PartitionChangeRecord.leader: unchanged
RECOVERY_NO_CHANGE = -1


class TailError(Exception):
    """The metadata tail failed; str() is one line."""


class Tail:
    """A JVM printing the controller's metadata log as JSON lines; `batches` grows as it reads."""

    def __init__(self, classpath: str, log_dir: Path):
        self.batches: list[dict] = []
        self.error: Optional[str] = None
        self._cv = threading.Condition()
        self.proc = subprocess.Popen(
            ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath,
             "io.kraftverify.cluster.MetadataTail", str(log_dir), "50"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                batch = json.loads(line)
                if not isinstance(batch, dict) or not isinstance(batch.get("records"), list):
                    raise ValueError("not a batch")
            except ValueError:
                self.error = f"the metadata tail printed something that is not a batch: {line[:120]!r}"
                break
            with self._cv:
                self.batches.append(batch)
                self._cv.notify_all()
        with self._cv:
            if self.error is None:
                err = self.proc.stderr.read() if self.proc.poll() is not None else ""
                self.error = "the metadata tail stopped: " + (err.strip().splitlines()[-1][:200] if err.strip()
                                                              else "no output")
            self._cv.notify_all()

    def wait(self, count: int, timeout: float) -> bool:
        """Whether at least `count` batches arrived within `timeout` seconds."""
        with self._cv:
            return self._cv.wait_for(lambda: len(self.batches) >= count or self.error is not None, timeout) \
                and len(self.batches) >= count

    def close(self) -> None:
        jvm.close(self.proc, timeout=5)


class Fold:
    """The controller's state after the records folded so far (one topic, its partitions)."""

    def __init__(self, topic: str, controller_id: int):
        self.topic, self.controller_id = topic, controller_id
        self.topic_id: Optional[str] = None
        self.parts: dict[int, dict] = {}           # partition id -> its registration
        self.brokers: dict[int, dict] = {}         # id -> {epoch, fenced, shutting_down}
        self.configs: dict[str, Optional[str]] = {}
        self.records = 0

    def apply(self, batch: dict) -> list[str]:
        """Fold one batch in; the record types it held."""
        kinds = []
        for rec in batch["records"]:
            kind, data = rec["type"], rec["data"]
            kinds.append(kind)
            getattr(self, "_" + kind, lambda d, o: None)(data, rec["offset"])
            self.records += 1
        return kinds

    # one method per record type the model's state depends on
    def _RegisterBrokerRecord(self, d, offset):
        self.brokers[d["brokerId"]] = {"epoch": d.get("brokerEpoch", offset), "fenced": bool(d.get("fenced", True)),
                                       "shutting_down": bool(d.get("inControlledShutdown", False))}

    def _UnregisterBrokerRecord(self, d, offset):
        self.brokers.pop(d["brokerId"], None)

    def _BrokerRegistrationChangeRecord(self, d, offset):
        b = self.brokers.get(d["brokerId"])
        if b is None:
            return
        fenced = d.get("fenced", 0)
        if fenced == 1:
            b["fenced"] = True
        elif fenced == -1:
            b["fenced"] = False
        if d.get("inControlledShutdown", 0) == 1:
            b["shutting_down"] = True

    def _FenceBrokerRecord(self, d, offset):
        if d["id"] in self.brokers:
            self.brokers[d["id"]]["fenced"] = True

    def _UnfenceBrokerRecord(self, d, offset):
        if d["id"] in self.brokers:
            self.brokers[d["id"]]["fenced"] = False

    def _TopicRecord(self, d, offset):
        if d["name"] == self.topic:
            self.topic_id = d["topicId"]

    def _ConfigRecord(self, d, offset):
        if d.get("resourceType") == 2 and d.get("resourceName") == self.topic:
            self.configs[d["name"]] = d.get("value")

    @property
    def partition(self) -> Optional[dict]:
        """Partition 0's registration (None before its PartitionRecord)."""
        return self.parts.get(0)

    def _mine(self, d) -> Optional[int]:
        """The partition of ours a record is about (None: another topic's)."""
        return d.get("partitionId", 0) if d.get("topicId") == self.topic_id else None

    def _PartitionRecord(self, d, offset):
        p = self._mine(d)
        if p is None:
            return
        self.parts[p] = {"replicas": list(d["replicas"]), "isr": list(d["isr"]),
                         "elr": list(d.get("eligibleLeaderReplicas") or []),
                         "last_known_elr": list(d.get("lastKnownElr") or []), "leader": d["leader"],
                         "leader_epoch": d["leaderEpoch"], "partition_epoch": d["partitionEpoch"],
                         "recovery": d.get("leaderRecoveryState", 0),
                         "adding": list(d.get("addingReplicas") or []),
                         "removing": list(d.get("removingReplicas") or [])}

    def _PartitionChangeRecord(self, d, offset):
        p = self.parts.get(self._mine(d))
        if p is None:
            return
        for key, field in (("isr", "isr"), ("replicas", "replicas"), ("eligibleLeaderReplicas", "elr"),
                           ("lastKnownElr", "last_known_elr"), ("addingReplicas", "adding"),
                           ("removingReplicas", "removing")):
            if d.get(key) is not None:
                p[field] = list(d[key])
        leader = d.get("leader", NO_CHANGE)
        if leader != NO_CHANGE:
            p["leader"] = leader
            p["leader_epoch"] += 1
        if d.get("leaderRecoveryState", RECOVERY_NO_CHANGE) != RECOVERY_NO_CHANGE:
            p["recovery"] = d["leaderRecoveryState"]
        p["partition_epoch"] += 1

    def _ClearElrRecord(self, d, offset):
        """Every partition of the topic it names (or of every topic, naming none)."""
        names = d.get("topicName"), d.get("topicId")
        if self.topic not in names and self.topic_id not in names and any(names):
            return
        for p in self.parts.values():
            if p["elr"] or p["last_known_elr"]:
                p["partition_epoch"] += 1
            p["elr"], p["last_known_elr"] = [], []

    def view(self) -> dict[str, Any]:
        """The state in the conform vocabulary (broker epochs still Kafka's)."""
        return {"partitions": [deepcopy(self.parts[p]) for p in sorted(self.parts)],
                "brokers": {str(b): [v["epoch"], v["fenced"], v["shutting_down"]]
                            for b, v in sorted(self.brokers.items()) if b != self.controller_id},
                "min_isr": self.configs.get("min.insync.replicas"),
                "unclean": self.configs.get("unclean.leader.election.enable") == "true"}


def read_log(part_dir: Path) -> list[tuple[int, int]]:
    """A replica's log as the model writes it: (leader epoch, record id) per offset, read from its
    segment files (record batch format v2; the harness writes one record per batch, value b"r<id>").
    A batch cut short at the end (a crash while writing) is not read."""
    out: list[tuple[int, int]] = []
    for seg in sorted(part_dir.glob("*.log")):
        data = seg.read_bytes()
        for pos, _, length in record_batches(data):
            end = pos + 12 + length
            if length < 49 or end > len(data):        # 49: the v2 header after its length field
                break
            epoch = int.from_bytes(data[pos + 12:pos + 16], "big", signed=True)
            count = int.from_bytes(data[pos + 57:pos + 61], "big", signed=True)
            attrs = int.from_bytes(data[pos + 21:pos + 23], "big")
            if not attrs & 0x20:                                # a control batch holds no record of ours
                for value in _values(data[pos + 61:end], count):
                    out.append((epoch, _record_id(value)))
    return out


def record_batches(data: bytes) -> Iterator[tuple[int, int, int]]:
    """A segment file's record batches in order, (position, base offset, length of what follows
    the 12-byte header), for every batch whose header is there to read (the last one's rest may
    be cut short)."""
    pos = 0
    while pos + 12 <= len(data):
        length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        yield pos, int.from_bytes(data[pos:pos + 8], "big", signed=True), length
        pos += 12 + length


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    raw, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def _values(buf: bytes, count: int) -> list[bytes]:
    out, pos = [], 0
    for _ in range(count):
        size, pos = _varint(buf, pos)
        start = pos
        pos += 1                                   # attributes
        _, pos = _varint(buf, pos)                 # timestamp delta
        _, pos = _varint(buf, pos)                 # offset delta
        key, pos = _varint(buf, pos)
        pos += max(key, 0)
        vlen, pos = _varint(buf, pos)
        out.append(buf[pos:pos + vlen] if vlen >= 0 else b"")
        pos = start + size
    return out


def _record_id(value: bytes) -> int:
    text = value.decode("ascii", "replace")
    return int(text[1:]) if text.startswith("r") and text[1:].isdigit() else -1


def hwm_checkpoint(data_dir: Path, topic: str, partition: int = 0) -> Optional[int]:
    """A broker's high watermark for the partition from its replication-offset-checkpoint
    (written every 200 ms): the only place a follower's HWM can be read."""
    f = data_dir / "replication-offset-checkpoint"
    try:
        lines = f.read_text().splitlines()
    except OSError:
        return None
    for line in lines[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[0] == topic and parts[1] == str(partition):
            return int(parts[2])
    return None
