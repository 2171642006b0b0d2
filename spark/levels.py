"""The checkpoint directory of a Spark exploration: one directory per completed BFS level,
holding one part file per owner (`fingerprint mod P`, spark/tasks.py), and a manifest,
replaced atomically after each level, that lists the levels, each part's size, fingerprint
sum and sha256, and the run's totals so far. A level is trusted on resume only if every part
reads back with the manifest's size and sha256; otherwise it and every later level are
recomputed. The directory must be one that every executor and the driver can reach (local
mode, one machine, or a shared file system), as for any Spark output path.

    DIR/manifest.json
    DIR/levels/00000/part-00000 ... part-<P-1>   fingerprints | parent links | states
    DIR/levels/NNNNN/inbox/to-<owner>/from-<task>-<chunk>   while level NNNNN is being made
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Optional

from spark.tasks import measure_part
from verifier.checkpoint import MANIFEST, CheckpointDir, CheckpointError  # noqa: F401  (re-exported)

VERSION = 2


def meta_of(level: int, parts: list[tuple[int, int, str]]) -> dict:
    """A level's manifest entry from its parts' (states, fingerprint sum, sha256)."""
    return {"level": level, "states": sum(p[0] for p in parts), "checksum": f"{sum(p[1] for p in parts):x}",
            "parts": [list(p) for p in parts]}


class LevelStore(CheckpointDir):
    """A spark-check checkpoint directory (the directory rules are verifier/checkpoint.py's)."""

    def __init__(self, root: str | Path, identity: dict[str, Any]):
        super().__init__(root, identity, "spark-check", VERSION)

    def claim(self, resume: bool) -> Optional[dict]:
        """As every checkpoint directory; `levels/` is made only once the directory is ours."""
        manifest = super().claim(resume)
        (self.root / "levels").mkdir(parents=True, exist_ok=True)
        return manifest

    def level_path(self, level: int) -> Path:
        return self.root / "levels" / f"{level:05d}"

    def part_path(self, level: int, part: int) -> Path:
        return self.level_path(level) / f"part-{part:05d}"

    def load(self) -> Optional[dict]:
        data = super().load()
        if data is not None and not (isinstance(data.get("levels"), list) and isinstance(data.get("partitions"), int)
                                     and data["partitions"] >= 1):
            raise CheckpointError(f"--checkpoint-dir {self.root}: not a kraft-verify spark-check manifest")
        return data

    def fresh(self) -> None:
        """Forget any earlier run in the directory (a run without --resume)."""
        self.forget(MANIFEST, MANIFEST + ".tmp", "levels")
        (self.root / "levels").mkdir(parents=True, exist_ok=True)

    def prepare(self, level: int) -> Path:
        """An empty directory for `level` (whatever an interrupted attempt left is removed)."""
        path = self.level_path(level)
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        return path

    def trusted(self, spark, meta: dict) -> bool:
        """The level on disk is the one the manifest describes: every part present, of the
        recorded size and sha256 (measured by executors, where the files are)."""
        parts = meta.get("parts")
        if not isinstance(parts, list):
            return False
        paths = [str(self.part_path(meta["level"], p)) for p in range(len(parts))]
        got = spark.sparkContext.parallelize(paths, max(1, len(paths))).map(
            lambda p: measure_part(Path(p))).collect()
        return [list(g) if g else None for g in got] == parts

    def drop_from(self, level: int) -> None:
        for path in sorted((self.root / "levels").iterdir()):
            if path.name.isdigit() and int(path.name) >= level:
                shutil.rmtree(path, ignore_errors=True)
