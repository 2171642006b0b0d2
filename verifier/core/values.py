"""Model values as data: what a file or a message the product writes holds, in place of pickles.

A pickle runs code when it is read, so anyone who can write to a checkpoint store (an HDFS or
S3 bucket shared by a cluster) could run code on every executor and on the driver. Model values
are nested tuples of ints, bools, strings and None, some of them NamedTuples of the model's
own state types; `to_data` turns one into JSON-compatible data (a tuple becomes a list, a
NamedTuple `{"@": type name, "v": [fields]}`) and `from_data` builds it back, creating only the
NamedTuple types it is given (an allow-list: `Model.value_types`), with their exact arity, and
rejecting anything else (`BadData`). Nothing in the data names code.
"""
from __future__ import annotations

import json
from typing import Any, Mapping


class BadData(ValueError):
    """Data that is not a model value of the allowed types."""


def to_data(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, tuple):
        fields = getattr(value, "_fields", None)
        if fields is not None:
            return {"@": type(value).__name__, "v": [to_data(v) for v in value]}
        return [to_data(v) for v in value]
    raise TypeError(f"not a model value: {type(value).__name__}")


def from_data(data: Any, types: Mapping[str, type]) -> Any:
    if data is None or isinstance(data, (bool, int, str)):
        return data
    if isinstance(data, list):
        return tuple(from_data(v, types) for v in data)
    if isinstance(data, dict):
        kind = types.get(data.get("@")) if set(data) == {"@", "v"} else None
        fields = data.get("v")
        if kind is None or not isinstance(fields, list) or len(fields) != len(kind._fields):
            raise BadData(f"not a value of the model's types: {str(data)[:80]}")
        return tuple.__new__(kind, [from_data(v, types) for v in fields])
    raise BadData(f"not a model value: {type(data).__name__}")


def dumps(value: Any) -> bytes:
    return json.dumps(to_data(value), separators=(",", ":")).encode()


def loads(raw: bytes, types: Mapping[str, type]) -> Any:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise BadData(f"not JSON: {exc}") from None
    return from_data(data, types)
