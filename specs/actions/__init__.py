"""The action table: every protocol step, declared once (specs/actions/declare.py), and the
functions every engine explores it with.

`successors(cfg, state)` is what the exhaustive, random, Hypothesis and Spark engines
explore; replay runs one operation through `step` too, so a counterexample replays to
exactly the state the engine saw. A label is a tuple `(name, *params)`.
"""
from __future__ import annotations

from typing import Iterator, Optional

from specs import brokers as B
# Declaration order is exploration order: the broker side's steps, then the controller's.
from specs.actions import data  # noqa: F401,I001
from specs.actions import control  # noqa: F401,E402
from specs.actions import reach  # noqa: E402
from specs.actions.declare import CONTROLLER, DATA, DECLARATIONS, REQUEST, Action, OpError
from specs.actions.labels import ELECTED, describe, label_to_op, op_label, split_choice
from specs.config import BUDGETS, Config
from specs.rules import Outside
from specs.state import NO_EPOCH, NO_LEADER, RECOVERED, Controller, History, Partition, Replica, State

Label = tuple

OPS: dict[str, Action] = {a.name: a for a in DECLARATIONS}            # what replay can run
ACTIONS: tuple[Action, ...] = tuple(a for a in DECLARATIONS if a.kind != REQUEST)   # what engines explore
ACTIONS_BY_NAME = {a.name: a for a in ACTIONS}
ACTION_NAMES = tuple(a.name for a in ACTIONS)
ELECTING = frozenset(a.name for a in ACTIONS if a.elects)
FAULTS = frozenset(a.name for a in ACTIONS if a.fault)
FAIR = tuple(a.name for a in ACTIONS if a.fair)                  # weakly fair (liveness)
OPERATOR = frozenset(a.name for a in ACTIONS if a.operator)      # only a person triggers them
DISTURBANCES = frozenset(a.name for a in ACTIONS if a.disturbance)
# The budgets the faults charge (fence charges "fences" only when it hits a running broker).
FAULT_BUDGETS = ("fences", "crashes", "lossy_crashes", "clean_shutdowns")
_BUDGET_INDEX = {name: i for i, name in enumerate(BUDGETS)}


def init_state(cfg: Config) -> State:
    """A healthy partition: every replica registered, unfenced, in the ISR; replicas[0] leads."""
    p = Partition(replicas=cfg.replicas, isr=cfg.replicas, elr=(), last_known_elr=(),
                  leader=cfg.replicas[0], leader_epoch=0, partition_epoch=0,
                  leader_recovery_state=RECOVERED)
    ctrl = Controller(partition=p, registered=cfg.brokers,
                      broker_epochs=tuple(100 + b for b in cfg.brokers), fenced=(), shutting_down=(),
                      min_isr=cfg.min_isr, unclean_leader_election=cfg.unclean_leader_election)
    return State(ctrl=ctrl,
                 replicas=tuple(Replica(True, (), 0, 0, NO_EPOCH) for _ in cfg.brokers),
                 followers=(B.UNKNOWN,) * len(cfg.brokers),
                 inflight=None,
                 hist=History(0, (), (), 0, 0, 0, 0, (0,) * len(BUDGETS)))


def init_states(cfg: Config) -> list[State]:
    return [init_state(cfg)]


def step(cfg: Config, s: State, label: Label) -> tuple[State, Optional[str]]:
    """Apply one action by label, charging its budget. No guard is checked here."""
    action = OPS[label[0]]
    params, prefer = split_choice(label)
    if prefer is None:
        new, error = action.effect(cfg, s, *params)
    else:
        new, error = action.effect(cfg, s, *params, prefer=prefer)
    budget = action.budget(cfg, s, params) if callable(action.budget) else action.budget
    if budget is not None:
        h = new.hist
        i = _BUDGET_INDEX[budget]
        used = h.used[:i] + (h.used[i] + 1,) + h.used[i + 1:]
        new = State(new.ctrl, new.replicas, new.followers, new.inflight,
                    History(h.produced, h.acked, h.visible, h.lossy_crashes, h.unclean_shutdowns,
                            h.unclean_elections, h.operator_unclean_elections, used))
    return new, error


def within_bounds(cfg: Config, s: State) -> bool:
    p = s.ctrl.partition
    return p.leader_epoch <= cfg.bounds.max_leader_epoch and p.partition_epoch <= cfg.bounds.max_partition_epoch


def successors(cfg: Config, s: State, unbounded: bool = False) -> Iterator[tuple[Label, State]]:
    """Every enabled action within the bounds, as (label, next state); self-loops left out.
    `unbounded` ignores budgets and epoch bounds: deadlock detection asks whether anything
    at all could still happen."""
    return _steps(cfg, s, _plan(cfg), unbounded)


def action_successors(cfg: Config, s: State, name: str, unbounded: bool = False) -> Iterator[tuple[Label, State]]:
    """The enabled steps of one action (what a Hypothesis rule chooses among)."""
    return _steps(cfg, s, [row for row in _plan(cfg) if row[0].name == name], unbounded)


