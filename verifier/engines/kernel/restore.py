"""Reading a kernel checkpoint back (checkpoint.py writes it): the parts taken apart, every
part cross-checked (`_check`), and the whole put into a fresh Search (`restore`). Why each
check: checkpoint.py's docstring.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
from numba import njit

from verifier.core.rowhash import EMPTY, row_hash
from verifier.core.values import BadData, from_data, to_data
from verifier.engines.kernel.checkpoint import COLUMNS, COUNTS, FORMAT, SAMPLE, VERSION, Damaged, Saved
from verifier.engines.kernel.search import SLOTS
from verifier.engines.kernel.visited import owner, visit


@njit(cache=True, nogil=True, _nrt=False)
def _hashes(rows, out):
    for k in range(len(rows)):
        out[k, 0], out[k, 1] = row_hash(rows[k])


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
         and len(enabled) == len(taken) and len(enabled) >= n_actions
         and not any(enabled[n_actions:] + taken[n_actions:]),
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
    ctrls = check_tables(head, cols, model, kernel)
    for rows, fps in ((cols["frontier"], cols["frontier_fp"]), (cols["next"], cols["next_fp"])):
        if len(rows) and (rows[:, lay.ctrl].min() < 0 or rows[:, lay.ctrl].max() >= len(ctrls)):
            raise Damaged("a row's controller id is out of range")
        again = np.zeros((len(rows), 2), dtype=np.uint64)
        _hashes(rows, again)
        if not np.array_equal(again, fps):
            raise Damaged("a row is not the state its fingerprint names")
    return Saved(head, cols, ctrls, kernel.tables)


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


def adopt_tables(kernel, saved) -> None:
    """The brokers, controller values and event outcomes a checked checkpoint holds, into the
    search's own kernel under the ids they had (a row's columns mean the same)."""
    lay, tables = kernel.layout, kernel.tables
    for b in saved.head["universe"]:
        lay.universe_index(b)
    for k, ctrl in enumerate(saved.ctrls):
        if tables.ctrl_id(ctrl) != k:
            raise Damaged("the controller values are not numbered as they were")
    checked = saved.events                 # the outcomes _check ran again, under the same ids
    tables.keys, tables.vals, tables.used = checked.keys, checked.vals, checked.used
    tables.count, tables.errors = checked.count, list(checked.errors)


def check_tables(head: dict, cols: dict, model, kernel) -> list:
    """The saved brokers, controller values and event outcomes, checked into `kernel` (a fresh
    one): the controller values, in id order."""
    lay = kernel.layout
    universe = head["universe"]
    if universe[:len(lay.universe)] != lay.universe or any(type(b) is not int for b in universe):
        raise Damaged("the brokers named are not this config's")
    for b in universe:
        lay.universe_index(b)
    ctrls = _controllers(head["controllers"], model, kernel)
    _events(head, cols, kernel)
    return ctrls


def restore(search, saved: Saved) -> None:
    """Put a checked Saved into a fresh kernel Search (its tables, visited set, store, levels and
    counters): Damaged if the levels' fingerprints are not in the visited set."""
    from verifier.core import levels
    adopt_tables(search.k, saved)
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
