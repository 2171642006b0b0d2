"""Symmetry over broker ids: renaming replicas maps runs to runs, so a checker may keep
one state per orbit.

That is sound only if the transition relation does not look at which id a broker
has. Kafka's elections take the first valid candidate in replica order, so there
every replica plays a different role and the group is trivial; with
`any_candidate_elections` (an election may pick any valid candidate, the ISR is a
set) the replicas are interchangeable. Preferred elections, reassignments and the
unclean-recovery tie-break read the replica order (their declarations say so), so their
bounds must be 0 (the periodic preferred election's rule off).

Broker epochs are `100 + id + 1000 * generation` (specs.actions.common.next_epoch), so
renaming b to c maps an epoch e of b to e - b + c.
"""
from __future__ import annotations

from itertools import permutations
from math import factorial
from typing import Callable, Mapping, Optional

from specs.config import Config
from specs.state import NO_EPOCH, NO_LEADER, Controller, State


def applicability(cfg: Config) -> Optional[str]:
    """None when symmetry reduction is sound for this config, else why not."""
    if len(cfg.replicas) < 2:
        return "one replica: nothing to permute"
    if not cfg.rules.any_candidate_elections:
        return ("Kafka elects the first valid replica in replica order, so no renaming of brokers "
                "maps runs to runs (flag any_candidate_elections enables symmetry)")
    if cfg.bounds.metadata_lag:
        return "bound metadata_lag > 0: the renaming does not move a leader's held metadata"
    from specs.actions import ACTIONS
    for action in ACTIONS:
        if action.reads_replica_order and action.switch and getattr(cfg.rules, action.switch):
            return f"flag {action.switch}: action {action.name} reads the replica order"
        if action.reads_replica_order and action.budget and getattr(cfg.bounds, action.fixed_budget):
            return f"bound {action.fixed_budget} > 0: action {action.name} reads the replica order"
    return None


def group_size(cfg: Config) -> int:
    return factorial(len(cfg.replicas))


def _epoch(e: int, b: int, c: int) -> int:
    return e if e == NO_EPOCH else e - b + c


def _gen(e: int, b: int) -> int:
    return -1 if e == NO_EPOCH else (e - 100 - b) // 1000


def permute_controller(cfg: Config, ctrl: Controller, to: Mapping[int, int]) -> Controller:
    """The controller value with every broker b renamed to[b] (brokers not in `to` keep their
    id); the compiled search asks it of the table (specs/kernel/tables.py, E_RENAME)."""
    def m(b: int) -> int:
        return to.get(b, b)

    def ids(xs) -> tuple:
        return tuple(sorted(m(x) for x in xs))

    ordered = not cfg.rules.any_candidate_elections
    p = ctrl.partition
    p = p._replace(
        replicas=tuple(m(r) for r in p.replicas) if ordered else ids(p.replicas),
        isr=tuple(m(r) for r in p.isr) if ordered else ids(p.isr),
        elr=ids(p.elr), last_known_elr=tuple(sorted(m(x) if x != NO_LEADER else x for x in p.last_known_elr)),
        cleared_elr=tuple(sorted(m(x) for x in p.cleared_elr)),
        leader=m(p.leader) if p.leader != NO_LEADER else NO_LEADER,
        adding_replicas=ids(p.adding_replicas), removing_replicas=ids(p.removing_replicas),
        last_known_leader=m(p.last_known_leader) if p.last_known_leader != NO_LEADER else NO_LEADER)
    reg = sorted((m(b), _epoch(e, b, m(b))) for b, e in zip(ctrl.registered, ctrl.broker_epochs))
    return ctrl._replace(partition=p, registered=tuple(b for b, _ in reg), broker_epochs=tuple(e for _, e in reg),
                         fenced=ids(ctrl.fenced), shutting_down=ids(ctrl.shutting_down))


def permute(cfg: Config, s: State, to: Mapping[int, int]) -> State:
    """The state with every broker b renamed to[b] (brokers not in `to` keep their id)."""
    def m(b: int) -> int:
        return to.get(b, b)

    ordered = not cfg.rules.any_candidate_elections
    ctrl = permute_controller(cfg, s.ctrl, to)
    brokers = cfg.brokers
    position = {m(b): i for i, b in enumerate(brokers)}
    order = [position[c] for c in brokers]                 # new slot j holds old slot order[j]
    replicas = tuple(r._replace(clean_file=_epoch(r.clean_file, brokers[i], brokers_j))
                     for brokers_j, i in zip(brokers, order) for r in (s.replicas[i],))
    followers = tuple(f._replace(broker_epoch=_epoch(f.broker_epoch, brokers[i], brokers_j))
                      for brokers_j, i in zip(brokers, order) for f in (s.followers[i],))
    req = s.inflight
    if req is not None:
        members = [(m(b), _epoch(e, b, m(b))) for b, e in zip(req.isr, req.member_epochs)]
        if not ordered:
            members.sort()
        req = req._replace(broker=m(req.broker), broker_epoch=_epoch(req.broker_epoch, req.broker, m(req.broker)),
                           isr=tuple(b for b, _ in members), member_epochs=tuple(e for _, e in members))
    return s._replace(ctrl=ctrl, replicas=replicas, followers=followers, inflight=req)


def _signature(cfg: Config, s: State, b: int, i: int) -> tuple:
    """Everything the state says about broker b, without its id."""
    ctrl = s.ctrl
    p = ctrl.partition
    r = s.replicas[i]
    f = s.followers[i]
    epoch = ctrl.broker_epoch(b)
    req = s.inflight
    if req is None:
        sent = ()
    else:
        member = req.member_epochs[req.isr.index(b)] if b in req.isr else None
        sent = (req.broker == b, _gen(req.broker_epoch, b) if req.broker == b else 0,
                member is not None, _gen(member, b) if member is not None else 0)
    return (b in p.isr, b in p.elr, b in p.last_known_elr, p.leader == b, p.last_known_leader == b,
            -2 if epoch is None else _gen(epoch, b), b in ctrl.fenced, b in ctrl.shutting_down,
            r.alive, r.log, r.flushed, r.hwm, _gen(r.clean_file, b), f.leo, _gen(f.broker_epoch, b), sent)


def canonicalizer(cfg: Config) -> Callable[[State], State]:
    """A function mapping each state to one fixed member of its orbit: replicas are renamed
    so that their signatures come in id order. Brokers with equal signatures are
    indistinguishable, so how ties are broken does not change the result."""
    replicas = tuple(sorted(cfg.replicas))
    slots = [(b, cfg.brokers.index(b)) for b in replicas]

    def canonical(s: State) -> State:
        ranked = sorted(slots, key=lambda bi: _signature(cfg, s, bi[0], bi[1]))
        to = {b: c for (b, _), c in zip(ranked, replicas) if b != c}
        return permute(cfg, s, to) if to else s
    return canonical


def orbit(cfg: Config, s: State) -> set[State]:
    """Every renaming of s (tests use it to check canonical forms and equivariance)."""
    replicas = tuple(sorted(cfg.replicas))
    return {permute(cfg, s, dict(zip(replicas, perm))) for perm in permutations(replicas)}
