"""Where spark-check keeps its levels: in a store every executor reaches, never a local path.

A level is a set of chunks, each one owner's states (owner = fingerprint mod P), at most
CHUNK of them, in an order of the owner's that a retried task keeps (spark/rows.py: data,
never a pickle), keyed
"OOOOO-CCCCCC" (owner, chunk). Two places hold them:

- `HadoopLevels`: a directory on a Hadoop-compatible file system (`--checkpoint-dir`
  hdfs://..., s3a://..., file://... where that is shared, or Spark's checkpoint directory),
  one SequenceFile per owner per level, written by Spark's own output committer:

      DIR/manifest.json                  what run, how far, each chunk's size, sum, sha256
      DIR/levels/NNNNN/part-OOOOO        owner OOOOO's chunks of level NNNNN
      DIR/rows/NNNNN/part-OOOOO          the same chunks with their rows, for the last two levels
                                         that keep them, of a run whose levels are links (below)

  A local master's kernel levels are links (fingerprint, parent, label: spark/rows.py), since
  they are expanded from their owners' memory (spark/chain.py); a store keeps beside a level
  the chunks with their rows (the manifest's "rows") when `--checkpoint-every` seconds have
  passed since the last level whose rows it kept (every level at 0), and only for the last
  two such levels: what a resume expands, and the one before, from which a torn last one is
  recomputed. When a third gets its rows, the manifest that commits it no longer names the
  oldest's, which are then removed: at about 50 bytes a state for the rows, a night's run
  would fill this machine's disk at about a billion states with every level's rows kept
  (BENCHMARKS.md, "A billion states"), and copying every level's rows cost a run about as much
  as copying its links. The cost: a resume goes on from the last level with rows (the links
  after it are dropped), and a level with rows that does not read back sends it further back.

  The manifest is replaced after a level is committed and is the only commit point: a level
  directory the manifest does not name (a run killed while writing it, or an object store's
  half-copied commit) is deleted, and a level it names is trusted on resume only if reading
  it back gives exactly the manifest's chunks (the same keys, and each chunk's size, sum of
  fingerprints and sha256 of its bytes), so a torn, partial or altered level is recomputed
  whatever the store's rename does.
- `SparkLevels` (no checkpoint location): the levels stay in Spark (persisted on the
  executors' own disks, recomputed from their lineage if an executor is lost); nothing to
  resume from.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from spark.hadoopfs import MAX_READ, HadoopFs, StoreError
from spark import rows
from spark.seqfile import records as seq_records
from spark.seqfile import write as write_sequence
from spark.session import SparkGone, unpersist
from verifier.core.checkpoint import MANIFEST, CheckpointDir, CheckpointError
from verifier.core.values import BadData

VERSION = 5
MAX_PARTITIONS = 10_000
SEQUENCE_FILE = "org.apache.hadoop.mapred.SequenceFileOutputFormat"
TEXT, BYTES = "org.apache.hadoop.io.Text", "org.apache.hadoop.io.BytesWritable"
KEY = re.compile(r"([0-9]{5})-([0-9]{6})")
HEX64 = re.compile(r"[0-9a-f]{64}")
TOTALS = {"transitions": int, "enabled": dict, "taken": dict, "terminal": int, "found": dict, "seconds": (int, float)}


def chunk_key(owner: int, chunk: int) -> str:
    return f"{owner:05d}-{chunk:06d}"


def owner_of_key(key: str) -> int:
    return int(key[:5])


def owner_of(key: int) -> int:
    """The shuffle's partition function: keys are owners already (one object, so every RDD
    partitioned by it has the same partitioner and a union of them stays aligned)."""
    return key


def level_dir(level: int, rows: bool = False) -> str:
    return f"{'rows' if rows else 'levels'}/{level:05d}"


class HadoopLevels:
    """Levels as SequenceFiles under a Hadoop file system directory (see the module docstring)."""

    def __init__(self, spark, fs: HadoopFs, partitions: int, temporary: bool = False):
        self.sc, self.fs, self.n, self.temporary = spark.sparkContext, fs, partitions, temporary

    def url(self, level: int, owner: Optional[int] = None, rows: bool = False) -> str:
        name = level_dir(level, rows) + (f"/part-{owner:05d}" if owner is not None else "")
        return self.fs.child_url(name)

    def write(self, level: int, rdd, source=None, rows: bool = False) -> None:
        """Partition i of `rdd` (key, chunk bytes) holds owner i's chunks: file part-0000i
        (`rows`: a links level's chunks with their rows, under rows/)."""
        self.fs.remove(level_dir(level, rows))
        rdd.saveAsHadoopFile(self.url(level, rows=rows), SEQUENCE_FILE, keyClass=TEXT, valueClass=BYTES)

    def copy(self, level: int, chunks_of, scratch: str, rows: bool = False) -> None:
        """The level from files on the driver's disk (a local master's own tasks wrote them):
        owner i's chunks (`chunks_of(i)`: (key, bytes) in order) become file part-0000i, made
        on `scratch` (spark/seqfile.py) and copied whole by the driver's JVM, eight at a time
        (a file's copy waits mostly on the NameNode and the DataNode, not on its bytes: two at a
        time took 3.1x as long on the billion config to depth 12); the layout saveAsHadoopFile
        leaves, read and measured the same way."""
        where = level_dir(level, rows)
        self.fs.remove(where)
        self.fs.mkdirs(where)

        def one(owner: int) -> None:
            local = os.path.join(scratch, f"{where.replace('/', '-')}-part-{owner:05d}")
            name = f"{where}/part-{owner:05d}"
            write_sequence(local, chunks_of(owner), hashlib.md5(name.encode()).digest())
            try:
                self.fs.put_local(local, name)
            finally:
                if os.path.exists(local):
                    os.unlink(local)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(one, range(self.n)))

    def write_local(self, level: int, per_owner: list) -> None:
        """A level the driver made (a small one), written by the driver's JVM in the layout
        Spark's committer leaves: a Spark job would cost more than the level's work. Copied
        as `copy` copies (a file made through py4j, record by record, took as long as the
        copy of a large one: 13-20 s for the first seven levels at 16 partitions)."""
        with tempfile.TemporaryDirectory(prefix="kraft-verify-level-") as scratch:
            self.copy(level, per_owner.__getitem__, scratch)

    def read(self, level: int, rows: bool = False):
        """The level's (key, chunk) records, each file read whole (spark/seqfile.py says why),
        one partition per owner's file (binaryFiles would pack small files into one task);
        `rows`: a links level's chunks with their rows."""
        files = self.sc.union([self.sc.binaryFiles(self.url(level, owner, rows)) for owner in range(self.n)])
        return files.flatMap(lambda pv: seq_records(pv[1]))

    def read_owner(self, level: int, owner: int) -> list:
        prefix = f"{owner:05d}-"
        return (self.sc.binaryFiles(self.url(level, owner)).flatMap(lambda pv: seq_records(pv[1]))
                .filter(lambda kv: kv[0].startswith(prefix)).collect())

    def measure(self, level: int, rows: bool = False) -> Optional[dict]:
        """{key: [states, fingerprint sum (hex), sha256]} as read back from the store (`rows`:
        of a links level's chunks with their rows); None if the level cannot be read whole
        (missing, torn, not ours)."""
        from py4j.protocol import Py4JError
        if not self.fs.exists(level_dir(level, rows)):
            return None
        try:
            got = self.sc.binaryFiles(self.url(level, rows=rows), minPartitions=self.n).flatMap(_measure_file).collect()
        except Py4JError:
            return None
        out: dict = {}
        for key, meta in got:
            if key is None or meta is None or key in out:
                return None
            out[key] = meta
        return out

    def drop_from(self, level: int) -> None:
        for where in ("levels", "rows"):
            for name in self.fs.listdir(where):
                if name.isdigit() and int(name) >= level:
                    self.fs.remove(f"{where}/{name}")

    def drop_rows(self, level: int) -> None:
        """A links level's chunks with their rows, once the manifest no longer names them."""
        self.fs.remove(level_dir(level, True))

    def probe(self) -> None:
        """Refuse a store the executors cannot write or read (a path on the driver's own disk,
        a bucket they have no credentials for) before the first level, with one line."""
        from py4j.protocol import Py4JError
        token = uuid.uuid4().hex
        name = f"probe-{token}"
        tasks = max(2, self.sc.defaultParallelism)
        try:
            try:
                (self.sc.parallelize(range(tasks), tasks).map(lambda i: (f"{i:05d}", token))
                 .saveAsHadoopFile(self.fs.child_url(name), SEQUENCE_FILE, keyClass=TEXT, valueClass=TEXT))
                seen = self.sc.sequenceFile(self.fs.child_url(name), TEXT, TEXT, minSplits=tasks).collect()
            except Py4JError as exc:
                from spark.hadoopfs import reason
                raise StoreError(f"--checkpoint-dir {self.fs.where}: the executors cannot use it "
                                 f"({reason(exc)})") from None
            if sorted(seen) != [(f"{i:05d}", token) for i in range(tasks)]:
                raise StoreError(f"--checkpoint-dir {self.fs.where}: what the executors wrote there did not reach "
                                 "the driver (a disk only one machine has?): give a location every executor and "
                                 "the driver share (hdfs://, s3a://, a shared mount)")
        finally:
            self.fs.remove(name)

    def close(self) -> None:
        if self.temporary:
            try:
                self.fs.remove("")
            except SparkGone:     # the run says why; there is nothing left to remove it with
                pass
        self.fs.close()


