"""The compiled search's checkpoint: a kernel `Search` as data, never a pickle.

    DIR/manifest.json   identity, how far, each data file's sha256, and the key's MAC
                        (verifier/core/checkpoint.py)
    DIR/search.json     counters, levels, the violations found, and what makes a row mean the
                        same in another process: the brokers a row's indices name (the config's,
                        then strangers in the order met), the controller values its controller
                        column numbers, one `to_data` value each, in id order, and the
                        controller's error names
    DIR/search.bin      the big columns, little-endian: the visited fingerprints, every state's
                        parent and label, the level under way (rows and fingerprints), as much
                        of the next level as was written, and the event table's keys and
                        outcomes (which name controller values by those ids)

A checkpoint is written at a consistent point: at a level's end once --checkpoint-every seconds
have passed, between two stretches of a level when the run stops for a bound, a budget or a
signal (the state at `pos` not yet expanded, the next level's first `n_next` rows written), and
after the last level. The event table is kept: filling it again through the algebra cost a
resumed brokers 4 run 4.5 s.

Reading one builds numbers, strings and the model's own controller values only, and cross-checks
every part before the search goes on (restore.py: `_check`, `restore`): the columns' lengths against the
store's size, the levels' sizes against the store, the counters against the per-action counts,
every parent, label and controller id in range, every controller value the model's canonical
one, every row of both levels hashed again to the fingerprint kept beside it, which must be
in the visited set, and a sample of the event outcomes, spread over the table, run through the
algebra again. What fails is recomputed from the start, never trusted; a manifest whose MAC
does not verify was not written with this user's key. A forger who holds the key and writes a
row the model cannot reach, with its true hashes, or an event outcome outside the sample, is not
caught: the key is the boundary, as
for every file the product signs.

A checkpoint of the Python search (version 3, before the kernel was the one search) is refused
in one line, not resumed: its states are numbered by another codec.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Optional

import numpy as np
from numba import njit

from verifier.core.checkpoint import MANIFEST, CheckpointDir, CheckpointError, Unsigned
from verifier.core.files import WriteError, write_atomic
from verifier.core.rowhash import EMPTY
from verifier.core.values import to_data

VERSION = 4
FORMAT = "kraft-verify check kernel search"
JSON_PART, BIN_PART = "search.json", "search.bin"
# search.bin's columns, in order: name, dtype, the width of a row ("row": the config's row width,
# "key": its event key's)
COLUMNS = (("visited", "<u8", 2), ("parents", "<i8", 0), ("labels", "<i4", 5), ("frontier", "<i4", "row"),
           ("frontier_fp", "<u8", 2), ("next", "<i4", "row"), ("next_fp", "<u8", 2), ("event_keys", "<i8", "key"),
           ("event_vals", "<i8", 5))
SAMPLE = 512          # events run through the algebra again on reading (all of them cost seconds)
COUNTS = ("depth", "n_store", "level_base", "pos", "n_next")


class Damaged(Exception):
    """The checkpoint's data does not hold together (torn, altered, another model's)."""


@njit(cache=True, nogil=True, _nrt=False)
def _compact(table, out, at) -> int:
    """The fingerprints of `table` into out[at:], in slot order: where the next goes."""
    for slot in range(len(table)):
        if table[slot, 0] != EMPTY:
            out[at, 0], out[at, 1] = table[slot, 0], table[slot, 1]
            at += 1
    return at


class Saved:
    """A checkpoint read back and checked: the head's counters and the columns as arrays."""

    def __init__(self, head: dict, columns: dict, ctrls: list, events):
        """`events`: the checked kernel's Tables, whose event arrays the search takes over."""
        self.head, self.columns, self.ctrls, self.events = head, columns, ctrls, events

    def __getattr__(self, name):
        if name in self.__dict__.get("columns", {}):
            return self.columns[name]
        raise AttributeError(name)


def dump(search, pos: int, n_next: int, seconds: float) -> tuple[bytes, list]:
    """(search.json, the columns of search.bin in order) of a kernel Search at a consistent point."""
    n_frontier = len(search._frontier_fp)
    visited = np.zeros((search.n_store, 2), dtype=np.uint64)     # every state numbered is in the set once
    at = 0
    for t in search.visited.tables:
        at = _compact(t, visited, at)
    if at != len(visited):
        raise AssertionError(f"the visited set holds {at} fingerprints for {search.n_store} states")
    tables = search.k.tables
    columns = {"event_keys": tables.keys[tables.used != 0], "event_vals": tables.vals[tables.used != 0],
               "visited": visited, "parents": search.parents[:search.n_store],
               "labels": search.labels[:search.n_store], "frontier": search._levels[0][0].array[:n_frontier],
               "frontier_fp": search._frontier_fp, "next": search.nxt[:n_next], "next_fp": search.nxt_fp[:n_next]}
    lay = search.k.layout
    head = {"format": FORMAT, "version": VERSION, "width": lay.width, "depth": search.depth,
            "n_store": search.n_store, "level_base": search._level_base, "pos": pos, "n_next": n_next,
            "seconds": seconds, "states_per_level": list(search.states_per_level),
            "counters": [int(x) for x in search.ctr], "enabled": [int(x) for x in search.enabled],
            "taken": [int(x) for x in search.taken],
            "found": {"index": search.found_index.tolist(), "group": search.found_group.tolist(),
                      "label": search.found_label.tolist()},
            "universe": list(lay.universe), "controllers": [to_data(c) for c in tables.ctrls],
            "errors": list(tables.errors),
            "columns": {name: len(columns[name]) for name, _, _ in COLUMNS}}
    return (json.dumps(head, separators=(",", ":")).encode(),
            [np.ascontiguousarray(columns[name], dtype=dtype) for name, dtype, _ in COLUMNS])


