"""One settings value for every engine (stateright's CheckerBuilder, Hypothesis' `settings`):
the limits of a run, the options of the search, and the knobs of the one engine it is for.
Every engine is called `run(model, properties, settings, progress=None)`; it reads the limits
and options it honours and its own knobs through `Knobs.of(settings)` (verifier/core/knobs.py).
The command line builds one `Settings` from the flags and the config file.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from verifier.core.knobs import Knobs


@dataclass(frozen=True)
class Limits:
    max_depth: Optional[int] = None
    max_states: Optional[int] = None
    time_budget: Optional[float] = None


@dataclass(frozen=True)
class Options:
    check_deadlock: bool = True
    keep_going: bool = False          # record the first counterexample of every invariant, explore on
    graph: bool = False               # keep nodes and edges for --dump-graph


@dataclass(frozen=True)
class Settings:
    limits: Limits = Limits()
    options: Options = Options()
    knobs: Optional[Knobs] = None     # the engine's own (its `Knobs`); None: that engine's defaults

    def __post_init__(self) -> None:
        if self.knobs is not None and not isinstance(self.knobs, Knobs):
            raise TypeError(f"Settings.knobs takes an engine's Knobs, not {type(self.knobs).__name__}")

    def but(self, **changes) -> "Settings":
        """These settings with some fields changed (limits= and options= take dicts too)."""
        for name in ("limits", "options"):
            if isinstance(changes.get(name), dict):
                changes[name] = replace(getattr(self, name), **changes[name])
        return replace(self, **changes)
