"""The checkpoint of `check --visited disk` (external.py): the search's own files are the
checkpoint, so a save writes a few small files and hashes only the level files it has not
hashed before (each is written whole and never changed).

    DIR/manifest.json       identity, how far, the sha256 of every file below, and the key's
                            MAC (verifier/core/checkpoint.py)
    DIR/search-NNNNN.json   the search at the end of level NNNNN: counters, levels, the
                            violations found, the visited runs' names and counts, the next
                            level's chunk index (narrow.ChunkFile), and the brokers, controller
                            values and errors a row's columns name (as checkpoint.py keeps them)
    DIR/search-NNNNN.bin    the event table's keys and outcomes
    DIR/visited/            the level files (levelfiles.py), here instead of the spill directory

A checkpoint is of a level's end: at one once --checkpoint-every seconds have passed, when the
run stops for a depth bound, a budget or a signal (a stop inside a level goes back to the level's
start: up to one level is expanded again), and after the last level. Until a newer one is
written, the files the saved one names stay, also those the search has merged away since
(LevelFiles.retire); the manifest is replaced only when its files are on disk, so a SIGKILL at
any moment leaves the last one whole, and a resumed run first removes what was written after it.

Reading one back trusts nothing before it is checked: every named file's sha256 (the manifest's
MAC vouches for those), then the parts against each other (`_check`): the levels against the
store, the runs' counts against it and their sizes, each level's links in range, the chunk
index over the rows file, the counters against the per-action counts, the tables as restore.py
checks them, and every row of the level to expand, and every root, hashed to a fingerprint the
visited runs must hold. What fails is recomputed from the start, never trusted.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Optional

import numpy as np

from verifier.core import levels
from verifier.core.checkpoint import MARK, CheckpointDir, CheckpointError, digest
from verifier.core.files import write_atomic
from verifier.core.runs import by_fp, drop_seen_range, first_at_least
from verifier.core.values import BadData, to_data
from verifier.engines.kernel.checkpoint import Damaged, _write_columns, claim
from verifier.engines.kernel.levelfiles import FpFile
from verifier.engines.kernel.narrow import ChunkFile, narrow_index
from verifier.engines.kernel.restore import _hashes, _read, adopt_tables, check_tables

FORMAT = "kraft-verify check kernel search, visited set on disk"
VERSION = 6
VISITED = "visited"
LEVEL_FILE = re.compile(r"(level-\d{5}\.(run|parent|k|rows)|merged-\d{5}\.run|part-\d{5}-\d{4}\.run)")
SEARCH_FILE = re.compile(r"search-\d{5}\.(json|bin)")


def boundary(search) -> dict:
    """The search at a level's end, as data: what its checkpoint holds but the tables."""
    return {"format": FORMAT, "version": VERSION, "width": search.k.layout.width, "depth": search.depth,
            "n_store": search.n_store, "level_base": search._level_base, "starts": list(search.starts),
            "states_per_level": list(search.states_per_level), "counters": [int(x) for x in search.ctr],
            "enabled": [int(x) for x in search.enabled], "taken": [int(x) for x in search.taken],
            "found": {"index": search.found_index.tolist(), "group": search.found_group.tolist(),
                      "label": search.found_label.tolist()},
            "runs": [[p.name, int(n)] for p, n in search.files.runs], "merges": search.files.merges,
            "front": search.front.path.name, "chunks": search.front.described(),
            "seconds": round(search._elapsed(), 3)}


def names_of(head: dict) -> list:
    """The level files a checkpoint of `head` names: the runs, each level's links, the rows."""
    links = [f"level-{lv:05d}.{what}" for lv in range(1, len(head["starts"])) for what in ("parent", "k")]
    return [name for name, _ in head["runs"]] + links + [head["front"]]


