"""The compiled search's checkpoint: a kernel `Search` as data, never a pickle.

    DIR/manifest.json   identity, how far, each data file's sha256, and the key's MAC
                        (verifier/core/checkpoint.py)
    DIR/search.json     counters, levels, the violations found, and what makes a row mean the
                        same in another process: the brokers a row's indices name (the config's,
                        then strangers in the order met) and the controller values its
                        controller column numbers, one `to_data` value each, in id order
    DIR/search.bin      the big columns, little-endian: the visited fingerprints, every state's
                        parent and label, the level under way (rows and fingerprints) and as
                        much of the next level as was written

A checkpoint is written at a consistent point: between two stretches of a level (the state at
`pos` not yet expanded, the next level's first `n_next` rows written), when --checkpoint-every
seconds have passed at a level's end, and when the run stops for a bound, a budget or a signal.
The event table is not kept: a resumed search fills it again as it meets the events.

Reading one builds numbers, strings and the model's own controller values only, and cross-checks
every part before the search goes on (`_check`, `restore`): the columns' lengths against the
store's size, the levels' sizes against the store, the counters against the per-action counts,
every parent, label and controller id in range, every controller value the model's canonical
one, and every row of both levels hashed again to the fingerprint kept beside it, which must be
in the visited set. What fails is recomputed from the start, never trusted; a manifest whose MAC
does not verify was not written with this user's key. A forger who holds the key and writes a
row the model cannot reach, with its true hashes, is not caught: the key is the boundary, as
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
from verifier.core.values import BadData, from_data, to_data
from verifier.engines.kernel.search import SLOTS
from verifier.core.rowhash import EMPTY, row_hash
from verifier.engines.kernel.visited import owner, visit

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
def _hashes(rows, out):
    for k in range(len(rows)):
        out[k, 0], out[k, 1] = row_hash(rows[k])


@njit(cache=True, nogil=True, _nrt=False)
def _compact(table, out, at) -> int:
    """The fingerprints of `table` into out[at:], in slot order: where the next goes."""
    for slot in range(len(table)):
        if table[slot, 0] != EMPTY:
            out[at, 0], out[at, 1] = table[slot, 0], table[slot, 1]
            at += 1
    return at


@njit(cache=True, nogil=True, _nrt=False)
def _fill(table, fps, owners, which) -> int:
    """Insert the fingerprints `fps` owned by table `which` of `owners`: how many were new."""
    new = 0
    for k in range(len(fps)):
        if owner(fps[k, 0], owners) == which and visit(table, fps[k, 0], fps[k, 1]):
            new += 1
    return new


@njit(cache=True, nogil=True, _nrt=False)
def _present(table, fps, owners, which) -> bool:
    """Whether every fingerprint of `fps` owned by table `which` is in it."""
    mask = np.int64(len(table) - 1)
    for k in range(len(fps)):
        if owner(fps[k, 0], owners) != which:
            continue
        a, b = fps[k, 0] | np.uint64(1), fps[k, 1]
        slot = np.int64(b >> np.uint64(1)) & mask
        while table[slot, 0] != a or table[slot, 1] != b:
            if table[slot, 0] == EMPTY:
                return False
            slot = (slot + 1) & mask
    return True


class Saved:
    """A checkpoint read back and checked: the head's counters and the columns as arrays."""

    def __init__(self, head: dict, columns: dict, ctrls: list):
        self.head, self.columns, self.ctrls = head, columns, ctrls

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


