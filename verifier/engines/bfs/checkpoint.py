"""The one-process search's checkpoint: the whole `Search` as data, never a pickle.

    DIR/manifest.json   identity, how far, each data file's sha256, and the key's MAC
                        (verifier/core/checkpoint.py)
    DIR/search.json     counters, levels, violations found, roots, labels and the codec's field
                        values, as JSON (model values through verifier/core/values.py: only the
                        model's own NamedTuple types are built back)
    DIR/search.bin      the big columns, little-endian: visited fingerprints, parent links,
                        label ids, the level under way and the next one

Reading one builds nothing but numbers, strings and the model's value types, and every part is
cross-checked before the search goes on from it (`_check`): the column lengths against the
store's size and each other, the levels' sizes against the store, the counts of transitions
and new states against the per-action counts, every index and id in range, the frontier's
fingerprints in the visited set. A checkpoint that fails is recomputed from the start, never
trusted; one whose manifest's MAC does not verify was not written with this user's key.
"""
from __future__ import annotations

import json
import sys
import time
from array import array
from collections import Counter
from typing import Optional

from verifier.core.checkpoint import MANIFEST, CheckpointDir, Unsigned, digest
from verifier.core.files import write_atomic
from verifier.core.store import Labels
from verifier.core.values import BadData, from_data, to_data

VERSION = 3
JSON_PART, BIN_PART = "search.json", "search.bin"
# (name, typecode) of search.bin's columns, in order; a fingerprint is two "Q"s (low, high)
COLUMNS = (("seen", "Q"), ("parent", "q"), ("via", "I"), ("frontier_index", "q"), ("frontier_flat", "I"),
           ("next_index", "q"), ("next_flat", "I"))
M64 = (1 << 64) - 1


class Damaged(Exception):
    """The checkpoint's data does not hold together (torn, altered, another model's)."""


def _little(col: array) -> bytes:
    if sys.byteorder != "little":
        col = array(col.typecode, col)
        col.byteswap()
    return col.tobytes()


def dump(search) -> tuple[bytes, bytes]:
    """(search.json, search.bin) of a Search."""
    codec, store = search.codec, search.store
    seen = array("Q")
    for fp in store.seen:
        seen.append(fp & M64)
        seen.append(fp >> 64)
    columns = {"seen": seen, "parent": store.parent, "via": store.via, "frontier_index": search.frontier.index,
               "frontier_flat": search.frontier.flat, "next_index": search.nxt.index, "next_flat": search.nxt.flat}
    head = {
        "format": "kraft-verify check search", "version": VERSION, "started": search.started,
        "transitions": search.transitions, "terminal": search.terminal, "depth": search.depth, "pos": search.pos,
        "seconds": search.seconds, "states_per_level": search.states_per_level, "enabled": dict(search.enabled),
        "taken": dict(search.taken),
        "found": {name: {"index": index, "names": list(names), "final": to_data(final)}
                  for name, (index, names, final) in search.found.items()},
        "roots": [[index, to_data(state)] for index, state in search.roots.items()],
        "labels": [to_data(label) for label in store.labels],
        "codec": {"kind": codec.kind.__name__ if codec.kind else None,
                  "values": [[to_data(v) for v in values] for values in codec.values]},
        "widths": [search.frontier.width, search.nxt.width],
        "columns": {name: len(columns[name]) for name, _ in COLUMNS}}
    return json.dumps(head, separators=(",", ":")).encode(), b"".join(_little(columns[n]) for n, _ in COLUMNS)


def load(raw_json: bytes, raw_bin: bytes, model, search_type):
    """The Search these parts hold, checked whole; Damaged if they do not hold together."""
    try:
        head = json.loads(raw_json)
        return _build(head, raw_bin, model, search_type)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, BadData, RecursionError,
            OverflowError) as exc:
        raise Damaged(f"{type(exc).__name__}: {str(exc)[:200]}") from None


def _columns(head: dict, raw: bytes) -> dict:
    out, at = {}, 0
    for name, code in COLUMNS:
        n = head["columns"][name]
        if type(n) is not int or n < 0:
            raise Damaged(f"column {name} has no length")
        col = array(code)
        size = n * col.itemsize
        col.frombytes(raw[at:at + size])
        if len(col) != n:
            raise Damaged(f"column {name} is cut short")
        if sys.byteorder != "little":
            col.byteswap()
        out[name], at = col, at + size
    if at != len(raw):
        raise Damaged("search.bin is longer than its columns")
    return out


def _build(head: dict, raw: bytes, model, search_type):
    if head.get("format") != "kraft-verify check search" or head.get("version") != VERSION:
        raise Damaged("not a search of this version")
    types = model.value_types
    cols = _columns(head, raw)
    search = search_type()
    store, codec = search.store, search.codec
    store.seen = {lo | (hi << 64) for lo, hi in zip(cols["seen"][0::2], cols["seen"][1::2])}
    store.parent, store.via = cols["parent"], cols["via"]
    store.labels = Labels(*[from_data(x, types) for x in head["labels"]])
    kind = head["codec"]["kind"]
    if kind is not None:
        codec._learn(tuple.__new__(types[kind], [None] * len(types[kind]._fields)))
        for k, values in enumerate(head["codec"]["values"]):
            for v in values:
                codec._id(k, from_data(v, types))
            if len(codec.values[k]) != len(values):
                raise Damaged("a field's values repeat")
    for level, (index, flat), width in ((search.frontier, ("frontier_index", "frontier_flat"), head["widths"][0]),
                                        (search.nxt, ("next_index", "next_flat"), head["widths"][1])):
        level.index, level.flat, level.width = cols[index], cols[flat], width
    search.roots = {int(i): from_data(s, types) for i, s in head["roots"]}
    search.found = {str(name): (int(f["index"]), tuple(str(n) for n in f["names"]), from_data(f["final"], types))
                    for name, f in head["found"].items()}
    for name in ("started", "transitions", "terminal", "depth", "pos", "seconds"):
        setattr(search, name, head[name])
    search.states_per_level = [int(n) for n in head["states_per_level"]]
    search.enabled, search.taken = Counter(head["enabled"]), Counter(head["taken"])
    _check(search, model)
    return search


