"""One settings value for every engine (stateright's CheckerBuilder, Hypothesis' `settings`):
the limits of a run, the options of the search, and what a sampling engine draws. Every engine
is called `run(model, properties, settings, progress=None)` and reads the fields it needs;
the command line builds one `Settings` from the flags and the config file, and a registered
profile gives named defaults (`Settings.profile("ci")`). The fuzz profiles are registered
with Hypothesis under the same names (verifier/engines/fuzz.py), so `ci` and `nightly` mean
the same thing to both.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Optional


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
    workers: int = 1                  # bfs: worker processes (verifier/engines/parallel/ beyond one)
    walks: int = 1000                 # simulate: random walks ...
    depth: int = 100                  # ... of at most this many steps
    seed: Optional[int] = None        # simulate, fuzz: the random seed (fuzz: None = the profile's)
    profile: str = "ci"               # fuzz: the Hypothesis profile
    examples: Optional[int] = None    # fuzz: Hypothesis max_examples (None: the profile's)
    steps: Optional[int] = None       # fuzz: steps per example (None: the profile's)
    shrink: bool = True               # fuzz, simulate: shrink a failure (the mutant gate needs only the kill)
    database: Any = "default"         # fuzz: the example database root (None: none)
    engine: dict = field(default_factory=dict)   # an engine's own knobs (spark's master, prove's sizes, ...)

    def but(self, **changes) -> "Settings":
        """These settings with some fields changed (limits= and options= take dicts too)."""
        for name, kind in (("limits", Limits), ("options", Options)):
            if isinstance(changes.get(name), dict):
                changes[name] = replace(getattr(self, name), **changes[name])
        return replace(self, **changes)

    @staticmethod
    def profile_named(name: str) -> "Settings":
        if name not in PROFILES:
            raise ValueError(f"unknown profile '{name}' (known: {', '.join(PROFILES)})")
        return PROFILES[name]


# Named settings, the same names Hypothesis knows (verifier/engines/fuzz.py registers them):
# `ci` is derandomized and bounded, for gates; `nightly` is random and large.
PROFILES: dict[str, Settings] = {
    "ci": Settings(profile="ci"),
    "nightly": Settings(profile="nightly"),
}
