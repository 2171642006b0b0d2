"""Reading and writing the level files (Hadoop SequenceFiles of Text keys and BytesWritable values, as
Spark's saveAsHadoopFile writes them) from their raw bytes.

Spark's `sequenceFile` reader hands each value to Python through its pickler, which copies a
byte array as a Latin-1 string: a third of a run's CPU went there. `binaryFiles` hands a file's
bytes over as they are; this module parses them. On a local master the own tasks' chunks are
files on the driver's disk already, and `saveAsHadoopFile` would carry every byte from a Python
worker through the pickler into the JVM: `write` makes the same file here, and the driver's
JVM copies it to the store whole (spark/store.HadoopLevels.copy; BENCHMARKS.md, "The store
on HDFS").
The format (org.apache.hadoop.io.SequenceFile, version 6, uncompressed):

    "SEQ" 6 | key class | value class | compressed? | block compressed? | metadata | sync (16)
    records: int length | int key length | key (vint n + UTF-8) | value (int n + bytes)
             or int -1 | sync (16), which the writer puts between records now and then

Integers are big-endian; the class names are Text (a vint length and UTF-8).
"""
from __future__ import annotations

import struct

from verifier.core.values import BadData

TEXT, BYTES = "org.apache.hadoop.io.Text", "org.apache.hadoop.io.BytesWritable"
_I32 = struct.Struct(">i")


def _vint(data, at: int) -> tuple[int, int]:
    """Hadoop's WritableUtils.readVLong."""
    first = data[at] - 256 if data[at] > 127 else data[at]
    at += 1
    if first >= -112:
        return first, at
    negative = first < -120
    size = (-119 - first) if negative else (-111 - first)
    value = 0
    for _ in range(size - 1):
        value = (value << 8) | data[at]
        at += 1
    return (~value if negative else value), at


def _text(data, at: int) -> tuple[str, int]:
    n, at = _vint(data, at)
    if n < 0 or at + n > len(data):
        raise BadData("a SequenceFile string runs past the end")
    return bytes(data[at:at + n]).decode("utf-8"), at + n


def _text_bytes(text: str) -> bytes:
    """Hadoop's Text: WritableUtils.writeVLong of the length, then UTF-8."""
    raw = text.encode("utf-8")
    n = len(raw)
    if n <= 127:
        return bytes([n]) + raw
    size = (n.bit_length() + 7) // 8
    return bytes([(-112 - size) & 0xFF]) + n.to_bytes(size, "big") + raw


def write(path: str, items, sync: bytes) -> int:
    """A SequenceFile at `path` of the (key, value bytes) `items`, as Hadoop's uncompressed
    writer lays it out (without the optional sync markers between records: readers need them
    only to split a file, and a level file is read whole); `sync` is its 16-byte marker.
    Returns the bytes written."""
    if len(sync) != 16:
        raise ValueError("a SequenceFile's sync marker is 16 bytes")
    with open(path, "wb") as f:
        head = b"SEQ\x06" + _text_bytes(TEXT) + _text_bytes(BYTES) + b"\x00\x00" + _I32.pack(0) + sync
        f.write(head)
        size = len(head)
        for key, value in items:
            k = _text_bytes(key)
            f.write(_I32.pack(len(k) + 4 + len(value)) + _I32.pack(len(k)) + k + _I32.pack(len(value)))
            f.write(value)
            size += 12 + len(k) + len(value)
    return size


def records(data: bytes):
    """The (key, value bytes) records of a SequenceFile of Text keys and BytesWritable values;
    BadData if the bytes are not one, or are cut short."""
    try:
        view = memoryview(data)
        if bytes(view[:3]) != b"SEQ" or view[3] != 6:
            raise BadData("not a SequenceFile (version 6)")
        key_class, at = _text(view, 4)
        value_class, at = _text(view, at)
        if (key_class, value_class) != (TEXT, BYTES):
            raise BadData(f"a SequenceFile of {key_class} and {value_class}, not Text and BytesWritable")
        if view[at] or view[at + 1]:
            raise BadData("a compressed SequenceFile")
        at += 2
        (pairs,) = _I32.unpack_from(view, at)
        at += 4
        for _ in range(pairs):
            _, at = _text(view, at)
            _, at = _text(view, at)
        sync = bytes(view[at:at + 16])
        at += 16
        end = len(view)
        while at < end:
            (length,) = _I32.unpack_from(view, at)
            if length == -1:
                if bytes(view[at + 4:at + 20]) != sync:
                    raise BadData("a SequenceFile's sync marker is wrong")
                at += 20
                continue
            (key_length,) = _I32.unpack_from(view, at + 4)
            start = at + 8
            if length < 4 or key_length < 1 or start + length > end:
                raise BadData("a SequenceFile record runs past the end")
            key, after = _text(view, start)
            if after != start + key_length:
                raise BadData("a SequenceFile key is torn")
            (size,) = _I32.unpack_from(view, after)
            if size != length - key_length - 4:
                raise BadData("a SequenceFile value is torn")
            yield key, bytes(view[after + 4:after + 4 + size])
            at = start + length
    except (IndexError, struct.error, UnicodeDecodeError):
        raise BadData("a SequenceFile cut short") from None
