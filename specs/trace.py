"""A run of the model, as every engine reports one and every writer reads it: the model, a
start state, and the steps (label, state after), with the invariants broken at the end and
the properties the engine checked (the objects the caller handed it: a writer asks them why
they fail, and a replay scenario lists their names)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class Trace:
    model: Any                                          # specs.model.Model
    initial: Any                                        # specs.state.State
    steps: list[tuple[tuple, Any]] = field(default_factory=list)
    violated: list[str] = field(default_factory=list)   # invariants violated in the last state/step
    engine: str = "bfs"
    checked: Optional[list[str]] = None                 # invariants the engine checked (None: all)
    properties: tuple = ()                              # those invariants themselves (explanations)

    @property
    def config(self):
        return self.model.cfg

    @property
    def final(self):
        return self.steps[-1][1] if self.steps else self.initial

    def __len__(self) -> int:
        return len(self.steps)
