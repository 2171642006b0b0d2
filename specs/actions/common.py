"""What the kernel's controller table reads the algebra through: a controller event, memoised."""
from __future__ import annotations

from typing import Callable

from specs import controller as C
from specs.algebra import CONCRETE
from specs.config import Config
from specs.state import Controller


def event(cfg: Config, fn: Callable[..., C.Outcome], ctrl: Controller, *args, **kw) -> C.Outcome:
    """A controller event on the model's values, memoised per config: events read only the
    controller's state, of which a run has few distinct values (about 1,300 in the default
    check's 238,000 states)."""
    key = (fn, ctrl, args, tuple(kw.items()))
    memo = cfg.memo
    out = memo.get(key)
    if out is None:
        out = memo[key] = fn(CONCRETE, cfg.rules, ctrl, *args, **kw)
    return out