class DiskCheckpointer:
    """Saves the last level's end of an External search into its checkpoint directory."""

    def __init__(self, directory: CheckpointDir, every: float = 300.0):
        self.dir, self.every = directory, every
        self.last = time.monotonic()
        self.head: Optional[dict] = None       # the last level's end
        self.saved: Optional[int] = None       # the level whose end the manifest holds

    @property
    def visited(self) -> Path:
        return self.dir.root / VISITED

    def due(self) -> bool:
        return time.monotonic() - self.last >= self.every

    def level_end(self, search, last: bool = False) -> None:
        """A level is done (`last`: the search is): its end is what a stop goes back to."""
        self.head = boundary(search)
        search.files.name(names_of(self.head))
        if last or self.due():
            self.save(search)

    def save(self, search) -> None:
        """A checkpoint of the last level's end, unless the manifest holds it already."""
        level = len(self.head["starts"]) - 1 if self.head is not None else None
        if level is None or level == self.saved:
            return
        tables, files = search.k.tables, search.files
        used = tables.used != 0
        head = dict(self.head, universe=list(search.k.layout.universe), controllers=[to_data(c) for c in tables.ctrls],
                    errors=list(tables.errors), events=int(used.sum()))
        names = names_of(head)
        list((files.each or map)(files.sha, names))      # hashed on the threads at once (hashlib lets go of the GIL)
        data = {f"{VISITED}/{n}": files.sha(n) for n in names}
        stem = f"search-{level:05d}"
        data[f"{stem}.bin"] = _write_columns(self.dir.root / f"{stem}.bin",
                                             [np.ascontiguousarray(tables.keys[used], dtype="<i8"),
                                              np.ascontiguousarray(tables.vals[used], dtype="<i8")])
        raw = json.dumps(head, separators=(",", ":")).encode()
        write_atomic(self.dir.root / f"{stem}.json", raw)
        data[f"{stem}.json"] = hashlib.sha256(raw).hexdigest()
        self.dir.save({"data": data, "states": head["n_store"], "depth": head["depth"], "position": 0,
                       "seconds": head["seconds"]})
        files.name(names, saved=True)
        for p in self.dir.root.glob("search-*"):      # the checkpoints before
            if p.name not in data:
                p.unlink(missing_ok=True)
        self.saved, self.last = level, time.monotonic()


class DiskSaved:
    """A checkpoint read back and checked: its head, controller values, checked event table,
    the level to expand's chunk index and fingerprints."""

    def __init__(self, head: dict, ctrls: list, events, chunks: tuple, front_fp: FpFile):
        self.head, self.ctrls, self.events, self.chunks, self.front_fp = head, ctrls, events, chunks, front_fp


def resume(search, saved: DiskSaved) -> None:
    """Put a checked DiskSaved into a fresh External search whose files are the checkpoint's."""
    adopt_tables(search.k, saved)
    h, files = saved.head, search.files
    files.keep_only(names_of(h))
    files.runs = [(files.dir / name, count) for name, count in h["runs"]]
    files.merges = h["merges"]
    search.front, search.front_fp = ChunkFile(files.dir / h["front"], saved.chunks), saved.front_fp
    search.starts, search.states_per_level = list(h["starts"]), list(h["states_per_level"])
    search.n_store, search.depth, search._level_base = h["n_store"], h["depth"], h["level_base"]
    search.ctr[:] = h["counters"]
    search.enabled[:len(h["enabled"])], search.taken[:len(h["taken"])] = h["enabled"], h["taken"]
    search.found_index[:], search.found_group[:] = h["found"]["index"], h["found"]["group"]
    search.found_label[:] = h["found"]["label"]
    search._found_before = search.found_index.copy()
    for i, (s, c) in enumerate(levels.roots(search.model).values()):
        search.roots[i], search.root_rows[i] = s, search.k.pack(c).copy()
    search.before = float(h["seconds"])
    search.checkpoint.head, search.checkpoint.saved = h, len(h["starts"]) - 1


def open_disk_checkpoint(path: str, identity: dict, resume: bool, every: float, model,
                         kernel) -> tuple[DiskCheckpointer, Optional[DiskSaved], str]:
    """(the checkpointer, the DiskSaved to resume or None, a note for the user), as
    checkpoint.open_checkpoint answers for the in-memory search."""
    directory, manifest, note = claim(path, identity, resume, VERSION)
    saver = DiskCheckpointer(directory, every)
    saved, why = (None, "") if manifest is None else load(directory, manifest, model, kernel)
    if saved is None:
        directory.forget(*[n for n in directory.files.listdir() if n != MARK])
        if why:
            note = f"checkpoint in {path} cannot be trusted ({why}): starting over"
        return saver, None, note
    h = saved.head
    return saver, saved, (f"resuming from {path}: {h['n_store']:,} states, depth {h['depth']}, the next level "
                          f"({len(saved.front_fp):,} states) from its start")


