"""The model's steps as the requests Kafka's controller receives (the conform engine's input).

Kafka's controller sees only requests and its own periodic tasks. Each model step is projected
onto the one controller request it causes, or onto none ("noop": the step must then leave the
controller's state as it was):
- a broker process stopping (crash, lossy crash), fetch, produce, the HWM, and the leader
  deciding to shrink or expand the ISR are invisible to the controller until a request follows;
- `deliver_alter_partition` is the AlterPartition (version 3: each member with the broker epoch
  its Fetch showed) that the leader's shrink, expand or recovery step put in flight;
- `fence` is a session that lapses: the broker stopped heartbeating, or is cut off from the
  controller, and the stale-broker task fences it;
- `unfence`, `controlled_shutdown` and `clean_shutdown` are heartbeats (wantShutDown for the
  last two: the controller grants a controlled shutdown while the broker leads, then
  SHUTDOWN_NOW);
- `restart` is a BrokerRegistration (version 3) of a new incarnation carrying the previous
  broker epoch read from its clean-shutdown file (-1 when there is none), after the old
  incarnation's session lapsed;
- admin elections, config changes, reassignments and the periodic unclean and preferred
  elections are the requests and tasks of the same names.

Broker epochs are the one value the model abstracts: Kafka's are metadata-log offsets, the
model's 100 + id, then + 1000 per incarnation. Only their equality matters to any rule, so the
oracle keeps a bijection between the two, fixed at each registration; requests carry model
epochs and the oracle translates them (an epoch no registration produced becomes a value no
registration will), and it reports each broker's Kafka epoch translated back. docs/conform.md
states this mapping.
"""
from __future__ import annotations

from typing import Any, Optional

from specs.catalogue import preset_rules
from specs.config import Config
from specs.rules import changed
from specs.state import NO_EPOCH, RECOVERING, State

# Rule fields a Kafka cluster can be set up to run either way: ELR is a feature level (in 3.9,
# the unstable metadata version 4.0-IV0 with the controller's ELR setting, as 3.9's own tests run
# it: no 3.9 preset turns it on), and the leader epoch bump on an ISR shrink is metadata versions
# before 3.6 (KAFKA-15021), the periodic preferred election a broker config (on by default; the
# model leaves it out unless told).
CLUSTER_SETTINGS = {"elr": "eligible.leader.replicas.version",
                    "leader_epoch_bump_on_isr_shrink": "metadata.version 3.5-IV2",
                    "auto_leader_rebalance": "auto.leader.rebalance.enable"}

# Model steps no release has, with the reason (said to the user when a scenario uses one).
NOT_IN_KAFKA = {
    "unclean_recovery": "KIP-966's unclean recovery rounds shipped in no Kafka release",
    ("elect", "designated"): "the designated leader election (the unclean-recovery tool's) is in no Kafka release",
}


def outside_release(cfg: Config, preset: str) -> Optional[str]:
    """Why `cfg` is not a configuration of the release whose preset is `preset`, or None: every
    rule must be the release's own, but for what a cluster can be set to (CLUSTER_SETTINGS)."""
    own = preset_rules(preset)
    differ = {k: v for k, v in changed(cfg.rules, own).items() if k not in CLUSTER_SETTINGS}
    if differ:
        return "it sets " + ", ".join(f"{k}={str(v).lower()}" for k, v in differ.items()) + \
            f", which {preset} does not have"
    if cfg.rules.elr and cfg.rules.leader_epoch_bump_on_isr_shrink:
        return "ELR needs metadata 4.0-IV1, which no longer bumps the leader epoch on an ISR shrink"
    return None


def impossible_start(cfg: Config, s: State) -> Optional[str]:
    """Why the oracle cannot start a Kafka cluster of this config in state `s`, or None: a
    partition record with an ELR or a last known ELR is written only with ELR on (a release
    without ELR would read it through code paths it never runs), and the stale entries of the
    controller's ELR index come only from ClearElrRecords, which a snapshot does not hold."""
    p = s.ctrl.partition
    if not cfg.rules.elr and (p.elr or p.last_known_elr):
        return "it starts with an ELR or a last known ELR, which a cluster without ELR never writes"
    if p.cleared_elr:
        return "it starts with ELR index entries a ClearElrRecord left, which the oracle cannot set up"
    return None


def unsupported(label: tuple) -> Optional[str]:
    """Why no Kafka release can run this step, or None."""
    return NOT_IN_KAFKA.get(label[0]) or (NOT_IN_KAFKA.get(label[:2]) if len(label) > 1 else None)


def initial(cfg: Config, s: State) -> dict[str, Any]:
    """The oracle's starting point: every broker registered with its epoch, the topic created
    with its configs, and the partition as the model starts it (a snapshot's PartitionRecord
    when it is not the one CreateTopics makes)."""
    ctrl = s.ctrl
    p = ctrl.partition
    init: dict[str, Any] = {
        "brokers": list(ctrl.registered),
        "epochs": {str(b): ctrl.broker_epoch(b) for b in ctrl.registered},
        "replicas": list(p.replicas if not p.adding_replicas and not p.removing_replicas else
                         [r for r in p.replicas if r not in p.adding_replicas]),
        "min_isr": ctrl.min_isr,
        "unclean": ctrl.unclean_leader_election,
        "elr": cfg.rules.elr,
        "isr_shrink_bumps_leader_epoch": cfg.rules.leader_epoch_bump_on_isr_shrink,
        "fenced": list(ctrl.fenced),
        "shutting_down": list(ctrl.shutting_down),
    }
    fresh = (p.isr == p.replicas and not p.elr and not p.last_known_elr and p.leader == p.replicas[0]
             and p.leader_epoch == 0 and p.partition_epoch == 0 and not p.adding_replicas
             and not p.removing_replicas and p.leader_recovery_state != RECOVERING)
    if not fresh:
        init["partition"] = {"replicas": list(p.replicas), "isr": list(p.isr), "elr": list(p.elr),
                             "last_known_elr": list(p.last_known_elr), "leader": p.leader,
                             "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch,
                             "recovery": p.leader_recovery_state, "adding": list(p.adding_replicas),
                             "removing": list(p.removing_replicas)}
    return init


