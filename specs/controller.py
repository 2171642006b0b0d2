"""Controller events (Kafka's ReplicationControlManager, for one partition).

Each event is a pure function of the controller's view, written in the algebra `R`
(specs/algebra.py) so that the concrete model and the z3 encoding run the same rules.
Events are not gated by broker-side state; the action declarations (specs/actions/) say
when the brokers make them happen. docs/protocol.md, "Controller events", states them.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

from specs.pipeline import CLEAN, DESIGNATED, ONLINE, PREFERRED, UNCLEAN, acceptable, build, is_acceptable, written_again
from specs.rules import Rules
from specs.state import NO_EPOCH, RECOVERED, RECOVERING

# Kafka's error names, as replies to AlterPartition and ElectLeaders.
ERRORS = ("STALE_BROKER_EPOCH NOT_CONTROLLER FENCED_LEADER_EPOCH INVALID_REQUEST INVALID_UPDATE_VERSION "
          "INELIGIBLE_REPLICA NEW_LEADER_ELECTED ELECTION_NOT_NEEDED PREFERRED_LEADER_NOT_AVAILABLE "
          "ELIGIBLE_LEADERS_NOT_AVAILABLE").split()
(STALE_BROKER_EPOCH, NOT_CONTROLLER, FENCED_LEADER_EPOCH, INVALID_REQUEST, INVALID_UPDATE_VERSION, INELIGIBLE_REPLICA,
 NEW_LEADER_ELECTED, ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE) = ERRORS


class Outcome(NamedTuple):
    ctrl: Any                         # the controller after the event (specs.state.Controller)
    error: Any = None                 # Kafka's error name (None: accepted); in z3, "refused?"
    unclean_election: Any = False
    unclean_shutdown: Any = False     # a registration the controller judged unclean
    operator_unclean: Any = False     # the unclean election is one an operator chose (specs/pipeline.py, Change)


def _change(R, rules: Rules, ctrl, target_isr, **kw) -> Outcome:
    change = build(R, rules, ctrl, target_isr, **kw)
    return Outcome(ctrl._replace(partition=change.partition), None, change.unclean_election,
                   operator_unclean=change.operator_unclean)


def _remove_from_isr(R, rules: Rules, ctrl, b, prefer=None) -> Outcome:
    p = ctrl.partition
    return R.branch(R.member(b, p.isr), lambda: _change(R, rules, ctrl, R.minus(p.isr, R.single(b)), prefer=prefer),
                    lambda: Outcome(ctrl))


def fence(R, rules: Rules, ctrl, b, prefer=None) -> Outcome:
    """Session timeout or shutdown-now: b leaves the ISR; the pipeline may move it to ELR."""
    def fenced():
        return _remove_from_isr(R, rules, ctrl._replace(fenced=R.as_set(R.union(ctrl.fenced, R.single(b)))), b, prefer)
    return R.branch(R.all(R.member(b, ctrl.registered), R.not_(R.member(b, ctrl.fenced))), fenced,
                    lambda: Outcome(ctrl))


def unfence(R, rules: Rules, ctrl, b, prefer=None) -> Outcome:
    """A heartbeat unfences b; a leaderless partition re-runs its election. The ISR is not
    changed (rules.unfence_adds_to_isr: it is)."""
    def unfenced():
        c = ctrl._replace(fenced=R.minus(ctrl.fenced, R.single(b)))
        p = c.partition

        def elect_if_leaderless():
            if not rules.unfence_elects:
                return Outcome(c)
            return R.branch(R.is_none(p.leader), lambda: _change(R, rules, c, p.isr, prefer=prefer),
                            lambda: Outcome(c))
        if not rules.unfence_adds_to_isr:
            return elect_if_leaderless()
        outside = R.all(R.member(b, p.replicas), R.not_(R.member(b, p.isr)))
        return R.branch(outside, lambda: _change(R, rules, c, R.union(p.isr, R.single(b)), prefer=prefer),
                        elect_if_leaderless)
    return R.branch(R.member(b, ctrl.fenced), unfenced, lambda: Outcome(ctrl))


def controlled_shutdown(R, rules: Rules, ctrl, b, prefer=None, elsewhere: bool = False) -> Outcome:
    """An unfenced b asks to shut down (BrokerHeartbeatManager.calculateNextBrokerState): while
    it leads a partition it enters controlled shutdown, stays unfenced but is no longer an
    acceptable leader nor eligible for any ISR; a broker that leads nothing is told to shut
    down at once (SHUTDOWN_NOW), which fences it. `elsewhere`: b leads another partition of
    the broker's (specs/partitions.py), so this one's record is controlled shutdown's
    (handleBrokerInControlledShutdown walks every partition whose ISR holds b) whoever leads
    it; one partition alone is always False."""
    def shutting_down():
        c = ctrl._replace(shutting_down=R.as_set(R.union(ctrl.shutting_down, R.single(b))))
        return _remove_from_isr(R, rules, c, b, prefer)

    def asked():
        if elsewhere:
            return shutting_down()
        return R.branch(R.eq(ctrl.partition.leader, b), shutting_down, lambda: fence(R, rules, ctrl, b, prefer))
    return R.branch(R.all(R.member(b, ctrl.registered), R.not_(R.member(b, ctrl.shutting_down))),
                    asked, lambda: Outcome(ctrl))


def register(R, rules: Rules, ctrl, b, previous_broker_epoch, new_broker_epoch, clean=None,
             prefer=None) -> Outcome:
    """A new incarnation of b registers, fenced. Clean iff its clean-shutdown file holds the
    broker epoch the controller has registered (KIP-966); an unclean one leaves ISR and ELR
    and does not join ELR."""
    if clean is None:
        clean = R.all(R.ne(previous_broker_epoch, NO_EPOCH),
                      R.eq(previous_broker_epoch, R.broker_epoch(ctrl, b)))
    if not rules.registration_checks_clean_shutdown:
        clean = R.true
    ctrl = R.register(ctrl, b, new_broker_epoch)
    ctrl = ctrl._replace(fenced=R.as_set(R.union(ctrl.fenced, R.single(b))),
                         shutting_down=R.minus(ctrl.shutting_down, R.single(b)))
    p = ctrl.partition
    if not rules.registration_judges_shutdown:     # variant (Kafka 3.9): not judged; every new
        if not rules.elr:                          # incarnation goes to the unclean-shutdown handler,
            return Outcome(ctrl)                   # which acts only at metadata 4.0-IV0 (ELR on):
        clean = R.false                            # ClusterControlManager.registerBroker, 3.9

    def unclean_registration():
        # ReplicationControlManager.handleBrokerShutdown: one pass over the partitions whose ISR
        # holds b, one over the entries b has in the ELR index (its ELR membership and the
        # entries ClearElrRecords left, `cleared_elr`), each computing its record from the state
        # before them all, so a partition listed k times gets the same record k times (z3 keeps
        # no epochs, so there only whether a pass runs matters).
        target = R.minus(p.isr, R.single(b)) if rules.unclean_registration_leaves_isr else p.isr
        in_isr = R.member(b, p.isr)
        in_index = R.member(b, R.union(p.elr, p.cleared_elr))

        def passes():
            out = _change(R, rules, ctrl, target, unclean_shutdown=R.single(b), prefer=prefer)
            if R.epochs:
                again = in_isr + (b in p.elr) + p.cleared_elr.count(b) - 1
                out = out._replace(ctrl=out.ctrl._replace(partition=written_again(p, out.ctrl.partition, again)))
            return out
        return R.branch(R.any(in_isr, in_index), passes, lambda: Outcome(ctrl))
    if rules.elr:
        out = R.branch(clean, lambda: _remove_from_isr(R, rules, ctrl, b, prefer), unclean_registration)
    else:
        out = _remove_from_isr(R, rules, ctrl, b, prefer)
    return out._replace(unclean_shutdown=R.not_(clean))


def alter_partition_checks(R, rules: Rules, ctrl, req) -> list:
    """AlterPartition's checks in the controller's order, as (failed?, error) pairs: the first
    that fails names the error (docs/protocol.md, "AlterPartition")."""
    p = ctrl.partition
    stale = R.false
    if rules.broker_epoch_check and rules.controller_checks_member_epochs:
        stale = R.stale_members(ctrl, req)
    recovering_request = R.eq(req.leader_recovery_state, RECOVERING)
    return [
        (R.ne(R.broker_epoch(ctrl, req.broker), req.broker_epoch), STALE_BROKER_EPOCH),
        (R.any(R.gt(req.leader_epoch, p.leader_epoch), R.gt(req.partition_epoch, p.partition_epoch)),
         NOT_CONTROLLER),
        (R.gt(p.leader_epoch, req.leader_epoch), FENCED_LEADER_EPOCH),
        (R.ne(req.broker, p.leader), INVALID_REQUEST),
        (R.gt(p.partition_epoch, req.partition_epoch), INVALID_UPDATE_VERSION),
        (R.any(R.not_(R.subset(req.isr, p.replicas)), R.has_duplicates(req.isr),
               R.not_(R.member(p.leader, req.isr))), INVALID_REQUEST),
        (R.all(recovering_request, R.any(R.gt(R.size(req.isr), 1), R.eq(p.leader_recovery_state, RECOVERED))),
         INVALID_REQUEST),
        (R.any(R.not_(R.subset(req.isr, acceptable(R, ctrl, req.isr))), stale), INELIGIBLE_REPLICA),
    ]


def alter_partition(R, rules: Rules, ctrl, req, prefer=None) -> Outcome:
    error = R.first_error(alter_partition_checks(R, rules, ctrl, req))

    def accept():
        out = _change(R, rules, ctrl, req.isr, target_recovery=req.leader_recovery_state, prefer=prefer)
        moved = R.ne(out.ctrl.partition.leader, ctrl.partition.leader)
        return out._replace(error=R.ite(moved, R.notice(NEW_LEADER_ELECTED), None))
    return R.branch(R.accepted(error), accept, lambda: Outcome(ctrl, error))


def elect(R, rules: Rules, ctrl, kind: str, leader=None, prefer=None) -> Outcome:
    """Admin elections (ElectLeaders) and the unclean-recovery tool's designated election.
    Kafka's error depends on whether a record was written."""
    p = ctrl.partition

    def refused(name):
        return lambda: Outcome(ctrl, R.refusal(name))

    def unless_unchanged(out: Outcome, name: str) -> Outcome:
        return R.branch(R.eq(out.ctrl.partition, p), refused(name), lambda: out)

    if kind == PREFERRED:
        return R.branch(R.eq(p.leader, R.first(p.replicas, p.replicas)), refused(ELECTION_NOT_NEEDED),
                        lambda: unless_unchanged(_change(R, rules, ctrl, p.isr, election=PREFERRED),
                                                 PREFERRED_LEADER_NOT_AVAILABLE))
    if kind == UNCLEAN:
        def leaderless():
            return unless_unchanged(_change(R, rules, ctrl, p.isr, election=UNCLEAN, prefer=prefer),
                                    ELIGIBLE_LEADERS_NOT_AVAILABLE)
    elif kind == DESIGNATED:
        if not rules.designated_elections:    # variant: only the unclean-recovery tool's proposal has it
            return Outcome(ctrl, R.refusal(INVALID_REQUEST))

        def leaderless():
            ok = R.all(R.member(leader, p.replicas), is_acceptable(R, ctrl, leader))
            return R.branch(ok, lambda: unless_unchanged(_change(R, rules, ctrl, p.isr, election=DESIGNATED,
                                                                 designated=leader),
                                                         ELIGIBLE_LEADERS_NOT_AVAILABLE),
                            refused(ELIGIBLE_LEADERS_NOT_AVAILABLE))
    else:
        raise ValueError(f"unknown election type {kind!r}")
    return R.branch(R.is_none(p.leader), leaderless, refused(ELECTION_NOT_NEEDED))


