"""Controller events (Kafka's ReplicationControlManager for one partition).

Each event is a pure function Controller -> Outcome. They act on the
controller's view only and are not gated by broker-side state; the action
table in specs/actions.py decides when the brokers make them happen.
"""
from __future__ import annotations

from typing import Mapping, NamedTuple, Optional

from specs.config import Config
from specs.pipeline import DESIGNATED, ONLINE, PREFERRED, UNCLEAN, build, effective_min_isr
from specs.state import (NO_EPOCH, NO_LEADER, RECOVERED, RECOVERING, AlterPartitionRequest,
                         Controller, sorted_tuple)

# Kafka error names, as replies to AlterPartition and ElectLeaders.
STALE_BROKER_EPOCH = "STALE_BROKER_EPOCH"
NOT_CONTROLLER = "NOT_CONTROLLER"
FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"
INVALID_REQUEST = "INVALID_REQUEST"
INVALID_UPDATE_VERSION = "INVALID_UPDATE_VERSION"
INELIGIBLE_REPLICA = "INELIGIBLE_REPLICA"
NEW_LEADER_ELECTED = "NEW_LEADER_ELECTED"
ELECTION_NOT_NEEDED = "ELECTION_NOT_NEEDED"
PREFERRED_LEADER_NOT_AVAILABLE = "PREFERRED_LEADER_NOT_AVAILABLE"
ELIGIBLE_LEADERS_NOT_AVAILABLE = "ELIGIBLE_LEADERS_NOT_AVAILABLE"


class Outcome(NamedTuple):
    ctrl: Controller
    error: Optional[str] = None
    unclean_election: bool = False
    unclean_shutdown: bool = False   # a registration the controller judged unclean


def _change(cfg: Config, ctrl: Controller, target_isr, **kw) -> Outcome:
    change = build(cfg, ctrl, target_isr, **kw)
    return Outcome(ctrl._replace(partition=change.partition), None, change.unclean_election)


def _remove_from_isr(cfg: Config, ctrl: Controller, b: int, prefer: Optional[int] = None) -> Outcome:
    p = ctrl.partition
    if b not in p.isr:
        return Outcome(ctrl)
    return _change(cfg, ctrl, [r for r in p.isr if r != b], prefer=prefer)


def fence(cfg: Config, ctrl: Controller, b: int, prefer: Optional[int] = None) -> Outcome:
    """Session timeout or shutdown-now: b leaves every ISR; the pipeline may move it to ELR."""
    if b not in ctrl.registered or b in ctrl.fenced:
        return Outcome(ctrl)
    return _remove_from_isr(cfg, ctrl._replace(fenced=sorted_tuple(ctrl.fenced + (b,))), b, prefer)


def unfence(cfg: Config, ctrl: Controller, b: int, prefer: Optional[int] = None) -> Outcome:
    """A heartbeat unfences b; leaderless partitions re-run the election. The ISR is not changed."""
    if b not in ctrl.fenced:
        return Outcome(ctrl)
    ctrl = ctrl._replace(fenced=tuple(x for x in ctrl.fenced if x != b))
    p = ctrl.partition
    if cfg.mutant == "unfence-adds-to-isr" and b in p.replicas and b not in p.isr:
        return _change(cfg, ctrl, p.isr + (b,), prefer=prefer)
    if p.leader != NO_LEADER:
        return Outcome(ctrl)
    return _change(cfg, ctrl, p.isr, prefer=prefer)


def controlled_shutdown(cfg: Config, ctrl: Controller, b: int, prefer: Optional[int] = None) -> Outcome:
    """b stays unfenced but is no longer an acceptable leader nor eligible for any ISR."""
    if b not in ctrl.registered or b in ctrl.shutting_down:
        return Outcome(ctrl)
    return _remove_from_isr(cfg, ctrl._replace(shutting_down=sorted_tuple(ctrl.shutting_down + (b,))), b, prefer)


