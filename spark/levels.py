"""The checkpoint directory of a Spark exploration: one Parquet directory per completed
BFS level and a manifest, replaced atomically after each level, that lists the levels
and the run's totals so far. A level is trusted on resume only if its files read back
with the row count and checksum the manifest recorded; otherwise it and every later
level are recomputed.

    DIR/manifest.json
    DIR/levels/00000/part-*.parquet   hi, lo, state, parent_hi, parent_lo, label, action, bad
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Optional

from verifier.checkpoint import MANIFEST, CheckpointDir, CheckpointError  # noqa: F401  (re-exported)

VERSION = 1


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


class LevelStore(CheckpointDir):
    """A spark-check checkpoint directory (the directory rules are verifier/checkpoint.py's)."""

    def __init__(self, root: str | Path, identity: dict[str, Any]):
        super().__init__(root, identity, "spark-check", VERSION)
        (self.root / "levels").mkdir(parents=True, exist_ok=True)

    def level_path(self, level: int) -> Path:
        return self.root / "levels" / f"{level:05d}"

    def load(self) -> Optional[dict]:
        data = super().load()
        if data is not None and not isinstance(data.get("levels"), list):
            raise CheckpointError(f"--checkpoint-dir {self.root}: not a kraft-verify spark-check manifest")
        return data

    def fresh(self) -> None:
        """Forget any earlier run in the directory (a run without --resume)."""
        self.forget(MANIFEST, MANIFEST + ".tmp", "levels")
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
