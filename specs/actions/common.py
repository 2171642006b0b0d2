"""What the action declarations share: running a controller event and installing its outcome."""
from __future__ import annotations

from typing import Callable, Optional

from specs import brokers as B
from specs import controller as C
from specs.algebra import CONCRETE
from specs.config import Config
from specs.state import Controller, State


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


def after_controller(cfg: Config, s: State, out: C.Outcome) -> tuple[State, Optional[str]]:
    """Install a controller outcome. Metadata reaches brokers atomically: a new leader epoch
    resets the leader's follower bookkeeping (it is learned again from Fetch)."""
    old, new = s.ctrl.partition, out.ctrl.partition
    followers = s.followers
    if new.leader_epoch != old.leader_epoch or new.leader != old.leader:
        followers = (B.UNKNOWN,) * len(cfg.brokers)
    hist = s.hist
    if out.unclean_election or out.unclean_shutdown:
        hist = hist._replace(unclean_elections=hist.unclean_elections + out.unclean_election,
                             operator_unclean_elections=hist.operator_unclean_elections + out.operator_unclean,
                             unclean_shutdowns=hist.unclean_shutdowns + out.unclean_shutdown)
    return s._replace(ctrl=out.ctrl, followers=followers, hist=hist), out.error


def alive(cfg: Config, s: State, b: int) -> bool:
    return b in cfg.brokers and B.replica_of(cfg, s, b).alive


def next_epoch(ctrl: Controller, b: int) -> int:
    """A new incarnation's broker epoch: the registered one + 1000 (100 + id at first)."""
    epoch = ctrl.broker_epoch(b)
    return (100 + b if epoch is None else epoch) + 1000
