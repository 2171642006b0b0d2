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
        "dest", "help"}


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
            if uid in helps:
                spec["help"] = helps[uid]
            p.add_argument(*names, **spec)
        p.set_defaults(func=_runner(command["run"]))
