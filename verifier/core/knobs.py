"""An engine's own knobs: what only one engine reads (a simulation's walks, the prover's sizes,
Spark's master), as a typed, frozen value that each engine declares beside its `run` and that
is checked when it is made, as Hypothesis checks each `settings` value as it is given.

    @knobs.declare("simulate")
    class Knobs(knobs.Knobs):
        walks: int = knob(1000, least=1)      # random walks
        depth: int = knob(100, least=1)       # steps per walk at the most
        seed: int = 0

`declare` makes the class a frozen dataclass of that engine. A field's annotation is its type
(a plain default where any value of it will do), `knob(..., least=, choices=)` its range; a
wrong value raises `KnobError` (one line) at once, not deep in a run. An engine reads its knobs with
`Knobs.of(settings)`: its own, its defaults when the settings carry none, and an error when
they carry another engine's, so no engine reads another engine's knobs
(tests/test_house.py checks that each engine asks only for its own class).
"""
from __future__ import annotations

import collections.abc
import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar


class KnobError(ValueError):
    """A knob given a value of the wrong type or out of its range."""


def declare(engine: str):
    """The class decorator of an engine's knobs: a frozen dataclass that knows its engine."""
    def make(cls):
        cls.engine = engine
        return dataclass(frozen=True)(cls)
    return make


def knob(default: Any, *, least: Any = None, choices: tuple = ()) -> Any:
    """A field of a Knobs class with a range: its default, its lowest value (`least`), the
    values it may take (`choices`)."""
    return field(default=default, metadata={"least": least, "choices": tuple(choices)})


@dataclass(frozen=True)
class Knobs:
    """The base of every engine's knobs (no field of its own)."""
    engine: ClassVar[str] = ""

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in fields(self):
            value, meta = getattr(self, f.name), f.metadata
            where = f"{self.engine or type(self).__name__} knob {f.name}"
            if not _fits(value, hints[f.name]):
                raise KnobError(f"{where}: {value!r} is not a {_name(hints[f.name])}")
            if value is None or isinstance(value, bool):
                continue
            if meta.get("least") is not None and not value >= meta["least"]:
                raise KnobError(f"{where}: {value!r} is below {meta['least']}")
            if meta.get("choices") and value not in meta["choices"]:
                raise KnobError(f"{where}: {value!r} is not one of {', '.join(map(str, meta['choices']))}")

    @classmethod
    def of(cls, settings) -> "Knobs":
        """This engine's knobs in `settings`: the ones given, or the defaults when none were."""
        given = getattr(settings, "knobs", None)
        if given is None:
            return cls()
        if type(given) is not cls:
            raise KnobError(f"the {cls.engine} engine was given the knobs of "
                            f"{given.engine or type(given).__name__}, not its own")
        return given


def _fits(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    kind = origin or hint
    if kind is collections.abc.Callable:
        return callable(value)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _name(hint: Any) -> str:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_name(a) for a in args) + (" or None" if len(args) < len(typing.get_args(hint)) else "")
    return getattr(typing.get_origin(hint) or hint, "__name__", str(hint))
