"""The action table: every protocol step, declared once (specs/actions/declare.py), and the
functions every engine explores it with, all run by the kernel (specs/kernel), which holds
each step's guard and effect.

`successors(cfg, state)` is what the exhaustive, random, Hypothesis and Spark engines
explore; replay runs one operation through `step` too, so a counterexample replays to
exactly the state the engine saw. A label is a tuple `(name, *params)`.
"""
from __future__ import annotations

from typing import Iterator, Optional

# Declaration order is exploration order: the broker side's steps, then the controller's.
from specs.actions import data  # noqa: F401,I001
from specs.actions import control  # noqa: F401,E402
from specs.actions import lag  # noqa: F401,E402
from specs.actions import reach  # noqa: E402
from specs.actions.declare import CONTROLLER, DATA, DECLARATIONS, REQUEST, Action, OpError
from specs.actions.labels import ELECTED, describe, label_to_op, op_label, split_choice
from specs.config import BUDGETS, Config
from specs.rules import Outside
from specs.state import NO_EPOCH, RECOVERED, Controller, FollowerState, History, Partition, Replica, State

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


def on_kernel(cfg: Config, fn):
    """fn(the config's kernel, specs/kernel): every step runs on it."""
    from specs.kernel import on_kernel
    return on_kernel(cfg, fn)


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
                 followers=(FollowerState(-1, NO_EPOCH),) * len(cfg.brokers),
                 inflight=None,
                 hist=History(0, (), (), 0, 0, 0, 0, 0, 0, (0,) * len(BUDGETS)))


def init_states(cfg: Config) -> list[State]:
    return [init_state(cfg)]


def step(cfg: Config, s: State, label: Label) -> tuple[State, Optional[str]]:
    """Apply one action by label, charging its budget: (next state, the error it was refused
    with or None). No guard is checked here. A step runs on the kernel (specs/kernel); a raw
    request only replay sends runs its own effect."""
    action = OPS[label[0]]
    if action.kind == REQUEST:
        params, _ = split_choice(label)
        return action.effect(cfg, s, *params)
    return on_kernel(cfg, lambda k: k.step(s, label))


def successors(cfg: Config, s: State, unbounded: bool = False) -> Iterator[tuple[Label, State]]:
    """Every enabled action within the bounds, as (label, next state); self-loops left out.
    `unbounded` ignores budgets and epoch bounds: deadlock detection asks whether anything
    at all could still happen. The kernel computes them (specs/kernel/successors.py)."""
    return iter(on_kernel(cfg, lambda k: k.successors(s, unbounded)))


def action_successors(cfg: Config, s: State, name: str, unbounded: bool = False) -> Iterator[tuple[Label, State]]:
    """The enabled steps of one action (what a Hypothesis rule chooses among)."""
    return iter(on_kernel(cfg, lambda k: k.successors(s, unbounded, only=name)))


def off_by_config(cfg: Config) -> dict[str, str]:
    """Actions the config switches off, so coverage can tell "off" from "never reached"."""
    return reach.off_by_config(cfg, ACTIONS)


def enable_hints(cfg: Config) -> dict[str, str]:
    """What would enable an action that is on but no run enabled."""
    return reach.enable_hints(cfg)


def is_enabled(cfg: Config, s: State, label: Label) -> bool:
    """Whether the action's guard holds (budgets and bounds aside): replay checks this for
    data-plane steps, which are model actions rather than free controller operations."""
    return tuple(split_choice(label)[0]) in on_kernel(cfg, lambda k: k.enabled(s, label[0]))


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
           "on_kernel"]