def periodic_unclean_election(R, rules: Rules, ctrl, prefer=None) -> Outcome:
    """The controller's periodic task: unclean elections on leaderless partitions of topics
    with unclean.leader.election.enable."""
    p = ctrl.partition
    if rules.unclean_recovery_strategy is not None:   # variant: recovery rounds replace it (KIP-966)
        return Outcome(ctrl)
    return R.branch(R.all(ctrl.unclean_leader_election, R.is_none(p.leader)),
                    lambda: _change(R, rules, ctrl, p.isr, election=UNCLEAN, prefer=prefer),
                    lambda: Outcome(ctrl))


def periodic_preferred_election(R, rules: Rules, ctrl, prefer=None) -> Outcome:
    """The controller's periodic preferred-leader election (auto leader rebalance,
    maybeBalancePartitionLeaders): a partition whose leader is not its first replica (Kafka's
    imbalanced partitions, a leaderless one too) takes the PREFERRED election ElectLeaders runs;
    the task answers nothing, and a partition the election leaves as it was writes nothing.
    `prefer` is taken and left, as `elect` leaves it for a preferred election: the preferred
    replica is no choice among candidates."""
    p = ctrl.partition
    if not rules.auto_leader_rebalance:        # variant: the model leaves the task out (the default)
        return Outcome(ctrl)
    return R.branch(R.eq(p.leader, R.first(p.replicas, p.replicas)), lambda: Outcome(ctrl),
                    lambda: _change(R, rules, ctrl, p.isr, election=PREFERRED))