def load(directory: CheckpointDir, manifest: dict, model, kernel) -> tuple[Optional[DiskSaved], str]:
    """(the checked DiskSaved, "") or (None, why it cannot be trusted)."""
    data = manifest.get("data")
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        return None, "its manifest names no data"
    level = [n[len(VISITED) + 1:] for n in data if n.startswith(VISITED + "/")]
    parts = sorted(n for n in data if SEARCH_FILE.fullmatch(n))
    if (len(parts) != 2 or parts[0][:-4] != parts[1][:-5] or len(level) + 2 != len(data)
            or not all(LEVEL_FILE.fullmatch(n) for n in level)):
        return None, "its manifest names files that are not a search's"
    try:
        for name, sha in data.items():
            path = directory.root / name
            if not path.is_file() or digest(path) != sha:
                return None, f"{name} is torn or altered"
        head = json.loads(_read(directory.root / parts[1]))
        if not isinstance(head, dict) or head.get("format") != FORMAT or head.get("version") != VERSION:
            return None, "its data is not a disk search of this version"
        if sorted(names_of(head)) != sorted(level):
            return None, "its files are not the ones its data names"
        saved = _check(head, _read(directory.root / parts[0]), directory.root / VISITED, model, kernel)
    except Damaged as exc:
        return None, f"its data does not hold together ({exc})"
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, BadData, RecursionError,
            OverflowError) as exc:
        return None, f"its data does not hold together ({type(exc).__name__}: {str(exc)[:200]})"
    except OSError as exc:
        return None, f"it cannot be read ({exc.strerror})"
    if head["n_store"] != manifest.get("states") or head["depth"] != manifest.get("depth"):
        return None, "its data is not the run its manifest describes"
    return saved, ""


def _check(head: dict, raw_bin: bytearray, where: Path, model, kernel) -> DiskSaved:
    """The cross-checks a torn, altered or foreign disk search fails (Damaged, or a ValueError
    of a part that is not what it says)."""
    lay = kernel.layout
    ints = lambda xs: isinstance(xs, list) and all(type(x) is int and x >= 0 for x in xs)   # noqa: E731
    n, starts, per_level, runs = head["n_store"], head["starts"], head["states_per_level"], head["runs"]
    counters, enabled, taken = head["counters"], head["enabled"], head["taken"]
    roots = levels.roots(model)
    last = len(starts) > len(per_level)            # the search is done: the level to expand is empty
    facts = [
        (head["width"] == lay.width, "rows of another width"),
        (all(ints(x) for x in (starts, per_level, counters, enabled, taken, [n, head["merges"], head["events"]]))
         and per_level and all(x > 0 for x in per_level), "a count is not a count"),
        (len(starts) in (len(per_level), len(per_level) + 1) and starts[0] == 0
         and all(starts[i + 1] == starts[i] + per_level[i] for i in range(len(starts) - 1))
         and sum(per_level) == n and head["level_base"] == starts[-1] and head["depth"] == len(per_level) - 1,
         "the levels do not add up to the store"),
        (per_level[0] == len(roots), "the roots are not the config's"),
        (isinstance(runs, list) and all(isinstance(r, list) and len(r) == 2 and ints(r[1:]) for r in runs)
         and sum(r[1] for r in runs) == n, "the visited runs do not hold the store"),
        (len(counters) == 4 and len(enabled) == len(taken) >= len(model.action_names)
         and not any(enabled[len(model.action_names):] + taken[len(model.action_names):])
         and counters[0] == sum(enabled) and sum(taken) == n - len(roots), "the action counts are not counts"),
        (type(head["seconds"]) in (int, float) and 0 <= head["seconds"] < 1e9, "a counter is wrong")]
    for ok, why in facts:
        if not ok:
            raise Damaged(why)
    found = head["found"]
    if (np.array(found["index"]).shape != (16,) or np.array(found["group"]).shape != (16,)
            or np.array(found["label"]).shape != (16, 5) or not all(-1 <= i < n for i in found["index"])):
        raise Damaged("the violations found are not the engine's")
    for name, count in runs:
        if (where / name).stat().st_size != 16 * count:
            raise Damaged(f"the run {name} is not {count} fingerprints long")
    for lv in range(1, len(starts)):
        width = per_level[lv] if lv < len(per_level) else 0
        parent = np.fromfile(where / f"level-{lv:05d}.parent", dtype="<u4")
        k = np.fromfile(where / f"level-{lv:05d}.k", dtype="<u2")
        if (len(parent) != width or len(k) != width
                or (width and (parent.max() >= per_level[lv - 1] or k.max() >= kernel.max_successors))):
            raise Damaged(f"level {lv}'s links are not links to the level before")
    cols = _events(head, raw_bin, lay)
    ctrls = check_tables(head, cols, model, kernel)
    chunks = narrow_index(head["chunks"], lay.width, (where / head["front"]).stat().st_size)
    front_fp = _front_fp(where / head["front"], chunks, lay, len(ctrls))
    if len(front_fp) != (0 if last else per_level[-1]):
        raise Damaged("the level to expand is not the last level")
    root_fp = np.zeros((len(roots), 2), dtype=np.uint64)
    _hashes(np.stack([kernel.pack(c) for _, c in roots.values()]), root_fp)
    _all_held(root_fp, runs, where)
    if len(front_fp):
        _front_held(front_fp, runs, where)
    return DiskSaved(head, ctrls, kernel.tables, chunks, front_fp)