class Checkpointer:
    """Saves a kernel Search into a checkpoint directory: the data first, then the manifest
    naming its checksums (and signed with the key), so a reader never trusts a torn write."""

    def __init__(self, directory: CheckpointDir, every: float = 300.0):
        self.dir, self.every = directory, every
        self.last = time.monotonic()

    def due(self) -> bool:
        return time.monotonic() - self.last >= self.every

    def save(self, search, pos: int, n_next: int, seconds: float) -> None:
        head, columns = dump(search, pos, n_next, seconds)
        sha = _write_columns(self.dir.root / BIN_PART, columns)
        write_atomic(self.dir.root / JSON_PART, head)
        self.dir.save({"data": {JSON_PART: hashlib.sha256(head).hexdigest(), BIN_PART: sha},
                       "states": search.n_store, "depth": search.depth, "position": pos,
                       "seconds": round(seconds, 3)})
        self.last = time.monotonic()

    def load(self, manifest: dict, model, kernel) -> tuple[Optional[Saved], str]:
        """(the saved search, "") or (None, why it cannot be trusted): then the run starts over."""
        from verifier.engines.kernel.restore import _read, load
        files = manifest.get("data")
        if not isinstance(files, dict) or set(files) != {JSON_PART, BIN_PART}:
            return None, "its manifest names no data"
        data = {}
        try:
            for name, sha in files.items():
                path = self.dir.root / name
                if not path.is_file():                # a FIFO, a directory
                    return None, f"{name} is torn or altered"
                data[name] = _read(path)              # read once: hashed, then taken apart
                if hashlib.sha256(data[name]).hexdigest() != sha:
                    return None, f"{name} is torn or altered"
            saved = load(bytes(data[JSON_PART]), data[BIN_PART], model, kernel)
        except Damaged as exc:
            return None, f"its data does not hold together ({exc})"
        except OSError as exc:
            return None, f"it cannot be read ({exc.strerror})"
        if saved.head["n_store"] != manifest.get("states") or saved.head["depth"] != manifest.get("depth"):
            return None, "its data is not the run its manifest describes"
        return saved, ""


def _write_columns(path: Path, columns: list) -> str:
    """The columns one after another into `path`, atomically (a write the disk refused is
    WriteError, and leaves the old file): the sha256 of what was written, hashed on the way
    (reading 300 MB back cost a checkpoint of brokers 4 half a second)."""
    h = hashlib.sha256()
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            for col in columns:
                if col.size:
                    view = memoryview(col.reshape(-1)).cast("B")
                    h.update(view)
                    fh.write(view)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise WriteError(path, exc) from None
    return h.hexdigest()


OTHER = {3: "a checkpoint of the Python search, before the kernel was the one search: it cannot be resumed "
            "(its states are numbered by another codec); use a fresh directory, or run without --resume there "
            "after removing it",
         4: "the in-memory search's checkpoint: resume it with --visited memory",
         5: "a --visited disk search's checkpoint of an earlier kraft-verify (its chunks a whole byte a column, "
            "not packed bits): it cannot be resumed by this one; use a fresh directory, or run without --resume "
            "there after removing it",
         6: "a --visited disk search's checkpoint (diskpoint.py): resume it with --visited disk"}


def open_checkpoint(path: str, identity: dict, resume: bool, every: float, model,
                    kernel) -> tuple[Checkpointer, Optional[Saved], str]:
    """(the checkpointer, the Saved search to resume or None, a note for the user). The
    directory rules are verifier/core/checkpoint.py's; a torn, altered or foreign checkpoint is
    recomputed; an older version's, or the other search's, is refused (CheckpointError: one
    line, exit 2)."""
    directory, manifest, note = claim(path, identity, resume, VERSION)
    saver = Checkpointer(directory, every)
    if manifest is None:
        directory.forget(MANIFEST, JSON_PART, BIN_PART, "search.pickle")
        return saver, None, note
    saved, why = saver.load(manifest, model, kernel)
    if saved is None:
        return saver, None, f"checkpoint in {path} cannot be trusted ({why}): starting over"
    h = saved.head
    return saver, saved, (f"resuming from {path}: {h['n_store']:,} states, depth {h['depth']}, "
                          f"{h['pos']:,} of {len(saved.frontier):,} states of the level expanded")


def claim(path: str, identity: dict, resume: bool, version: int) -> tuple[CheckpointDir, Optional[dict], str]:
    """(the directory, the manifest to resume or None, a note): the directory rules, the other
    search's checkpoint refused, and one not signed with this user's key started over."""
    directory = CheckpointDir(path, identity, "check", version)
    refuse_other(directory, version)
    try:
        return directory, directory.claim(resume), ""
    except Unsigned:
        directory.forget(MANIFEST)
        return directory, directory.claim(resume), (f"checkpoint in {path} is not signed with this user's key "
                                                    "(another user's, or edited): starting over")


def refuse_other(directory: CheckpointDir, version: int) -> None:
    """CheckpointError (one line, exit 2) for a checkpoint of `check` by an older search or the
    other kind (in memory, on disk): resumed by the search that wrote it, never read as this one's."""
    files = directory.files
    if not files.is_file(MANIFEST):
        return
    try:
        data = json.loads(files.read(MANIFEST))
    except (OSError, ValueError, RecursionError):
        return                       # the directory rules say it in their words
    if not isinstance(data, dict) or data.get("kind") != "check" or data.get("version") not in OTHER:
        return
    if data["version"] != version:
        raise CheckpointError(f"--checkpoint-dir {directory.where}: holds {OTHER[data['version']]}")
