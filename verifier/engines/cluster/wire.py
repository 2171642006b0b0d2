"""Kafka's wire protocol to one chosen node: a TCP connection per call, requests and responses
encoded by kafka-python's protocol classes (generated from Kafka's own message schemas).

Why not a client library's producer or admin: they route a request by their own metadata,
which a node cut off from the controller serves stale (a zombie leader took a produce that
way, docs/cluster.md); the harness names the node for every request (the leader the
controller's metadata log names, or the controller itself for admin requests, KIP-919). Every
answer is data: a connection error, a timeout or an undecodable reply is a WireError.
"""
from __future__ import annotations

import socket
import struct
import threading
from typing import Any, Optional

from kafka.protocol.admin import (AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
                                  CreateTopicsRequest, CreateTopicsResponse, ElectLeadersRequest,
                                  ElectLeadersResponse, IncrementalAlterConfigsRequest,
                                  IncrementalAlterConfigsResponse)
from kafka.protocol.consumer import FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

# Versions every release from 3.9 to 4.4 serves (4.0 removed the oldest ones, KIP-896).
VERSIONS = {ProduceRequest: 9, ListOffsetsRequest: 7, FetchRequest: 12, CreateTopicsRequest: 7,
            IncrementalAlterConfigsRequest: 1, ElectLeadersRequest: 2, AlterPartitionReassignmentsRequest: 0}
RESPONSES = {ProduceRequest: ProduceResponse, ListOffsetsRequest: ListOffsetsResponse, FetchRequest: FetchResponse,
             CreateTopicsRequest: CreateTopicsResponse, IncrementalAlterConfigsRequest: IncrementalAlterConfigsResponse,
             ElectLeadersRequest: ElectLeadersResponse,
             AlterPartitionReassignmentsRequest: AlterPartitionReassignmentsResponse}
MAX_RESPONSE = 64 << 20


class WireError(Exception):
    """A request that got no usable answer; str() is one line."""


def _recv(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise WireError("the node closed the connection")
        out += chunk
    return bytes(out)


def call(port: int, request, timeout: float) -> Any:
    """Send `request` to the node listening on 127.0.0.1:`port` and return its decoded response."""
    kind = type(request)
    version = VERSIONS[kind]
    request.API_VERSION = version
    request.with_header(correlation_id=1, client_id="kraft-verify")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(request.encode(header=True, framed=True))
            (size,) = struct.unpack(">i", _recv(sock, 4))
            if not 0 < size <= MAX_RESPONSE:
                raise WireError(f"a {kind.__name__} answer of {size} bytes")
            payload = _recv(sock, size)
    except socket.timeout:
        raise WireError(f"no answer to {kind.__name__} within {timeout:g} s") from None
    except OSError as exc:
        raise WireError(f"{kind.__name__} to port {port}: {exc.strerror or exc}") from None
    try:
        return RESPONSES[kind].decode(payload, version=version, header=True)
    except Exception as exc:            # noqa: BLE001 - another process's answer is data
        raise WireError(f"an undecodable {kind.__name__} answer: {type(exc).__name__}") from None


def record_batch(value: bytes) -> bytes:
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 16)
    b.append(timestamp=None, key=None, value=value, headers=[])
    b.close()
    return bytes(b.buffer())


class Produce:
    """One acks=all produce in flight: its answer arrives when the HWM passes the record (or the
    leader says otherwise); `result` is None while it waits, then the error name or "NONE"."""

    def __init__(self, port: int, topic: str, value: bytes, timeout_ms: int, partition: int = 0):
        self.value, self.partition = value, partition
        self.result: Optional[str] = None
        self._done = threading.Event()
        req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=timeout_ms, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=record_batch(value))])])
        self._thread = threading.Thread(target=self._wait, args=(port, req, timeout_ms / 1000 + 30), daemon=True)
        self._thread.start()

    def _wait(self, port, req, timeout) -> None:
        try:
            resp = call(port, req, timeout)
            part = resp.responses[0].partition_responses[0]
            self.result = _error_name(part.error_code)
        except WireError as exc:
            self.result = f"no answer ({exc})"
        self._done.set()

    def wait(self, timeout: float) -> bool:
        return self._done.wait(timeout)


def _error_name(code: int) -> str:
    from kafka.errors import for_code
    return "NONE" if code == 0 else for_code(code).__name__.upper().replace("ERROR", "")


def error_name(code: int) -> str:
    return _error_name(code)


def high_watermark(port: int, topic: str, timeout: float, partition: int = 0) -> Optional[int]:
    """The partition's high watermark as a consumer sees it (ListOffsets LATEST, read
    uncommitted, from the leader); None if the node is not the leader."""
    req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
            partition_index=partition, current_leader_epoch=-1, timestamp=-1)])])
    part = call(port, req, timeout).topics[0].partitions[0]
    return part.offset if part.error_code == 0 else None


def read(port: int, topic: str, timeout: float, partition: int = 0) -> Optional[list[bytes]]:
    """What a consumer reads from offset 0 up to the high watermark (one Fetch to the leader);
    None if the node does not serve it as leader."""
    req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                       session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                           FetchRequest.FetchTopic.FetchPartition(partition=partition, current_leader_epoch=-1,
                                                                  fetch_offset=0, log_start_offset=-1,
                                                                  partition_max_bytes=1 << 20)])],
                       forgotten_topics_data=[], rack_id="")
    resp = call(port, req, timeout)
    part = resp.responses[0].partitions[0]
    if part.error_code != 0:
        return None
    out = []
    records = MemoryRecords(bytes(part.records or b""))
    while records.has_next():
        batch = records.next_batch()
        for rec in batch:
            out.append(rec.value)
    return out