def set_min_isr(R, rules: Rules, ctrl, value) -> Outcome:
    """Kafka clears ELR and last_known_elr on any min.insync.replicas change of the topic; the
    KIP text only when the new min ISR <= |ISR|. Setting the value the topic already has writes
    no ConfigRecord, so nothing is cleared (ConfigurationControlManager writes a topic config
    record only when its value changes)."""
    same = R.eq(value, ctrl.min_isr)
    ctrl = ctrl._replace(min_isr=value)
    p = ctrl.partition
    clears = R.all(R.not_(same), R.not_(R.all(R.is_empty(p.elr), R.is_empty(p.last_known_elr))))
    if not rules.min_isr_change_always_clears_elr:
        clears = R.all(clears, R.not_(R.gt(R.cap_min_isr(value, p.replicas), R.size(p.isr))))
    # ClearElrRecord: the ELR index keeps the entries of the members it removes (cleared_elr).
    cleared = p._replace(elr=R.empty, last_known_elr=R.empty, cleared_elr=R.add_entries(p.cleared_elr, p.elr),
                         partition_epoch=R.next_epoch(p.partition_epoch))
    return R.branch(clears, lambda: Outcome(ctrl._replace(partition=cleared)), lambda: Outcome(ctrl))


def set_unclean(R, rules: Rules, ctrl, value) -> Outcome:
    return Outcome(ctrl._replace(unclean_leader_election=value))