def chunk_measure(data: bytes) -> Optional[list]:
    """[states, fingerprint sum (hex), sha256] of a chunk of the kernel's rows; None if not
    whole, or not rows (the interpreted executors' chunks, gone with them in issue 57)."""
    data = bytes(data)
    return rows.chunk_measure(data) if data.startswith((rows.PART, rows.ZPART, rows.LINKS, rows.ZLINKS)) else None


def _measure_file(path_data) -> list:
    """[(key, chunk measure)] of one owner's level file, [(None, None)] if it is not whole or
    holds another owner's chunks."""
    path, data = path_data
    owner = path.rsplit("/", 1)[-1]
    try:
        got = [(key, chunk_measure(value)) for key, value in seq_records(data)]
    except BadData:
        return [(None, None)]
    if not owner.startswith("part-") or any(not key.startswith(owner[5:] + "-") for key, _ in got):
        return [(None, None)]
    return got


class SparkLevels:
    """Levels kept in Spark, persisted on the executors' disks (no checkpoint location)."""

    temporary = True

    def __init__(self, spark, partitions: int):
        self.sc, self.n = spark.sparkContext, partitions
        self.levels: dict[int, Any] = {}
        self.sources: dict[int, Any] = {}      # what each level's RDD is read from (persisted)

    keeps_source = True      # explore.py leaves the RDD a level is read from persisted: it is the level

    def write(self, level: int, rdd, source=None) -> None:
        """`rdd` read from `source`, an RDD already persisted (its chunks are the level: a
        second copy cost as much as the level's own stage); without one, `rdd` persisted."""
        from pyspark import StorageLevel
        self.drop_from(level)
        if source is None:
            rdd = rdd.persist(StorageLevel.DISK_ONLY)
            rdd.count()
        self.levels[level] = rdd
        self.sources[level] = source if source is not None else rdd

    def write_local(self, level: int, per_owner: list) -> None:
        """A level the driver made stays on the driver (spark/explore.py holds it)."""

    def read(self, level: int, rows: bool = False):
        return self.levels[level]

    def read_owner(self, level: int, owner: int) -> list:
        prefix = f"{owner:05d}-"
        return self.sc.runJob(self.levels[level], lambda it: [kv for kv in it if kv[0].startswith(prefix)], [owner])

    def drop_from(self, level: int) -> None:
        for k in [k for k in self.levels if k >= level]:
            self.levels.pop(k)
            unpersist(self.sources.pop(k))

    def close(self) -> None:
        self.drop_from(0)