def register(cfg: Config, ctrl: Controller, b: int, previous_broker_epoch: int,
             new_broker_epoch: int, clean: Optional[bool] = None, prefer: Optional[int] = None) -> Outcome:
    """A new incarnation of b registers, fenced. Clean iff its clean-shutdown file holds the
    epoch the controller has registered; an unclean one loses its ISR and ELR places."""
    if clean is None:
        clean = previous_broker_epoch != NO_EPOCH and previous_broker_epoch == ctrl.broker_epoch(b)
    if cfg.mutant == "unclean-registration-treated-clean":
        clean = True
    if b in ctrl.registered:
        i = ctrl.registered.index(b)
        epochs = ctrl.broker_epochs[:i] + (new_broker_epoch,) + ctrl.broker_epochs[i + 1:]
        registered = ctrl.registered
    else:
        registered = sorted_tuple(ctrl.registered + (b,))
        i = registered.index(b)
        epochs = ctrl.broker_epochs[:i] + (new_broker_epoch,) + ctrl.broker_epochs[i:]
    ctrl = ctrl._replace(registered=registered, broker_epochs=epochs,
                         fenced=sorted_tuple(ctrl.fenced + (b,)),
                         shutting_down=tuple(x for x in ctrl.shutting_down if x != b))
    p = ctrl.partition
    if clean or not cfg.flags.elr:
        out = _remove_from_isr(cfg, ctrl, b, prefer)
    elif b in p.isr or b in p.elr:
        target = p.isr if cfg.mutant == "register-keeps-isr" else [r for r in p.isr if r != b]
        out = _change(cfg, ctrl, target, unclean_shutdown=frozenset((b,)), prefer=prefer)
    else:
        out = Outcome(ctrl)
    return out._replace(unclean_shutdown=not clean)


def validate_alter_partition(cfg: Config, ctrl: Controller, req: AlterPartitionRequest) -> Optional[str]:
    """AlterPartition checks in the controller's order; the first that fails names the error."""
    p = ctrl.partition
    if ctrl.broker_epoch(req.broker) != req.broker_epoch:
        return STALE_BROKER_EPOCH
    if req.leader_epoch > p.leader_epoch or req.partition_epoch > p.partition_epoch:
        return NOT_CONTROLLER
    if req.leader_epoch < p.leader_epoch:
        return FENCED_LEADER_EPOCH
    if req.broker != p.leader:
        return INVALID_REQUEST
    if req.partition_epoch < p.partition_epoch:
        return INVALID_UPDATE_VERSION
    if (any(r not in p.replicas for r in req.isr) or len(set(req.isr)) != len(req.isr)
            or p.leader not in req.isr):
        return INVALID_REQUEST
    if req.leader_recovery_state == RECOVERING and (len(req.isr) > 1 or p.leader_recovery_state == RECOVERED):
        return INVALID_REQUEST
    check_epochs = cfg.flags.broker_epoch_check and cfg.mutant != "no-broker-epoch-check"
    for member, epoch in zip(req.isr, req.member_epochs):
        if not ctrl.acceptable_leader(member):
            return INELIGIBLE_REPLICA
        if check_epochs and epoch != NO_EPOCH and epoch != ctrl.broker_epoch(member):
            return INELIGIBLE_REPLICA
    return None


def alter_partition(cfg: Config, ctrl: Controller, req: AlterPartitionRequest,
                    prefer: Optional[int] = None) -> Outcome:
    error = validate_alter_partition(cfg, ctrl, req)
    if error is not None:
        return Outcome(ctrl, error)
    out = _change(cfg, ctrl, req.isr, target_recovery=req.leader_recovery_state, prefer=prefer)
    if out.ctrl.partition.leader != ctrl.partition.leader:
        return out._replace(error=NEW_LEADER_ELECTED)
    return out


def elect(cfg: Config, ctrl: Controller, kind: str, leader: Optional[int] = None,
          prefer: Optional[int] = None) -> Outcome:
    """Admin elections (ElectLeaders) and the unclean-recovery tool's designated election."""
    p = ctrl.partition
    if kind == PREFERRED:
        if p.leader == p.replicas[0]:
            return Outcome(ctrl, ELECTION_NOT_NEEDED)
        out = _change(cfg, ctrl, p.isr, election=PREFERRED)
        if out.ctrl.partition == p:
            return Outcome(ctrl, PREFERRED_LEADER_NOT_AVAILABLE)
        return out
    if p.leader != NO_LEADER:
        return Outcome(ctrl, ELECTION_NOT_NEEDED)
    if kind == UNCLEAN:
        out = _change(cfg, ctrl, p.isr, election=UNCLEAN, prefer=prefer)
    elif kind == DESIGNATED:
        if leader not in p.replicas or not ctrl.acceptable_leader(leader):
            return Outcome(ctrl, ELIGIBLE_LEADERS_NOT_AVAILABLE)
        out = _change(cfg, ctrl, p.isr, election=DESIGNATED, designated=leader)
    else:
        raise ValueError(f"unknown election type {kind!r}")
    if out.ctrl.partition == p:     # Kafka: the error depends on whether a record was written
        return Outcome(ctrl, ELIGIBLE_LEADERS_NOT_AVAILABLE)
    return out