def reassign(R, rules: Rules, ctrl, target: tuple) -> Outcome:
    """AlterPartitionReassignments: replicas become target + removing until every adding
    replica is in the ISR; the pipeline completes it. Kafka runs the builder even for an
    unchanged target, so a stale ELR or an invalid leader is rewritten. Concrete only: the z3
    encoding has no reassignment."""
    p = ctrl.partition
    adding = R.as_set(R.minus(target, p.replicas))
    removing = R.as_set(R.minus(p.replicas, target))
    # changePartitionReassignment never sets Election.UNCLEAN, whatever the topic config.
    return _change(R, rules, ctrl, p.isr, target_replicas=R.union(tuple(target), removing), adding=adding,
                   removing=removing, election=CLEAN)


def unclean_recovery(R, rules: Rules, ctrl, strategy: str, answers) -> Outcome:
    """A KIP-966 unclean recovery round. `answers` are the GetReplicaLogInfo replies in the
    algebra's terms: `R.answered(answers, replicas)` is who replied, `R.most_data(...)` the
    replica with the highest last leader epoch, then the longest log (concretely a mapping
    broker -> (last leader epoch, log end offset); in z3 a chosen replica that the encoding
    constrains, since z3 keeps no logs). A round that must wait is refused."""
    p = ctrl.partition
    answered = R.answered(answers, p.replicas)
    candidates = acceptable(R, ctrl, answered)
    waiting = p.last_known_elr
    if not rules.use_last_known_leader:       # the KIP text also waits for the last known leader
        waiting = R.ite(R.is_empty(waiting), R.ite(R.is_none(p.last_known_leader), R.empty,
                                                   R.single(p.last_known_leader)), waiting)
    balanced_waits = R.any(R.not_(R.is_empty(p.elr)), R.not_(R.is_empty(p.isr)),
                           R.not_(R.subset(waiting, answered)))
    error = R.first_error([
        (R.not_(R.is_none(p.leader)), ELECTION_NOT_NEEDED),
        (R.not_(R.is_empty(acceptable(R, ctrl, p.isr))), ELIGIBLE_LEADERS_NOT_AVAILABLE),
        (R.not_(R.is_empty(acceptable(R, ctrl, p.elr))), ELIGIBLE_LEADERS_NOT_AVAILABLE),
        (strategy == "none", ELIGIBLE_LEADERS_NOT_AVAILABLE),
        (R.all(strategy == "balanced", balanced_waits), ELIGIBLE_LEADERS_NOT_AVAILABLE),
        (R.is_empty(candidates), ELIGIBLE_LEADERS_NOT_AVAILABLE),
        (not rules.recovery_round_elects, ELIGIBLE_LEADERS_NOT_AVAILABLE),   # variant: the round never elects
    ])
    # Variant: recovery_prefers_most_data=false elects the least data (lowest epoch, shortest log).
    best = R.most_data(answers, candidates, p.replicas, rules.recovery_prefers_most_data)
    return R.branch(R.accepted(error), lambda: _change(R, rules, ctrl, p.isr, election=DESIGNATED, designated=best),
                    lambda: Outcome(ctrl, error))


__all__ = ["Outcome", "fence", "unfence", "controlled_shutdown", "register", "alter_partition",
           "alter_partition_checks", "elect", "periodic_unclean_election", "periodic_preferred_election",
           "set_min_isr", "set_unclean", "reassign", "unclean_recovery", "ONLINE", "PREFERRED", "UNCLEAN",
           "DESIGNATED", "Optional"]
