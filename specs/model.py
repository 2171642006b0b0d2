"""The model as engines see it (stateright's `Model`): initial states, successors,
and the few facts about actions that coverage and deadlock reports need.

Engines hold a `Model` and an invariant list and nothing else; every engine
(BFS, simulation, Hypothesis, Spark, replay) reaches the protocol through here
or through `specs.actions.step`, so they all run the same transition function.
"""
from __future__ import annotations

from typing import Callable, Iterator, Optional

from specs import actions as A
from specs import symmetry as S
from specs.config import Config


class Model:
    def __init__(self, cfg: Config, symmetry: bool = True):
        self.cfg = cfg
        self.symmetry_note = S.applicability(cfg)
        self.symmetric = symmetry and self.symmetry_note is None
        self.canonical: Optional[Callable] = S.canonicalizer(cfg) if self.symmetric else None
        self.group_size = S.group_size(cfg) if self.symmetric else 1

    action_names = A.ACTION_NAMES

    def init_states(self) -> list:
        return A.init_states(self.cfg)

    def successors(self, state) -> Iterator[tuple[tuple, object]]:
        return A.successors(self.cfg, state)

    def step(self, state, label: tuple):
        """The state after `label` (no guard checked): traces are rebuilt with it."""
        return A.step(self.cfg, state, label)[0]

    def stuck(self, state) -> bool:
        """A deadlock: no action changes the state even with unlimited budgets. A state that
        has no successor only because a budget or epoch bound is spent is terminal, not stuck."""
        return next(A.successors(self.cfg, state, unbounded=True), None) is None

    def off_by_config(self) -> dict[str, str]:
        return A.off_by_config(self.cfg)

    @staticmethod
    def describe(label: tuple) -> str:
        return A.describe(label)