def _steps(cfg: Config, s: State, plan, unbounded: bool) -> Iterator[tuple[Label, State]]:
    """One flat loop over the actions of `plan`: this is the checker's hot path."""
    used = s.hist.used
    any_choice = cfg.rules.any_candidate_elections
    for action, fixed, limit, charge in plan:
        if fixed is not None and not unbounded and used[fixed] >= limit:
            continue            # the whole action is spent: skip computing its candidates
        for params in action.enabled(cfg, s):
            if charge is not None and not unbounded:
                budget = charge(cfg, s, params)
                if budget is not None and used[_BUDGET_INDEX[budget]] >= getattr(cfg.bounds, budget):
                    continue
            label = (action.name,) + tuple(params)
            new, _ = step(cfg, s, label)
            if _same_but_budgets(new, s):
                continue
            if unbounded or within_bounds(cfg, new):
                yield label, new
            if any_choice and action.elects:
                yield from _other_choices(cfg, s, label, new, unbounded)


def _plan(cfg: Config) -> tuple:
    """Per action: (action, index of its fixed budget or None, that budget's bound, the
    budget function for budgets that depend on the step), computed once per config."""
    plan = cfg.memo.get("successor plan")
    if plan is None:
        rows = []
        for action in ACTIONS:
            name = action.fixed_budget
            if name is not None:
                rows.append((action, _BUDGET_INDEX[name], getattr(cfg.bounds, name), None))
            else:
                rows.append((action, None, 0, action.budget))
        plan = cfg.memo["successor plan"] = tuple(rows)
    return plan


def _other_choices(cfg: Config, s: State, label: Label, first: State, unbounded: bool):
    """Under any_candidate_elections, the runs where the election picked another candidate."""
    old, chosen = s.ctrl.partition.leader, first.ctrl.partition.leader
    if chosen == NO_LEADER or chosen == old:
        return
    for b in cfg.brokers:
        if b == chosen:
            continue
        alt = label + ((ELECTED, b),)
        new, _ = step(cfg, s, alt)
        if new.ctrl.partition.leader == b and (unbounded or within_bounds(cfg, new)):
            yield alt, new


def _same_but_budgets(a: State, b: State) -> bool:
    """A step that changed nothing but its budget use is a self-loop."""
    if a.ctrl != b.ctrl or a.replicas != b.replicas or a.followers != b.followers or a.inflight != b.inflight:
        return False
    x, y = a.hist, b.hist
    return (x.produced == y.produced and x.acked == y.acked and x.visible == y.visible
            and x.lossy_crashes == y.lossy_crashes and x.unclean_shutdowns == y.unclean_shutdowns
            and x.unclean_elections == y.unclean_elections
            and x.operator_unclean_elections == y.operator_unclean_elections)


def off_by_config(cfg: Config) -> dict[str, str]:
    """Actions the config switches off, so coverage can tell "off" from "never reached"."""
    return reach.off_by_config(cfg, ACTIONS)


def enable_hints(cfg: Config) -> dict[str, str]:
    """What would enable an action that is on but no run enabled."""
    return reach.enable_hints(cfg)


def is_enabled(cfg: Config, s: State, label: Label) -> bool:
    """Whether the action's guard holds (budgets and bounds aside): replay checks this for
    data-plane steps, which are model actions rather than free controller operations."""
    action = ACTIONS_BY_NAME[label[0]]
    return tuple(split_choice(label)[0]) in {tuple(p) for p in action.enabled(cfg, s)}


# The elections an operator chose or configured (an admin election, the periodic unclean
# election unclean.leader.election.enable runs, a recovery round): their unclean choice is
# sanctioned. One vocabulary, the actions' names; z3 reads it as their steps (operator_steps).
OPERATOR_ELECTIONS = frozenset({"elect", "periodic_unclean_election", "unclean_recovery"})


def operator_steps() -> tuple[str, ...]:
    """The z3 steps of OPERATOR_ELECTIONS, as the declarations name them."""
    return tuple(n for a in DECLARATIONS if a.name in OPERATOR_ELECTIONS and not isinstance(a.z3, Outside)
                 for n in a.z3)


def symbolic_steps() -> tuple[str, ...]:
    """The z3 steps the declarations name, in declaration order (specs/symbolic/encoding.py
    numbers its steps by this list, then adds its own)."""
    return tuple(dict.fromkeys(n for a in DECLARATIONS if not isinstance(a.z3, Outside) for n in a.z3))


__all__ = ["ACTIONS", "ACTIONS_BY_NAME", "ACTION_NAMES", "CONTROLLER", "DATA", "DECLARATIONS", "ELECTED",
           "ELECTING", "FAULTS", "FAIR", "OPERATOR", "DISTURBANCES", "FAULT_BUDGETS", "OPS", "REQUEST", "Action", "Label", "OpError", "action_successors", "describe",
           "enable_hints", "init_state", "init_states", "is_enabled", "label_to_op", "off_by_config", "op_label",
           "OPERATOR_ELECTIONS", "operator_steps", "split_choice", "step", "successors", "symbolic_steps",
           "within_bounds"]