def project(cfg: Config, s: State, label: tuple, after: State) -> dict[str, Any]:
    """The oracle op for one model step from `s` to `after` (see the module docstring)."""
    name = label[0]
    ctrl = s.ctrl
    if name == "fence":
        return {"op": "expire", "broker": label[1]}
    if name == "unmodelled_request":     # oracle/OracleProbes.java
        return {"op": "probe", "kind": label[1]}
    if name == "unfence":
        return {"op": "heartbeat", "broker": label[1], "want_fence": False, "want_shutdown": False}
    if name == "heartbeat_want_fence":    # the replay-only request
        return {"op": "heartbeat", "broker": label[1], "want_fence": True, "want_shutdown": label[2]}
    if name in ("controlled_shutdown", "clean_shutdown"):
        return {"op": "heartbeat", "broker": label[1], "want_fence": False, "want_shutdown": True}
    if name == "restart":
        b = label[1]
        clean_file = s.replicas[cfg.brokers.index(b)].clean_file
        return {"op": "register", "broker": b, "previous_epoch": clean_file,
                "epoch": after.ctrl.broker_epoch(b), "clean_detection": True}
    if name == "register":               # the replay-only request: clean iff told so, or by epoch
        b, clean, previous = label[1], label[2], label[3]
        if clean is not None:
            current = ctrl.broker_epoch(b)
            previous = current if clean and current is not None else NO_EPOCH
        return {"op": "register", "broker": b, "previous_epoch": previous, "epoch": after.ctrl.broker_epoch(b),
                "clean_detection": True}
    if name == "deliver_alter_partition":
        req = s.inflight
        return _alter_partition(req.broker, req.broker_epoch, req.leader_epoch, req.partition_epoch,
                                list(zip(req.isr, req.member_epochs)), req.leader_recovery_state)
    if name == "alter_partition":        # the replay-only request, as the scenario wrote it
        _, broker, sender_epoch, leader_epoch, partition_epoch, isr, epochs, recovery = label[:8]
        sender = ctrl.partition.leader if broker is None else broker
        if sender_epoch is None:
            sender_epoch = ctrl.broker_epoch(sender)
            sender_epoch = NO_EPOCH if sender_epoch is None else sender_epoch
        given = dict(epochs)
        return _alter_partition(sender, sender_epoch, leader_epoch, partition_epoch,
                                [(m, given.get(m, NO_EPOCH)) for m in isr], recovery)
    if name == "elect":
        return {"op": "elect", "type": label[1]}
    if name == "set_min_isr":
        return {"op": "config", "name": "min.insync.replicas", "value": str(label[1])}
    if name == "set_unclean":
        return {"op": "config", "name": "unclean.leader.election.enable", "value": str(label[1]).lower()}
    if name == "periodic_unclean_election":
        return {"op": "periodic_unclean"}
    if name == "periodic_preferred_election":      # a cluster without the task never runs it
        return {"op": "periodic_preferred"} if cfg.rules.auto_leader_rebalance else {"op": "noop"}
    if name == "reassign":
        return {"op": "reassign", "replicas": list(label[1])}
    return {"op": "noop"}


def _alter_partition(sender, sender_epoch, leader_epoch, partition_epoch, members, recovery) -> dict[str, Any]:
    return {"op": "alter_partition", "broker": sender, "broker_epoch": sender_epoch,
            "leader_epoch": leader_epoch, "partition_epoch": partition_epoch,
            "isr": [[m, e] for m, e in members], "recovery": recovery, "version": 3}


def view(s: State, error: Optional[str]) -> dict[str, Any]:
    """The controller state in the oracle's report vocabulary, broker epochs as the model's."""
    ctrl = s.ctrl
    p = ctrl.partition
    return {
        "partition": {"replicas": list(p.replicas), "isr": list(p.isr), "elr": sorted(p.elr),
                      "last_known_elr": sorted(p.last_known_elr), "leader": p.leader,
                      "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch,
                      "recovery": p.leader_recovery_state, "adding": sorted(p.adding_replicas),
                      "removing": sorted(p.removing_replicas)},
        "brokers": {str(b): [ctrl.broker_epoch(b), b in ctrl.fenced, b in ctrl.shutting_down]
                    for b in ctrl.registered},
        "elr_index": {str(b): (b in p.elr) + p.cleared_elr.count(b)
                      for b in sorted(set(p.elr) | set(p.cleared_elr))},
        "min_isr": str(ctrl.min_isr),
        "unclean": ctrl.unclean_leader_election,
        "error": error,
    }


# How two views are compared: these partition fields as sets (Kafka keeps them in hash order),
# every other one as a list or a value.
SET_FIELDS = frozenset({"elr", "last_known_elr", "adding", "removing"})