def _read(path: Path) -> bytearray:
    """A file's bytes, writable (a read-only array would make numba compile its functions again)."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        buf = bytearray(size)
        if fh.readinto(buf) != size:
            raise Damaged("a file shorter than it was a moment ago")
    return buf


def load(raw_json: bytes, raw_bin: bytearray, model, kernel) -> Saved:
    """The Saved these parts hold, checked against a fresh `kernel` of the model (which it
    fills with the saved brokers and controller values); Damaged if they do not hold together."""
    try:
        head = json.loads(raw_json)
        if not isinstance(head, dict) or head.get("format") != FORMAT or head.get("version") != VERSION:
            raise Damaged("not a kernel search of this version")
        return _check(head, _columns(head, raw_bin, kernel.layout), model, kernel)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, BadData, RecursionError,
            OverflowError) as exc:
        raise Damaged(f"{type(exc).__name__}: {str(exc)[:200]}") from None


def _columns(head: dict, raw_bin: bytearray, lay) -> dict:
    if head["width"] != lay.width:
        raise Damaged(f"rows {head['width']} wide, not this config's {lay.width}")
    widths = {"row": lay.width, "key": lay.key}
    out, at, raw = {}, 0, np.frombuffer(raw_bin, dtype=np.uint8)
    for name, dtype, w in COLUMNS:
        n = head["columns"][name]
        if type(n) is not int or n < 0:
            raise Damaged(f"column {name} has no length")
        shape = (n,) if w == 0 else (n, widths.get(w, w))
        size = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if at + size > len(raw):
            raise Damaged(f"column {name} is cut short")
        out[name] = raw[at:at + size].view(dtype).reshape(shape).astype(dtype[1:], copy=False)
        at += size
    if at != len(raw):
        raise Damaged("search.bin is longer than its columns")
    return out


def _check(head: dict, cols: dict, model, kernel) -> Saved:
    """The cross-checks a torn, altered or foreign search fails."""
    from verifier.core import levels
    for name in COUNTS:
        if type(head[name]) is not int or head[name] < 0:
            raise Damaged(f"{name} is not a count")
    n, depth, pos, n_next = head["n_store"], head["depth"], head["pos"], head["n_next"]
    per_level = head["states_per_level"]
    n_actions = len(model.action_names)
    counters, enabled, taken = head["counters"], head["enabled"], head["taken"]
    roots = len(levels.roots(model))
    parents, labels = cols["parents"], cols["labels"]
    facts = [
        (len(parents) == n and len(labels) == n and len(cols["visited"]) == n, "the store's columns disagree"),
        (isinstance(per_level, list) and per_level and all(type(x) is int and x > 0 for x in per_level)
         and sum(per_level) + n_next == n, "the levels do not add up to the store"),
        (depth == len(per_level) - 1 and len(cols["frontier"]) == per_level[-1] == len(cols["frontier_fp"])
         and head["level_base"] == sum(per_level[:-1]), "the level under way is not the last"),
        (pos <= len(cols["frontier"]) and len(cols["next"]) == n_next == len(cols["next_fp"]),
         "the position is outside the level"),
        (all(type(v) is int and v >= 0 for v in counters + enabled + taken) and len(counters) == 4
         and len(enabled) == len(taken) and len(enabled) >= n_actions and not any(enabled[n_actions:] + taken[n_actions:]),
         "the action counts are not counts"),
        (counters[0] == sum(enabled), "the transitions are not the actions' transitions"),
        (sum(taken) == n - roots and counters[3] == n, "the new states are not the actions' new states"),
        (per_level[0] == roots and bool(np.all(parents[:roots] == -1)) and not np.any(parents[roots:] < 0),
         "the roots are not the store's"),
        (bool(np.all(parents < np.arange(n))), "a parent link is out of range"),
        (not n or (labels[roots:, 0].min() >= 0 and labels[:, 0].max() < n_actions), "a label is out of range"),
        (type(head["seconds"]) in (int, float) and 0 <= head["seconds"] < 1e9, "a counter is wrong")]
    for ok, why in facts:
        if not ok:
            raise Damaged(why)
    found = head["found"]
    shapes = {"index": (SLOTS,), "group": (SLOTS,), "label": (SLOTS, 5)}
    if any(np.array(found[key], dtype=np.int64).shape != shape for key, shape in shapes.items()):
        raise Damaged("the violations found are not the engine's")
    if any(not -1 <= i < n for i in found["index"]):
        raise Damaged("a violation names no state")
    lay = kernel.layout
    universe = head["universe"]
    if universe[:len(lay.universe)] != lay.universe or any(type(b) is not int for b in universe):
        raise Damaged("the brokers named are not this config's")
    for b in universe:
        lay.universe_index(b)
    ctrls = _controllers(head["controllers"], model, kernel)
    _events(head, cols, kernel)
    for rows, fps in ((cols["frontier"], cols["frontier_fp"]), (cols["next"], cols["next_fp"])):
        if len(rows) and (rows[:, lay.ctrl].min() < 0 or rows[:, lay.ctrl].max() >= len(ctrls)):
            raise Damaged("a row's controller id is out of range")
        again = np.zeros((len(rows), 2), dtype=np.uint64)
        _hashes(rows, again)
        if not np.array_equal(again, fps):
            raise Damaged("a row is not the state its fingerprint names")
    return Saved(head, cols, ctrls)


def _controllers(values: list, model, kernel) -> list:
    """The saved controller values, interned into `kernel`'s table in their saved order (so a
    row's controller column means the same): each the model's own, in canonical form."""
    types = model.value_types
    out = []
    for k, value in enumerate(values):
        ctrl = from_data(value, types)
        if type(ctrl).__name__ != "Controller" or to_data(ctrl) != value:
            raise Damaged("a controller value is not one in canonical form")
        if kernel.tables.ctrl_id(ctrl) != k:
            raise Damaged("the controller values repeat")
        out.append(ctrl)
    return out


def _events(head: dict, cols: dict, kernel) -> None:
    """The saved event outcomes, into `kernel`'s table: each names a controller value and an
    error there is, and a sample of them, spread over the table, is run through the algebra
    again and must come out the same."""
    from specs.kernel.tables import _rehash
    errors, keys, vals = head["errors"], cols["event_keys"], cols["event_vals"]
    tables = kernel.tables
    if not all(isinstance(e, str) for e in errors) or len(set(errors)) != len(errors):
        raise Damaged("the controller's errors are not names")
    tables.errors = list(errors)
    if len(keys) and (keys[:, 0].min() < 0 or keys[:, 0].max() >= len(tables.ctrls)
                      or vals[:, 0].min() < 0 or vals[:, 0].max() >= len(tables.ctrls)
                      or vals[:, 1].min() < 0 or vals[:, 1].max() > len(errors)
                      or vals[:, 2:].min() < 0 or vals[:, 2:].max() > 1):
        raise Damaged("an event outcome is out of range")
    slots = len(tables.used)
    while 2 * len(keys) > slots:
        slots *= 2
    tables.keys = np.zeros((slots, keys.shape[1]), dtype=np.int64)
    tables.vals = np.zeros((slots, 5), dtype=np.int64)
    tables.used = np.zeros(slots, dtype=np.int8)
    _rehash(keys, vals, np.ones(len(keys), dtype=np.int8), tables.keys, tables.vals, tables.used)
    tables.count = int(tables.used.sum())
    if tables.count != len(keys):
        raise Damaged("the events repeat")
    for k in sorted(set(np.linspace(0, len(keys) - 1, min(SAMPLE, len(keys))).astype(int).tolist())):
        out = tables._run(keys[k].tolist())
        again = (tables.ctrl_id(out.ctrl), tables._error(out.error), int(bool(out.unclean_election)),
                 int(bool(out.operator_unclean)), int(bool(out.unclean_shutdown)))
        if again != tuple(int(v) for v in vals[k]):
            raise Damaged("an event's outcome is not the algebra's")
    if len(tables.ctrls) != len(head["controllers"]) or tables.errors != errors:
        raise Damaged("an event's outcome is not the algebra's")


def restore(search, saved: Saved) -> None:
    """Put a checked Saved into a fresh kernel Search (its tables, visited set, store, levels and
    counters): Damaged if the levels' fingerprints are not in the visited set."""
    from verifier.core import levels
    lay, tables = search.k.layout, search.k.tables
    for b in saved.head["universe"]:
        lay.universe_index(b)
    for k, ctrl in enumerate(saved.ctrls):
        if tables.ctrl_id(ctrl) != k:
            raise Damaged("the controller values are not numbered as they were")
    _events(saved.head, saved.columns, search.k)
    h, cols = saved.head, saved.columns
    v = search.visited
    v.room(len(cols["visited"]))
    for o in range(v.owners):
        v.counts[o] = int(_fill(v.tables[o], cols["visited"], v.owners, o))
    if sum(v.counts) != len(cols["visited"]):
        raise Damaged("the visited fingerprints repeat")
    for fps in (cols["frontier_fp"], cols["next_fp"]):
        if not all(_present(v.tables[o], fps, v.owners, o) for o in range(v.owners)):
            raise Damaged("a state of a level is not in the visited set")
    for buffer, values in zip(search._store + search._levels[0] + search._levels[1],
                              (cols["parents"], cols["labels"], cols["frontier"], cols["frontier_fp"],
                               cols["next"], cols["next_fp"])):
        rows = len(buffer.array)
        while rows < len(values):
            rows *= 2
        buffer.grow(rows, 0)
        buffer.array[:len(values)] = values
    search.parents, search.labels = search._store[0].array, search._store[1].array
    search.roots = {i: s for i, (s, _) in enumerate(levels.roots(search.model).values())}
    search._frontier_fp = search._levels[0][1].array[:len(cols["frontier_fp"])]
    search.n_store, search.depth, search._level_base = h["n_store"], h["depth"], h["level_base"]
    search.states_per_level = list(h["states_per_level"])
    search.ctr[:] = h["counters"]
    search.enabled[:len(h["enabled"])], search.taken[:len(h["taken"])] = h["enabled"], h["taken"]
    search.found_index[:], search.found_group[:] = h["found"]["index"], h["found"]["group"]
    search.found_label[:] = h["found"]["label"]
    search.before = float(h["seconds"])


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


