"""The checkpoint directory of a Spark exploration: one Parquet directory per completed
BFS level and a manifest, replaced atomically after each level, that lists the levels
and the run's totals so far. A level is trusted on resume only if its files read back
with the row count and checksum the manifest recorded; otherwise it and every later
level are recomputed.

    DIR/manifest.json
    DIR/levels/00000/part-*.parquet   hi, lo, state, parent_hi, parent_lo, label, action, bad
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Optional

from verifier.files import write_atomic

MANIFEST = "manifest.json"
VERSION = 1


class CheckpointError(Exception):
    """The directory cannot be used (not writable, another run's, malformed): exit 2."""


def level_schema():
    from pyspark.sql.types import (ArrayType, BinaryType, LongType, StringType, StructField,
                                   StructType)
    return StructType([
        StructField("hi", LongType(), False), StructField("lo", LongType(), False),
        StructField("state", BinaryType(), False),
        StructField("parent_hi", LongType(), True), StructField("parent_lo", LongType(), True),
        StructField("label", BinaryType(), True), StructField("action", StringType(), True),
        StructField("bad", ArrayType(StringType()), False),
    ])


def _sums(rows):
    count, hi, lo = 0, 0, 0
    for row in rows:
        count += 1
        hi += row.hi
        lo += row.lo
    yield count, hi, lo


def meta_of(level: int, count: int, sum_hi: int, sum_lo: int) -> dict:
    return {"level": level, "states": count, "checksum": f"{sum_hi}:{sum_lo}"}


class LevelStore:
    def __init__(self, root: str | Path, identity: dict[str, Any]):
        """`identity` says which exploration this is (config, symmetry, invariants): a
        manifest written for another one is refused rather than resumed."""
        self.root = Path(root)
        self.identity = identity
        if self.root.exists() and not self.root.is_dir():
            raise CheckpointError(f"--checkpoint-dir {root}: not a directory")
        try:
            (self.root / "levels").mkdir(parents=True, exist_ok=True)
            probe = self.root / ".write-test"
            probe.write_text("ok")
            probe.unlink()
        except OSError as exc:
            raise CheckpointError(f"--checkpoint-dir {root}: cannot write there ({exc.strerror})") from None

    def level_path(self, level: int) -> Path:
        return self.root / "levels" / f"{level:05d}"

    # ------------------------------------------------------------ manifest

    def load(self) -> Optional[dict]:
        path = self.root / MANIFEST
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CheckpointError(f"--checkpoint-dir {self.root}: unreadable manifest ({exc})") from None
        if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("levels"), list):
            raise CheckpointError(f"--checkpoint-dir {self.root}: not a kraft-verify spark-check manifest")
        if data.get("identity") != self.identity:
            raise CheckpointError(f"--checkpoint-dir {self.root}: holds a run of another config "
                                  f"({data.get('identity', {}).get('what', '?')}); use a fresh directory")
        return data

    def save(self, data: dict) -> None:
        """Write the manifest whole or not at all."""
        write_atomic(self.root / MANIFEST, json.dumps(dict(data, version=VERSION, identity=self.identity), indent=1))

    def fresh(self) -> None:
        """Forget any earlier run in the directory (a run without --resume)."""
        for name in (MANIFEST, MANIFEST + ".tmp"):
            (self.root / name).unlink(missing_ok=True)
        shutil.rmtree(self.root / "levels", ignore_errors=True)
        (self.root / "levels").mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------ levels

    def write(self, df, level: int) -> None:
        path = self.level_path(level)
        shutil.rmtree(path, ignore_errors=True)
        df.write.mode("overwrite").parquet(str(path))

    def measure(self, spark, level: int) -> dict:
        """Row count and checksum (the sums of both fingerprint halves) of a level on disk."""
        parts = self.read(spark, level).select("hi", "lo").rdd.mapPartitions(_sums).collect()
        return meta_of(level, sum(p[0] for p in parts), sum(p[1] for p in parts), sum(p[2] for p in parts))

    def trusted(self, spark, meta: dict) -> bool:
        """The level on disk is the one the manifest describes (complete, unchanged)."""
        path = self.level_path(meta["level"])
        if not (path / "_SUCCESS").exists():
            return False
        try:
            got = self.measure(spark, meta["level"])
        except Exception:        # unreadable Parquet: a torn or corrupted write
            return False
        return got["states"] == meta["states"] and got["checksum"] == meta["checksum"]

    def drop_from(self, level: int) -> None:
        for path in sorted((self.root / "levels").iterdir()):
            if path.name.isdigit() and int(path.name) >= level:
                shutil.rmtree(path, ignore_errors=True)

    def read(self, spark, level: int):
        return spark.read.schema(level_schema()).parquet(str(self.level_path(level)))

    def visited(self, spark, upto: int):
        """Fingerprints of every state in levels 0..upto (read from disk: no lineage)."""
        paths = [str(self.level_path(i)) for i in range(upto + 1)]
        return spark.read.schema(level_schema()).parquet(*paths).select("hi", "lo")