def periodic_unclean_election(cfg: Config, ctrl: Controller, prefer: Optional[int] = None) -> Outcome:
    """The controller's periodic task: unclean elections on leaderless partitions of topics
    with unclean.leader.election.enable."""
    p = ctrl.partition
    if not ctrl.unclean_leader_election or p.leader != NO_LEADER:
        return Outcome(ctrl)
    return _change(cfg, ctrl, p.isr, election=UNCLEAN, prefer=prefer)


def set_min_isr(cfg: Config, ctrl: Controller, value: int) -> Outcome:
    """Kafka clears ELR and last_known_elr on any min.insync.replicas change; the KIP only
    when the new min ISR <= |ISR|."""
    ctrl = ctrl._replace(min_isr=value)
    p = ctrl.partition
    if not (p.elr or p.last_known_elr):
        return Outcome(ctrl)
    if not cfg.flags.min_isr_change_always_clears_elr and effective_min_isr(value, p.replicas) > len(p.isr):
        return Outcome(ctrl)
    p = p._replace(elr=(), last_known_elr=(), partition_epoch=p.partition_epoch + 1)
    return Outcome(ctrl._replace(partition=p))


def set_unclean(cfg: Config, ctrl: Controller, value: bool) -> Outcome:
    return Outcome(ctrl._replace(unclean_leader_election=value))


def reassign(cfg: Config, ctrl: Controller, target: tuple[int, ...]) -> Outcome:
    """AlterPartitionReassignments: replicas become target + removing until every adding
    replica is in the ISR; the pipeline completes it. Kafka runs the builder even for an
    unchanged target, so a stale ELR or an invalid leader is rewritten."""
    p = ctrl.partition
    original = p.replicas      # the full current list, including an ongoing reassignment's
    target = tuple(target)
    adding = tuple(sorted(r for r in target if r not in original))
    removing = tuple(sorted(r for r in original if r not in target))
    merged = target + removing
    return _change(cfg, ctrl, p.isr, target_replicas=merged, adding=adding, removing=removing)


def unclean_recovery(cfg: Config, ctrl: Controller, strategy: str,
                     log_info: Mapping[int, tuple[int, int]]) -> Outcome:
    """KIP-966 unclean recovery round. `log_info` maps each replica that answered
    GetReplicaLogInfo to (last written leader epoch, log end offset)."""
    p = ctrl.partition
    if p.leader != NO_LEADER:
        return Outcome(ctrl, ELECTION_NOT_NEEDED)
    if p.isr and any(ctrl.acceptable_leader(b) for b in p.isr):
        return Outcome(ctrl, ELIGIBLE_LEADERS_NOT_AVAILABLE)
    live_elr = [b for b in p.elr if ctrl.acceptable_leader(b)]
    if live_elr or strategy == "none":
        return Outcome(ctrl, ELIGIBLE_LEADERS_NOT_AVAILABLE)
    if strategy == "balanced":
        if p.elr or p.isr:
            return Outcome(ctrl, ELIGIBLE_LEADERS_NOT_AVAILABLE)
        waiting = p.last_known_elr if cfg.flags.use_last_known_leader else p.last_known_elr or (
            (p.last_known_leader,) if p.last_known_leader != NO_LEADER else ())
        if any(b not in log_info for b in waiting):
            return Outcome(ctrl, ELIGIBLE_LEADERS_NOT_AVAILABLE)
    answers = [(b, log_info[b]) for b in p.replicas if b in log_info and ctrl.acceptable_leader(b)]
    if not answers:
        return Outcome(ctrl, ELIGIBLE_LEADERS_NOT_AVAILABLE)
    best = max(answers, key=lambda a: (a[1][0], a[1][1], -p.replicas.index(a[0])))[0]
    return _change(cfg, ctrl, p.isr, election=DESIGNATED, designated=best)