SLICE_BITS = 3
SLICES = 1 << SLICE_BITS    # the level to expand is checked in this many slices of the key space ...
AT_ONCE = 2                 # ... this many at once, on as many threads: memory for AT_ONCE slices


def _front_held(front_fp: FpFile, runs: list, where: Path) -> None:
    """Damaged unless the visited runs hold every fingerprint of the level to expand: a few
    slices of the key space at a time, each slice's part of every run read once, the slices
    read from the level in one pass and checked on threads at once (the GIL released: the
    check of brokers 6's 854 million states took 70 s on one thread, reading its level 8 times)."""
    from concurrent.futures import ThreadPoolExecutor
    top = np.uint64(64 - SLICE_BITS)
    with ThreadPoolExecutor(AT_ONCE) as pool:
        for first in range(0, SLICES, AT_ONCE):
            mine: dict = {lo: [] for lo in range(first, first + AT_ONCE)}
            for at in range(0, len(front_fp), 1 << 22):
                part = front_fp.read(at, at + (1 << 22))
                of = part[:, 0] >> top
                for lo, into in mine.items():
                    into.append(part[of == lo])
            list(pool.map(lambda lo: _all_held(np.concatenate(mine[lo]), runs, where, lo), mine))


def _all_held(fps: np.ndarray, runs: list, where: Path, lo: Optional[int] = None) -> None:
    """Damaged unless the visited runs hold every one of fps (all of them, with `lo`, in slice
    lo of the key space: only that part of each run is read)."""
    held, order = np.ones(len(fps), dtype=np.bool_), by_fp(fps)
    for name, count in runs:
        start, end = 0, count
        if lo is not None:
            start, end = (first_at_least(str(where / name), count, np.uint64(b << (64 - SLICE_BITS)))
                          if b < SLICES else count for b in (lo, lo + 1))
        drop_seen_range(fps, order, held, str(where / name), start, end)
    if held.any():
        raise Damaged("a state of the level to expand is not in the visited runs")


def _events(head: dict, raw_bin: bytearray, lay) -> dict:
    """The event table's columns of search-NNNNN.bin."""
    n = head["events"]
    raw = np.frombuffer(raw_bin, dtype="<i8")
    if len(raw) != n * (lay.key + 5):
        raise Damaged("the event table is not as long as its count")
    return {"event_keys": raw[:n * lay.key].reshape(n, lay.key).astype(np.int64),
            "event_vals": raw[n * lay.key:].reshape(n, 5).astype(np.int64)}


def _front_fp(path: Path, chunks: tuple, lay, n_ctrls: int) -> FpFile:
    """The fingerprints of the level to expand, its rows widened and hashed chunk by chunk into
    a file without a name (the search's front_fp then: levelfiles.FpFile)."""
    rows = ChunkFile(path, chunks)
    out = FpFile(None, path.parent)
    try:
        wide = np.zeros((max((c[0] for c in chunks), default=0), lay.width), dtype=np.int32)
        for chunk in rows:
            got = chunk.rows_into(wide)
            if got[:, lay.ctrl].min() < 0 or got[:, lay.ctrl].max() >= n_ctrls:
                raise Damaged("a row's controller id is out of range")
            fps = np.zeros((chunk.n, 2), dtype=np.uint64)
            _hashes(got, fps)
            try:
                out.append(fps)
            except OSError as exc:            # the checkpoint is not at fault: keep it, say why
                raise CheckpointError(f"the checkpoint in {path.parent.parent} cannot be checked: writing its "
                                      f"level's fingerprints failed ({exc.strerror}); make room and resume "
                                      "again") from None
        return out
    except BaseException:
        out.close()
        raise
    finally:
        rows.close(unlink=False)
