"""A broker's replica in a State, by broker id: what tests and scenario files read and set.

The broker side's rules (fetch, the HWM rule, the leader's proposals, crashes and restarts)
live once, in specs/kernel/data.py and mechanics.py, which every engine runs.
"""
from __future__ import annotations

from specs.config import Config
from specs.state import Replica, State


def replica_of(cfg: Config, s: State, b: int) -> Replica:
    return s.replicas[cfg.brokers.index(b)]


def set_replica(cfg: Config, s: State, b: int, r: Replica) -> State:
    i = cfg.brokers.index(b)
    return s._replace(replicas=s.replicas[:i] + (r,) + s.replicas[i + 1:])
