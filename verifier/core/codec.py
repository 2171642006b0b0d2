"""States held as a few small integers: each field value is stored once, per run.

A state is a tuple of at most 8 fields (verifier/core/fingerprint.py). A level of the search holds
hundreds of thousands of states, but few distinct field values: on `--brokers 4` a level of
152,030 states has 1,067 distinct controller states, 339 replica tuples, 157 follower tuples,
271 requests in flight and 73 histories, while the states themselves hold about 270,000
distinct objects for them. So a held state is its field ids (4 bytes each) in a flat array,
and each value is kept once, with its 128-bit hash (what the fingerprint mixes). Decoding
builds a state from the shared values: a step changes one or two fields, and the fields it
does not touch are the parent's very objects, so their ids are reused without hashing.
"""
from __future__ import annotations

from array import array
from typing import Optional

from verifier.core.fingerprint import MASK, _MULTIPLIERS, value_hash


class Codec:
    """Field values <-> ids, with each value's hash; fingerprints equal `fingerprint(state)`."""

    def __init__(self):
        self.kind: Optional[type] = None          # the state's tuple type, learnt from the first state
        self.width = 0
        self.ids: list[dict] = []                 # per field: value -> id
        self.values: list[list] = []              # per field: id -> value
        self.hashes: list[list[int]] = []         # per field: id -> value_hash(value)

    def _learn(self, state) -> None:
        self.kind, self.width = type(state), len(state)
        if self.width > len(_MULTIPLIERS):
            raise ValueError(f"a state has {self.width} fields; fingerprints mix at most {len(_MULTIPLIERS)}")
        self.ids = [{} for _ in state]
        self.values = [[] for _ in state]
        self.hashes = [[] for _ in state]

    def _id(self, k: int, value) -> int:
        i = self.ids[k].get(value)
        if i is None:
            i = self.ids[k][value] = len(self.values[k])
            self.values[k].append(value)
            self.hashes[k].append(value_hash(value))
        return i

    def encode(self, state) -> tuple[int, ...]:
        """The state's field ids."""
        if self.kind is None:
            self._learn(state)
        return tuple(self._id(k, v) for k, v in enumerate(state))

    def child(self, state, parent, parent_ids, parent_fp: int) -> tuple[tuple[int, ...], int]:
        """(field ids, fingerprint) of a successor of `parent`. A field the step left alone is
        the parent's very object: it keeps the parent's id and costs nothing; the fingerprint
        changes by the changed fields' terms only (it is a sum of one term per field)."""
        ids = list(parent_ids)
        fp = parent_fp
        for k, value, old in zip(range(self.width), state, parent):
            if value is not old:
                i = self.ids[k].get(value)
                if i is None:
                    i = self._id(k, value)
                if i != ids[k]:
                    hashes = self.hashes[k]
                    fp += _MULTIPLIERS[k] * (hashes[i] - hashes[ids[k]])
                    ids[k] = i
        return tuple(ids), fp & MASK

    def encode_batch(self, states) -> list[tuple[int, ...]]:
        """`encode` of many states that share field objects (as the states of one unpickled
        message do): each shared object is looked up once."""
        by_object: dict = {}
        out = []
        for state in states:
            if self.kind is None:
                self._learn(state)
            ids = []
            for k, v in enumerate(state):
                i = by_object.get((k, id(v)))
                if i is None:
                    i = by_object[(k, id(v))] = self._id(k, v)
                ids.append(i)
            out.append(tuple(ids))
        return out

    def decode(self, ids) -> tuple:
        values = self.values
        return tuple.__new__(self.kind, [values[k][i] for k, i in enumerate(ids)])

    def fingerprint(self, ids) -> int:
        fp = 0
        for k, h, i in zip(_MULTIPLIERS, self.hashes, ids):
            fp += k * h[i]
        return fp & MASK

    def distinct_values(self) -> list[int]:
        return [len(v) for v in self.values]


class Level:
    """One BFS level: per state a key (its store index, in a flat array, or its fingerprint, in
    a list) and its field ids, in a flat array (8 + 4 x fields bytes a state with indices)."""

    def __init__(self, keys: str = "index"):
        self.width = 0                          # learnt from the first state
        self.index = array("q") if keys == "index" else []
        self.flat = array("I")

    def append(self, index: int, ids) -> None:
        self.width = len(ids)
        self.index.append(index)
        self.flat.extend(ids)

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, pos: int) -> tuple[int, tuple[int, ...]]:
        w = self.width
        return self.index[pos], tuple(self.flat[pos * w:(pos + 1) * w])


def pack(states: list) -> tuple:
    """Many states as a value that pickles fast: per field, a table of its distinct values and
    a column of ids. Pickling state by state costs a Python-level call per NamedTuple (its
    __getnewargs__), and a level's states hold millions of them but only thousands of distinct
    values. Equal values are found by identity first (a successor shares its unchanged fields
    with its parent), then by equality."""
    if not states:
        return None, [], []
    width = len(states[0])
    tables: list[list] = [[] for _ in range(width)]
    cols = [array("I") for _ in range(width)]
    for k in range(width):
        by_id, by_value, table, col = {}, {}, tables[k], cols[k]
        for s in states:
            v = s[k]
            i = by_id.get(id(v))
            if i is None:
                i = by_value.get(v)
                if i is None:
                    i = by_value[v] = len(table)
                    table.append(v)
                by_id[id(v)] = i
            col.append(i)
    return type(states[0]), tables, [c.tobytes() for c in cols]


def pack_ids(codec: Codec, rows: list) -> tuple:
    """`pack` of states held as a codec's field ids: each field's ids are renumbered to a
    table of the values the rows use."""
    if not rows:
        return None, [], []
    tables, cols = [], []
    for k, values in enumerate(codec.values):
        local: dict = {}
        col = array("I", [local.setdefault(ids[k], len(local)) for ids in rows])
        tables.append([values[i] for i in local])
        cols.append(col.tobytes())
    return codec.kind, tables, cols


def columns(packed: tuple) -> list:
    """The id columns of a packed value (one array per field)."""
    out = []
    for raw in packed[2]:
        col = array("I")
        col.frombytes(raw)
        out.append(col)
    return out


def unpack(packed: tuple, positions=None) -> list:
    """The states of `pack`, or only those at `positions`; equal fields are the same objects."""
    kind, tables, _ = packed
    if kind is None:
        return []
    cols = columns(packed)
    new = tuple.__new__
    if positions is None:
        return [new(kind, [t[i] for t, i in zip(tables, ids)]) for ids in zip(*cols)]
    return [new(kind, [t[c[p]] for t, c in zip(tables, cols)]) for p in positions]


def codec_of(packed: tuple) -> tuple[Codec, list]:
    """A Codec that holds a packed value's tables as its own, and the rows' field ids in it:
    a part of a level is expanded as ids, with no state built twice."""
    codec = Codec()
    kind, tables, _ = packed
    if kind is None:
        return codec, []
    codec.kind, codec.width = kind, len(tables)
    for table in tables:
        codec.values.append(list(table))
        codec.ids.append({v: i for i, v in enumerate(table)})
        codec.hashes.append([value_hash(v) for v in table])
    return codec, list(zip(*columns(packed)))