def _check(search, model) -> None:
    """The cross-checks a torn, altered or foreign search fails."""
    store, codec, n = search.store, search.codec, len(search.store.parent)
    levels = search.states_per_level
    facts = [
        (len(store.via) == n and len(store.seen) == n, "the store's columns disagree"),
        (all(type(x) is int and x >= 0 for x in levels) and levels and sum(levels) + len(search.nxt) == n,
         "the levels do not add up to the store"),
        (search.depth == len(levels) - 1 and len(search.frontier) == levels[-1], "the level under way is not the last"),
        (type(search.pos) is int and 0 <= search.pos <= len(search.frontier), "the position is outside the level"),
        (all(type(v) is int and v >= 0 for c in (search.enabled, search.taken) for v in c.values())
         and set(search.enabled) | set(search.taken) <= set(model.action_names), "the action counts are not counts"),
        (search.transitions == sum(search.enabled.values()), "the transitions are not the actions' transitions"),
        (sum(search.taken.values()) == n - len(search.roots), "the new states are not the actions' new states"),
        (search.started is True, "it claims a search that had not started (which would seed its roots again)"),
        (all(0 <= i < n and store.parent[i] == -1 for i in search.roots) and search.roots
         and sum(p == -1 for p in store.parent) == len(search.roots), "the roots are not the store's"),
        (all(s in model.init_states() for s in search.roots.values()), "a root is not an initial state of the model"),
        (all(-1 <= p < i for i, p in enumerate(store.parent)) and (not n or max(store.via) < len(store.labels)),
         "a parent link or label id is out of range"),
        (all(0 <= key[0] < n for key in search.found.values()), "a violation names no state"),
        (type(search.terminal) is int and 0 <= search.terminal <= n and type(search.seconds) in (int, float)
         and 0 <= search.seconds < 1e9, "a counter is wrong")]
    for ok, why in facts:
        if not ok:
            raise Damaged(why)
    sizes = [len(values) for values in codec.values]
    for level in (search.frontier, search.nxt):
        if len(level.flat) != len(level) * level.width or (len(level) and level.width != codec.width):
            raise Damaged("a level's field ids are cut short")
        if any(not 0 <= i < n for i in level.index):
            raise Damaged("a level names no state")
        for k, size in enumerate(sizes):
            if len(level) and max(level.flat[k::level.width]) >= size:
                raise Damaged("a level's field id is not the codec's")
        for pos in range(len(level)):
            if codec.fingerprint(level[pos][1]) not in store.seen:
                raise Damaged("a state of a level is not in the visited set")


class Checkpointer:
    """Saves a Search into a checkpoint directory: the data first, then the manifest naming
    its checksums (and signed with the key), so a reader never trusts a torn write."""

    def __init__(self, directory: CheckpointDir, every: float = 300.0):
        self.dir, self.every = directory, every
        self.last = time.monotonic()

    def due(self) -> bool:
        return time.monotonic() - self.last >= self.every

    def save(self, search, seconds: float) -> None:
        search.seconds = seconds
        head, columns = dump(search)
        write_atomic(self.dir.root / BIN_PART, columns)
        write_atomic(self.dir.root / JSON_PART, head)
        self.dir.save({"data": {JSON_PART: digest(self.dir.root / JSON_PART), BIN_PART: digest(self.dir.root / BIN_PART)},
                       "states": len(search.store), "depth": search.depth, "position": search.pos,
                       "seconds": round(seconds, 3)})
        self.last = time.monotonic()

    def load(self, manifest: dict, model, search_type) -> tuple[Optional[object], str]:
        """(the saved Search, "") or (None, why it cannot be trusted): then the run starts over."""
        files = manifest.get("data")
        if not isinstance(files, dict) or set(files) != {JSON_PART, BIN_PART}:
            return None, "its manifest names no data"
        for name, sha in files.items():
            path = self.dir.root / name
            if not path.is_file() or digest(path) != sha:       # a FIFO, a directory, a torn or altered file
                return None, f"{name} is torn or altered"
        try:
            search = load((self.dir.root / JSON_PART).read_bytes(), (self.dir.root / BIN_PART).read_bytes(), model,
                          search_type)
        except Damaged as exc:
            return None, f"its data does not hold together ({exc})"
        except OSError as exc:
            return None, f"it cannot be read ({exc.strerror})"
        if len(search.store) != manifest.get("states") or search.depth != manifest.get("depth"):
            return None, "its data is not the run its manifest describes"
        return search, ""


def open_checkpoint(path: str, identity: dict, resume: bool, every: float, model,
                    search_type) -> tuple[Checkpointer, Optional[object], str]:
    """(the checkpointer, the Search to resume or None, a note for the user). The directory
    rules are verifier/core/checkpoint.py's; a torn, altered or foreign checkpoint is
    recomputed."""
    directory = CheckpointDir(path, identity, "check", VERSION)
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
    search, why = saver.load(manifest, model, search_type)
    if search is None:
        return saver, None, f"checkpoint in {path} cannot be trusted ({why}): starting over"
    return saver, search, (f"resuming from {path}: {len(search.store):,} states, depth {search.depth}, "
                           f"{search.pos:,} of {len(search.frontier):,} states of the level expanded")