class LevelStore(CheckpointDir):
    """The manifest of a `--checkpoint-dir` run (verifier/core/checkpoint.py's rules), validated
    field by field when it is read: a malformed one is refused with one line."""

    def __init__(self, fs: HadoopFs, identity: dict[str, Any]):
        super().__init__(fs, identity, "spark-check", VERSION)
        self.fs = self.files

    def load(self, verify: bool = True) -> Optional[dict]:
        data = super().load(verify=verify)
        if data is not None:
            problem = malformed(data)
            if problem:
                raise CheckpointError(f"--checkpoint-dir {self.where}: not a usable spark-check manifest ({problem})")
        return data

    def levels_on_disk(self) -> Optional[int]:
        """The levels the manifest names, read from this machine's disk without the JVM (which
        may be gone), 0 if it cannot be read; None where the store is not a local directory."""
        path = self.fs.local_file(MANIFEST)
        if path is None:
            return None
        try:
            with open(path, "rb") as f:
                levels = json.loads(f.read(MAX_READ)).get("levels")
        except (OSError, ValueError, AttributeError):
            return 0
        return len(levels) if isinstance(levels, list) else 0

    def fresh(self) -> None:
        """Forget any earlier run in the directory (a run without --resume)."""
        self.forget(MANIFEST, f".{MANIFEST}.tmp", "levels", "rows")


