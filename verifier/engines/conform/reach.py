"""Which actions a conform config can enable at all, decided by an exhaustive search of the
model's states, not by the walks' luck.

A run whose walks never compared an action failed (exit 1) even where no state of the config
enables it: `--brokers 1` (no follower: no fetch, no ISR change) or five replicas beside two
fences (the periodic unclean election needs a leaderless partition that two fences cannot
make). Exit 1 means a violation, a divergence or a surviving mutant, so such an action is
"not reachable here" and the run passes; one a state of the config does enable, never compared
by the walks, is a run cut short of its claim (exit 3, with what would reach it), and so is
one the search could not decide within its budget.
"""
from __future__ import annotations

from dataclasses import dataclass

BUDGET = 60.0             # seconds of search; a config it cannot finish leaves the question open


@dataclass(frozen=True)
class Reach:
    enabled: frozenset    # the actions some reachable state enables (complete searches only)
    states: int           # the states searched
    complete: bool        # every reachable state was searched
    why: str = ""         # why the search did not decide it

    def unreachable(self, action: str) -> bool:
        return self.complete and action not in self.enabled


def searched(search, model, budget: float = BUDGET) -> Reach:
    """The model's config searched exhaustively by `search` (the kernel engine's run, which the
    command line binds: engines do not import each other), for its actions' enabled counts."""
    from specs.kernel import KernelUnsupported
    from verifier.core.exitcodes import InputError
    from verifier.core.result import COMPLETE
    from verifier.core.settings import Limits, Settings
    try:
        r = search(model, (), Settings(limits=Limits(time_budget=budget)))
    except (InputError, KernelUnsupported) as exc:
        return Reach(frozenset(), 0, False, f"the kernel cannot search this config ({exc})")
    done = r.status == COMPLETE
    return Reach(frozenset(a for a, n in r.enabled.items() if n), r.distinct_states, done,
                 "" if done else f"the search of its states stopped: {r.stop_reason}")


def aims_at(model, action: str) -> list[str]:
    """conform's walk sets that weight `action` or raise its budget (sets.py): what would reach it."""
    from verifier.engines.conform.sets import WALK_SETS
    budget = model.budget_of(action)
    return [name for name, ws in WALK_SETS.items()
            if ws.plan.weights.get(action, 1.0) > 1.0 or (budget is not None and ws.bounds.get(budget, 0) > 0)]