OLDER = {3: "a checkpoint of the Python search, before the kernel was the one search: it cannot be resumed "
            "(its states are numbered by another codec); use a fresh directory, or run without --resume there "
            "after removing it"}


def open_checkpoint(path: str, identity: dict, resume: bool, every: float, model,
                    kernel) -> tuple[Checkpointer, Optional[Saved], str]:
    """(the checkpointer, the Saved search to resume or None, a note for the user). The
    directory rules are verifier/core/checkpoint.py's; a torn, altered or foreign checkpoint is
    recomputed; an older version's is refused (CheckpointError: one line, exit 2)."""
    directory = CheckpointDir(path, identity, "check", VERSION)
    _refuse_older(directory)
    note = ""
    try:
        manifest = directory.claim(resume)
    except Unsigned:
        directory.forget(MANIFEST)
        manifest = directory.claim(resume)
        note = (f"checkpoint in {path} is not signed with this user's key (another user's, or edited): "
                "starting over")
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


def _refuse_older(directory: CheckpointDir) -> None:
    files = directory.files
    if not files.is_file(MANIFEST):
        return
    try:
        data = json.loads(files.read(MANIFEST))
    except (OSError, ValueError, RecursionError):
        return                       # the directory rules say it in their words
    if not isinstance(data, dict) or data.get("kind") != "check" or data.get("version") not in OLDER:
        return
    raise CheckpointError(f"--checkpoint-dir {directory.where}: holds {OLDER[data['version']]}")
