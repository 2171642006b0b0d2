"""The files of `check --visited disk` (external.py): the visited runs and each level's links,
in one directory that is the search's own and goes with it.

    level-NNNNN.run     the level's new fingerprints, sorted (verifier/core/runs.py), until merged
    merged-NNNNN.run    runs merged: the newest two while the older is at most MERGE times the
                        newer and the copy at most a share of all runs (`_add`), so their sizes
                        fall geometrically, few are read each level, a fingerprint is rewritten
                        a few times only, and no merge copies most of the visited set
    level-NNNNN.parent  each state's parent, as its place in the level before (uint32)
    level-NNNNN.k       each state's place among its parent's successors (uint16)
    level-NNNNN.rows    the level being expanded, as narrowed chunks (narrow.ChunkFile), and
    candidates.rows     the next level's candidates: removed as soon as the level is done
    (no name)           the fingerprints of the level expanded and of the next (FpFile)

22 bytes a state, and two levels' rows while they are used. The directory is removed when the search ends; one left by a search killed with
SIGKILL is removed by the next search that starts beside it (its pid is in its name). Every failure to read or write is one line: MemoryBudget when the disk is
full (the search stops, exit 3, and says so), StoreLost when a file is gone or not the size
written (another process removed or changed it: the search cannot go on, exit 3).
"""
from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np

from verifier.core.machine import tree_bytes
from verifier.core.runs import as_bytes, drop_seen_file, merge_files, pwrite_all, sorted_rows, write_run
from verifier.engines.kernel.memory import Budget, MemoryBudget

MERGE = 4
MERGE_SHARE = 8           # a merge writes at most an eighth of the runs' fingerprints (2 B a state) ...
MERGE_FLOOR = 1 << 26     # ... or 64 million (1 GB), whichever is more
PREFIX = "kraft-verify-visited-"     # then the pid of the search that owns the directory


