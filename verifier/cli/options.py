"""The command line's parsers, built from options.toml: every command and every option is
declared there once, as data, with its type, default and help; a command names the options it
takes. Adding an option to a command is a line in that table, and two commands that take the
same option cannot drift apart."""
from __future__ import annotations

import importlib
import tomllib
from functools import lru_cache
from pathlib import Path

TYPES = {"int": int, "float": float, "str": str}
KEYS = {"flags", "positional", "action", "type", "default", "nargs", "const", "choices", "metavar", "required",
        "dest", "help", "min", "max"}


def _ranged(kind, flag: str, low, high):
    """A value of `kind` within [low, high]: the one check of an option's range, whichever
    command takes it (a value outside is one line, exit 2)."""
    def parse(text: str):
        from verifier.cli.common import UsageError
        try:
            value = kind(text)
        except ValueError:
            raise UsageError(f"argument {flag}: invalid {kind.__name__} value: {text!r}") from None
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f"between {low} and {high}" if low is not None and high is not None else \
                (f">= {low}" if low is not None else f"<= {high}")
            raise UsageError(f"{flag} must be {bounds}, got {text}")
        return value
    parse.__name__ = kind.__name__
    return parse


@lru_cache(maxsize=None)
def table() -> dict:
    with open(Path(__file__).with_name("options.toml"), "rb") as fh:
        data = tomllib.load(fh)
    for uid, spec in data["option"].items():
        unknown = set(spec) - KEYS
        if unknown:
            raise ValueError(f"options.toml: option {uid} has unknown keys {sorted(unknown)}")
    for name, command in data["command"].items():
        for uid in command["options"]:
            if uid not in data["option"]:
                raise ValueError(f"options.toml: command {name} takes undeclared option {uid}")
    return data


def _runner(target: str):
    module, function = target.split(":")

    def run(args):
        return getattr(importlib.import_module(module), function)(args)
    return run


def add_commands(sub) -> None:
    """One subparser per command of the table, in its order."""
    data = table()
    for name, command in data["command"].items():
        p = sub.add_parser(name, help=command["help"])
        helps = command.get("help_of", {})
        for uid in command["options"]:
            spec = dict(data["option"][uid])
            flag = uid.split(":", 1)[-1]
            names = spec.pop("flags", None) or [flag]
            if spec.pop("positional", False):
                names = [flag]
            if "type" in spec:
                spec["type"] = TYPES[spec["type"]]
            if "min" in spec or "max" in spec:
                spec["type"] = _ranged(spec["type"], names[-1], spec.pop("min", None), spec.pop("max", None))
            if uid in helps:
                spec["help"] = helps[uid]
            if "{presets}" in spec.get("help", ""):       # every preset the catalogue has, never a list retyped
                from specs import PRESETS
                spec["help"] = spec["help"].replace("{presets}", ", ".join(PRESETS))
            p.add_argument(*names, **spec)
        p.set_defaults(func=_runner(command["run"]))