def malformed(data: dict) -> str:
    """What is wrong with a manifest's fields, or ''."""
    n = data.get("partitions")
    if type(n) is not int or not 1 <= n <= MAX_PARTITIONS:
        return f"partitions must be an integer from 1 to {MAX_PARTITIONS}"
    levels = data.get("levels")
    if not isinstance(levels, list):
        return "levels must be a list"
    for k, meta in enumerate(levels):
        if not isinstance(meta, dict) or meta.get("level") != k or type(meta.get("level")) is not int:
            return f"level {k} is not numbered {k}"
        chunks, states = meta.get("chunks"), meta.get("states")
        if type(states) is not int or states < 0 or not isinstance(chunks, list):
            return f"level {k} has no states count or chunk list"
        seen = set()
        for c in chunks:
            if not _entry(c, n) or c[0] in seen:
                return f"level {k} has a malformed chunk entry"
            seen.add(c[0])
        if sum(c[1] for c in chunks) != states:
            return f"level {k}'s chunks do not add up to its states"
        owners = {owner_of_key(c[0]) for c in chunks}
        if chunks and len(owners) != n:     # every partition writes a chunk of a level it had, an empty one too
            return f"level {k}'s chunks are {len(owners)} partitions' where the run has {n}"
        if "links" in meta and meta["links"] is not True:
            return f"level {k}'s links flag is not true"
        if "rows" in meta:               # a links level's chunks with their rows: the same states, other bytes
            kept = meta["rows"]
            if not meta.get("links") or not isinstance(kept, list) or not all(_entry(c, n) for c in kept) or \
                    {c[0]: tuple(c[1:3]) for c in kept} != {c[0]: tuple(c[1:3]) for c in chunks} or len(kept) != len(chunks):
                return f"level {k}'s rows are not its chunks'"
        totals = meta.get("totals")
        if not isinstance(totals, dict) or any(not isinstance(totals.get(key), kind) or isinstance(totals.get(key), bool)
                                               for key, kind in TOTALS.items()):
            return f"level {k} has no valid totals"
        if any(type(v) is not int or v < 0 for d in (totals["enabled"], totals["taken"]) for v in d.values()):
            return f"level {k}'s action counts are not counts"
        if not 0 <= totals["seconds"] < 1e9:        # JSON's 1e999 reads as inf, which no report can hold
            return f"level {k}'s seconds are not a time"
        if totals["transitions"] != sum(totals["enabled"].values()):
            return f"level {k}'s transitions are not its actions' transitions"
        if sum(totals["taken"].values()) != sum(m["states"] for m in levels[1:k + 1]):
            return f"level {k}'s new states are not its actions' new states"
        for name, f in totals["found"].items():
            if not (isinstance(f, dict) and type(f.get("level")) is int and 0 <= f["level"] <= k
                    and isinstance(f.get("fp"), str) and re.fullmatch(r"[0-9a-f]{1,32}", f["fp"])
                    and f.get("kind") in ("state", "step", "deadlock")):
                return f"level {k} names a malformed violation ({str(name)[:40]})"
    return ""


def _entry(c, n: int) -> bool:
    """Whether `c` is a chunk's manifest entry [key, states, fingerprint sum, sha256]."""
    return (isinstance(c, list) and len(c) == 4 and isinstance(c[0], str) and bool(KEY.fullmatch(c[0]))
            and owner_of_key(c[0]) < n and type(c[1]) is int and c[1] >= 0 and isinstance(c[2], str)
            and bool(re.fullmatch(r"[0-9a-f]{1,40}", c[2])) and isinstance(c[3], str) and bool(HEX64.fullmatch(c[3])))
