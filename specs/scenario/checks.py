"""Checks on input files and scenario values that the type of a field does not catch: every
one turns a malformed input into one line and exit 2 before anything runs, instead of a hang,
a traceback or a run of something the user did not mean.
"""
from __future__ import annotations

import json
import os
import stat
from typing import Any, Mapping, Optional

from specs.config import MAX_INT


def unreadable(path: str) -> Optional[str]:
    """Why `path` cannot be read as an input file, or None. A FIFO would block the open until a
    writer comes (a hang), and a device such as /dev/zero never ends: only regular files (and
    directories, which open() refuses in its own words) are let through to open()."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None                  # open() says why, in the caller's words
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or os.path.realpath(path) == os.devnull:
        return None                  # /dev/null reads as an empty file, as ever
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    return f"not a regular file ({kind})"


class Unreadable(ValueError):
    """An input file that cannot be read or parsed; str() says why, without the path."""


def read_data(path: str, parse, what: str) -> Any:
    """`parse` (bytes -> data) of the file at `path`, or Unreadable with the reason: not a
    regular file, missing, malformed (the parser's words), nested too deeply, unreadable."""
    problem = unreadable(path)
    if problem:
        raise Unreadable(problem)
    try:
        with open(path, "rb") as fh:
            return parse(fh.read())
    except FileNotFoundError:
        raise Unreadable("no such file") from None
    except json.JSONDecodeError as exc:
        raise Unreadable(f"not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except ValueError as exc:       # a parser's own error, bytes that are not UTF-8, a duplicated key
        raise Unreadable(str(exc)) from None
    except RecursionError:
        raise Unreadable(f"nested too deeply to be a {what}") from None
    except OSError as exc:
        raise Unreadable(f"cannot read it ({exc.strerror})") from None


def surrogate(data: Any) -> Optional[str]:
    """A JSON string may spell half a UTF-16 pair (\\ud800); such text cannot be printed nor
    written to a report. Returns a message if `data` holds one."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"text with an unpaired surrogate (\\u{ord(exc.object[exc.start]):04x}): not Unicode"
    except RecursionError:
        return None                  # the loader has already refused what is too deep
    return None


def broker_id(value: Any, name: str, none_ok: bool = False) -> Optional[str]:
    """A broker id is a Java int >= 0 (Kafka's); the field's type is checked before this."""
    if value is None and none_ok:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT:
        return f"field '{name}': broker ids are integers from 0 to {MAX_INT}, got {value!r}"
    return None


def op_values(op: Mapping[str, Any]) -> Optional[str]:
    """The values of an operation whose types op_label has accepted: broker ids in range (a
    negative or a 2^40 broker would otherwise run as a broker of its own), a min ISR that fits
    Kafka's int, and a crash that keeps a count of entries, not a negative one."""
    for name in ("broker", "leader", "elected"):
        if name in op:
            problem = broker_id(op[name], name, none_ok=name != "elected")
            if problem:
                return problem
    for name in ("replicas", "isr"):
        for b in op.get(name) or ():
            problem = broker_id(b, name)
            if problem:
                return problem
    for key in op.get("broker_epochs") or {}:
        problem = broker_id(_int_key(key), "broker_epochs")
        if problem:
            return problem
    if op.get("op") == "set_min_isr" and isinstance(op.get("value"), int) and op["value"] > MAX_INT:
        return f"field 'value': min ISR {op['value']} does not fit Kafka's int (max {MAX_INT})"
    if op.get("op") == "crash_lossy" and isinstance(op.get("keep"), int) and op["keep"] < 0:
        return f"field 'keep': the number of log entries kept must be >= 0, got {op['keep']}"
    return None


def _int_key(key: Any) -> Any:
    try:
        return int(key)
    except (TypeError, ValueError):
        return key