def _clear_orphans(where: Path) -> None:
    """Remove the directories of searches killed before they could (a SIGKILL runs no cleanup):
    those whose pid is no longer a process."""
    for d in where.glob(f"{PREFIX}*-*"):
        pid = d.name[len(PREFIX):].split("-")[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass                     # alive, another user's


class StoreLost(MemoryBudget):
    """A level's file is gone or not the size written: the search cannot go on (exit 3)."""


class LevelFiles:
    def __init__(self, budget: Budget, kept: Optional[Path] = None):
        """The search's own directory in the spill directory, or (`kept`) a checkpoint's, whose
        files outlive the search (diskpoint.py)."""
        self.budget = budget
        self.each = None        # a thread pool's map: runs read and merged in two halves at once (runs.py)
        if kept is None:
            _clear_orphans(Path(budget.spill or tempfile.gettempdir()))
            self.dir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=budget.spill or None))
        else:
            kept.mkdir(exist_ok=True)
            self.dir = kept
        self.kept = kept is not None
        self.runs: list[tuple] = []          # (path, fingerprints), oldest first
        self.merges = 0
        self.saved: set[str] = set()         # the files the saved checkpoint names
        self.named: set[str] = set()         # those, and the files of the last level's end
        self.retired: list[Path] = []        # files no longer the search's, kept while named
        self.sums: dict[str, str] = {}       # name -> sha256 of a file written whole (never changed after)
        self.fps: set = set()                # the open FpFiles (their bytes are in no file with a name)
        self.peak = 0                        # the most the files held at once, as `sample` saw it

    def close(self) -> None:
        """The directory removed; a checkpoint's keeps only what its manifest names."""
        if self.kept:
            self.keep_only(self.saved)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def retire(self, path: Path) -> None:
        """`path` is no longer the search's: removed, or kept while a checkpoint names it."""
        if path.name in self.named:
            self.retired.append(path)
        else:
            path.unlink(missing_ok=True)

    def name(self, names, saved: bool = False) -> None:
        """The files a level's end (and, `saved`, the checkpoint just written) names: those
        retired that neither the saved checkpoint nor the last level's end names are removed."""
        if saved:
            self.saved = set(names)
        self.named = self.saved | set(names)
        for p in self.retired:
            if p.name not in self.named:
                p.unlink(missing_ok=True)
        self.retired = [p for p in self.retired if p.name in self.named]

    def keep_only(self, names) -> None:
        """Remove every file of the directory that `names` does not hold (what a run stopped or
        killed after the checkpoint wrote)."""
        self.saved = self.named = set(names)
        self.retired = []
        for p in self.dir.iterdir():
            if p.name not in self.named:
                p.unlink(missing_ok=True)
                self.sums.pop(p.name, None)

    def sha(self, name: str) -> str:
        if name not in self.sums:
            from verifier.core.checkpoint import digest
            self.sums[name] = digest(self.dir / name)
        return self.sums[name]

    @property
    def nbytes(self) -> int:
        return tree_bytes(str(self.dir))

    def sample(self) -> None:
        """The files' bytes now, into `peak`: called where they are most in a level (a level's
        end, its candidates and the next level's rows both written; a merge, its runs twice),
        since everything a level writes is there by then."""
        self.peak = max(self.peak, self.nbytes + sum(16 * len(f) for f in self.fps))

    def file(self, level: int, what: str) -> Path:
        return self.dir / f"level-{level:05d}.{what}"

    def drop_seen(self, fp, order, keep) -> None:
        """keep[i] := False for each candidate fp[i] a run holds (`order`: fp's sorted order).
        The candidates are copied in that order once, so each run is walked against them front
        to back (`runs.sorted_rows`; the copy takes the room the level's table gave back): more
        runs (a merge's cap, `_add`) cost little, where a walk through `order` read fp at random."""
        if not self.runs:
            return
        in_order = sorted_rows(fp, order, self.each)
        held = np.ones(len(order), dtype=np.bool_)          # in_order's: no run holds it
        for path, count in self.runs:
            self._check(path, count)
            try:
                drop_seen_file(in_order, None, held, str(path), count, each=self.each)
            except (OSError, ValueError) as exc:
                raise StoreLost(f"a visited run cannot be read ({exc}): the search cannot go on without it") from None
        keep[order[~held]] = False

    def write_level(self, level: int, run, parents=None, ks=None, part: int = 0) -> None:
        """A level's run (sorted fingerprints) and links, within the disk's budget; a part after
        the first (external.External._part) is a run of its own, its links appended."""
        parts = {"run": run} if parents is None else {"run": run, "parent": parents, "k": ks}
        self.budget.allow_disk(sum(a.nbytes for a in parts.values()), "the visited runs", self.dir)
        path = self.file(level, "run") if part == 0 else self.dir / f"part-{level:05d}-{part:04d}.run"
        try:
            for what, a in parts.items():
                if what == "run":
                    write_run(str(path), a, self.each)
                else:
                    with open(self.file(level, what), "ab" if part else "wb") as fh:
                        a.tofile(fh)
        except OSError as exc:
            raise self.failed(f"writing level {level}'s files", exc) from None
        self._add(path, len(run))

    def link(self, level: int, at: int) -> tuple[int, int]:
        """(the parent's place in the level before, the place among its successors) of the
        state at place `at` of `level`."""
        try:
            parent = np.fromfile(self.file(level, "parent"), dtype="<u4", count=1, offset=4 * at)
            k = np.fromfile(self.file(level, "k"), dtype="<u2", count=1, offset=2 * at)
        except OSError as exc:
            raise StoreLost(f"level {level}'s links cannot be read ({exc})") from None
        if len(parent) != 1 or len(k) != 1:
            raise StoreLost(f"level {level}'s links end before place {at}: another process changed them")
        return int(parent[0]), int(k[0])

    def _add(self, path: Path, count: int) -> None:
        """The run joins the list; the newest two are merged while the older is at most MERGE
        times the newer and their copy at most a share of all runs (MERGE_SHARE, MERGE_FLOOR):
        a merge's copy is on disk beside the two it merges, which a checkpoint still names, so
        a merge of the two largest runs was the disk's peak (15.2 GB of 41.4 in the billion
        config's run, BENCHMARKS.md). More runs cost a walk each against a level's candidates,
        in order (`drop_seen`)."""
        self.runs.append((path, count))
        total = sum(n for _, n in self.runs)
        while (len(self.runs) > 1 and self.runs[-2][1] <= MERGE * self.runs[-1][1]
               and self.runs[-2][1] + self.runs[-1][1] <= max(MERGE_FLOOR, total // MERGE_SHARE)):
            (older, n_old), (newer, n_new) = self.runs[-2:]
            for p, n in self.runs[-2:]:
                self._check(p, n)
            self.budget.allow_disk(16 * (n_old + n_new), "the visited runs", self.dir)
            self.merges += 1
            merged = self.dir / f"merged-{self.merges:05d}.run"
            try:
                count = merge_files((str(older), n_old), (str(newer), n_new), str(merged), each=self.each)
            except (OSError, ValueError) as exc:
                raise self.failed("merging the visited runs", exc) from None
            self.sample()
            self.retire(older)
            self.retire(newer)
            self.runs[-2:] = [(merged, count)]

    def _check(self, path: Path, count: int) -> None:
        """StoreLost unless the run at `path` is there and as long as written."""
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise StoreLost(f"a visited run cannot be read ({exc}): the search cannot go on without it "
                            f"(was {self.dir} removed?)") from None
        if size != 16 * count:
            raise StoreLost(f"the visited run {path} holds {size / 16:g} fingerprints, not the {count} written: "
                            "another process changed it, and the search cannot go on")

    def failed(self, doing: str, exc: Exception) -> MemoryBudget:
        if getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
            return MemoryBudget(f"disk full: {doing} in {self.dir}")
        return StoreLost(f"{doing} in {self.dir} failed ({exc})")


class FpFile:
    """A level's fingerprints in the order found (16 bytes a state), in a file that has no name
    (unlinked at once: gone with the process, even after SIGKILL): the level being expanded
    and the next one were the last memory that grew with a level's width, 3.7 GB of 8 at a
    level of 115 million. Read a chunk at a time as the level's rows are."""

    def __init__(self, files: "LevelFiles", where: Optional[Path] = None):
        """In the search's directory, or (`where`, and files None: a checkpoint being checked
        before any search) in that one, outside the disk budget."""
        self.files, self.where, self.n = files, Path(where or files.dir), 0
        self._fh = tempfile.TemporaryFile(dir=self.where, buffering=0)
        if files is not None:
            files.fps.add(self)

    def __len__(self) -> int:
        return self.n

    def append(self, fps: np.ndarray) -> None:
        if self.files is not None:
            self.files.budget.allow_disk(fps.nbytes, "a level's fingerprints", self.where)
        try:
            pwrite_all(self._fh.fileno(), as_bytes(fps.astype(np.uint64, copy=False)), 16 * self.n,
                       None if self.files is None else self.files.each)
        except OSError as exc:
            if self.files is None:
                raise
            raise self.files.failed("writing a level's fingerprints", exc) from None
        self.n += len(fps)

    def read(self, lo: int, hi: int) -> np.ndarray:
        """Fingerprints lo..hi-1 (fewer past the end), a (k, 2) uint64 array of its own."""
        hi = min(hi, self.n)
        out = np.empty((max(0, hi - lo), 2), dtype=np.uint64)
        if len(out) and os.preadv(self._fh.fileno(), [out], 16 * lo) != out.nbytes:
            raise StoreLost(f"a level's fingerprints in {self.where} were cut short")
        return out

    def close(self) -> None:
        self._fh.close()
        if self.files is not None:
            self.files.fps.discard(self)
