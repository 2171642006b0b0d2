"""The controller's operations as actions: fencing, heartbeats, controlled shutdown, admin
elections, topic config changes, reassignment and unclean recovery rounds, plus the raw
requests only replay sends (a registration, an AlterPartition, and the requests naming what the
model leaves out, which change nothing it holds). The rules they run are in
specs/controller.py; docs/protocol.md, "Controller events", states them. Each explored
operation's guard and broker-side effect are `<name>_params` and `<name>_effect` in
specs/kernel/control.py; the registration and the AlterPartition install their outcome through
the kernel too."""
from __future__ import annotations

from typing import Optional

from specs import controller as C
from specs.actions.declare import (BOOL, BROKER, BROKER_LIST, CONTROLLER, EPOCH_MAP, INT_LIST, LONG, OPT_INT,
                                   REQUEST, Kind, OpError, Param, action, at_least, choice)
from specs.algebra import CONCRETE
from specs.config import Config
from specs.rules import RECOVERY_STRATEGIES, Outside
from specs.state import NO_EPOCH, RECOVERY_NAMES, AlterPartitionRequest, State

Result = tuple[State, Optional[str]]


@action(CONTROLLER, params=(BROKER,), budget="fences", charged_if_running=True, elects=True, fault=True,
        z3=("fence",))
class fence:
    """Session timeout (free for a stopped broker) or a network partition from the controller:
    the broker leaves the ISR and may join ELR."""


@action(CONTROLLER, params=(BROKER,), elects=True, fair=True, z3=("unfence",))
class unfence:
    """A heartbeat from a running broker unfences it; leaderless partitions elect again."""


@action(CONTROLLER, params=(BROKER,), budget="clean_shutdowns", elects=True, fault=True,
        z3=("controlled_shutdown",))
class controlled_shutdown:
    """A broker asks to shut down: while it leads, it enters controlled shutdown (no longer an
    acceptable leader nor in any ISR); a broker that leads nothing is told to shut down at once,
    is fenced, and stops cleanly (it flushes and writes its clean-shutdown file)."""


@action(CONTROLLER, params=(Param("type", choice("preferred", "unclean", "designated")),
                            Param("leader", OPT_INT, required=False)),
        budget="admin_elections", elects=True, reads_replica_order=True,
        operator=True, z3=("elect_preferred", "elect_unclean", "elect_designated"))
class elect:
    """Admin election (ElectLeaders): preferred, unclean, or designated (the unclean-recovery
    tool's, naming the leader)."""

    def check(type: str, leader: Optional[int]) -> None:
        if type == "designated" and leader is None:
            raise OpError("a designated election needs 'leader'")


@action(CONTROLLER, params=(Param("value", at_least(1)),), budget="config_changes", operator=True,
        z3=("set_min_isr",))
class set_min_isr:
    """A min.insync.replicas change of the topic (Kafka clears ELR on any change)."""


@action(CONTROLLER, params=(Param("value", BOOL),), budget="config_changes", operator=True,
        z3=("set_unclean",))
class set_unclean:
    """An unclean.leader.election.enable change."""


@action(CONTROLLER, elects=True, z3=("periodic_unclean_election",))
class periodic_unclean_election:
    """The controller's periodic task: unclean elections where the topic enables them."""


@action(CONTROLLER, elects=True, reads_replica_order=True, switch="auto_leader_rebalance",
        z3=Outside("the periodic preferred election: the z3 encoding has no such step"))
class periodic_preferred_election:
    """The controller's periodic preferred-leader election (rule auto_leader_rebalance): a
    partition whose leader is not its preferred replica takes the preferred election, unasked."""


@action(CONTROLLER, params=(Param("replicas", BROKER_LIST),), budget="reassignments", reads_replica_order=True,
        operator=True, z3=Outside("reassignment: the z3 encoding has no reassignment"))
class reassign:
    """A partition reassignment to a new replica set (one replica swapped for a spare broker)."""


@action(CONTROLLER, params=(Param("strategy", choice(*RECOVERY_STRATEGIES, optional=True), required=False),),
        budget="unclean_recoveries", reads_replica_order=True, fair=True, z3=("unclean_recovery",))
class unclean_recovery:
    """A KIP-966 unclean recovery round (variant): ask the replicas for their logs, elect the
    one with the highest last leader epoch, then the longest log. Enabled when the strategy's
    conditions hold, i.e. when a round elects: a round that must wait changes nothing."""


# ---------------------------------------------------------------- requests only replay sends

def _recovery(v, name):
    if v in RECOVERY_NAMES:
        return RECOVERY_NAMES.index(v)
    if v in (0, 1) and not isinstance(v, bool):
        return v
    raise OpError(f"field '{name}' must be RECOVERED or RECOVERING")


RECOVERY = Kind("RECOVERED|RECOVERING", _recovery, lambda v: RECOVERY_NAMES[v])


@action(REQUEST, params=(BROKER, Param("clean_shutdown", BOOL, required=False),
                         Param("previous_broker_epoch", LONG, required=False, default=NO_EPOCH),
                         Param("new_broker_epoch", LONG, required=False)),
        z3=("restart",))
class register:
    """A new incarnation registers (as Kafka's controller tests drive it): clean iff
    `clean_shutdown`, or, when absent, iff `previous_broker_epoch` is the registered one."""

    def effect(cfg: Config, s: State, broker: int, clean_shutdown: Optional[bool], previous_broker_epoch: int,
               new_broker_epoch: Optional[int]) -> Result:
        from specs.kernel import on_kernel
        current = s.ctrl.broker_epoch(broker)
        if new_broker_epoch is None:
            new_broker_epoch = (100 + broker if current is None else current) + 1000
        out = C.register(CONCRETE, cfg.rules, s.ctrl, broker, previous_broker_epoch, new_broker_epoch,
                         clean_shutdown)
        # the broker side, as restart's: a new incarnation, running (a stranger has no replica)
        return on_kernel(cfg, lambda k: k.install(s, out, revive=broker if broker in cfg.brokers else None))


@action(REQUEST, params=(BROKER, Param("want_shutdown", BOOL, required=False, default=False)), z3=("fence",))
class heartbeat_want_fence:
    """A heartbeat of a running, unfenced broker not in controlled shutdown asking to be fenced
    (wantFence; with `want_shutdown`, to shut down at once): BrokerHeartbeatManager grants it,
    FENCED or SHUTDOWN_NOW, and the controller fences the broker as when its session lapses
    (handleBrokerFenced: the model's fence). Apache Kafka's brokers send wantFence only before
    they are first unfenced; the controller takes it from any."""

    def effect(cfg: Config, s: State, broker: int, want_shutdown: bool) -> Result:
        from specs.kernel import on_kernel
        ctrl = s.ctrl
        if broker not in ctrl.registered or broker in ctrl.fenced or broker in ctrl.shutting_down:
            from specs.scenario.format import NotEnabled
            raise NotEnabled(f"heartbeat_want_fence broker={broker} needs a registered broker, unfenced and not in "
                             f"controlled shutdown (a fenced one's: unmodelled_request heartbeat_wants_fence)")
        out = C.fence(CONCRETE, cfg.rules, ctrl, broker)
        return on_kernel(cfg, lambda k: k.install(s, out))


@action(REQUEST, params=(Param("broker", OPT_INT, required=False), Param("request_broker_epoch", LONG, required=False),
                         Param("leader_epoch"), Param("partition_epoch"), Param("isr", INT_LIST),
                         Param("broker_epochs", EPOCH_MAP, required=False, default=()),
                         Param("leader_recovery_state", RECOVERY, required=False, default=0)),
        z3=("alter_partition",))
class alter_partition:
    """An AlterPartition as any sender may send it: the sender defaults to the leader and its
    epoch to the registered one; a member without a broker epoch is sent as -1 (unchecked)."""

    def effect(cfg: Config, s: State, broker: Optional[int], request_broker_epoch: Optional[int], leader_epoch: int,
               partition_epoch: int, isr: tuple, broker_epochs: tuple, leader_recovery_state: int) -> Result:
        sender = s.ctrl.partition.leader if broker is None else broker
        if request_broker_epoch is None:
            request_broker_epoch = s.ctrl.broker_epoch(sender)
            request_broker_epoch = NO_EPOCH if request_broker_epoch is None else request_broker_epoch
        epochs = dict(broker_epochs)
        req = AlterPartitionRequest(sender, request_broker_epoch, leader_epoch, partition_epoch, tuple(isr),
                                    tuple(epochs.get(b, NO_EPOCH) for b in isr), leader_recovery_state)
        from specs.kernel import on_kernel
        out = C.alter_partition(CONCRETE, cfg.rules, s.ctrl, req)
        return on_kernel(cfg, lambda k: k.install(s, out))


# Requests outside the model (oracle/OracleProbes.java): what each names that the model leaves
# out, and the error Kafka's controller code answers it with (None: accepted, changing nothing
# the model holds). The model's claim is that none of them changes its state.
PROBES = {
    "register_other_cluster": "INCONSISTENT_CLUSTER_ID",      # ClusterControlManager.registerBroker: clusterId
    "register_zk_broker": "BROKER_ID_NOT_REGISTERED",         # isMigratingZkBroker (no migration running)
    "register_no_log_dirs": "INVALID_REGISTRATION",           # logDirs empty
    "register_reserved_log_dir": "INVALID_REGISTRATION",      # DirectoryId.reserved
    "register_duplicate_log_dirs": "INVALID_REGISTRATION",    # a directory twice
    "register_log_dir_of_another_broker": "INVALID_REGISTRATION",   # directoryToBroker names another
    "register_without_metadata_version": "INVALID_REGISTRATION",    # features lack metadata.version
    "register_while_session_valid": "DUPLICATE_BROKER_REGISTRATION",   # heartbeatManager.hasValidSession
    "register_same_incarnation": None,                        # the registered incarnation amends its registration
    "alter_partition_unknown_topic": "UNKNOWN_TOPIC_ID",      # ReplicationControlManager.alterPartition
    "alter_partition_zero_topic_id": "UNKNOWN_TOPIC_ID",
    "alter_partition_unknown_partition": "UNKNOWN_TOPIC_OR_PARTITION",   # validateAlterPartitionData
    "alter_partition_version_2_stale": "FENCED_LEADER_EPOCH",  # version 2 (newIsr without epochs), leader epoch -1
    "elect_every_partition": None,      # electLeaders naming no partition: none needs one (or the preferred one's refusal)
    "elect_unknown_topic": "UNKNOWN_TOPIC_OR_PARTITION",      # electLeader
    "elect_unknown_partition": "UNKNOWN_TOPIC_OR_PARTITION",
    "reassign_unknown_topic": "UNKNOWN_TOPIC_OR_PARTITION",   # alterPartitionReassignment
    "reassign_unknown_partition": "UNKNOWN_TOPIC_OR_PARTITION",
    "cancel_reassignment_none_in_progress": "NO_REASSIGNMENT_IN_PROGRESS",   # cancelPartitionReassignment
    "create_topic_with_dot": None,                            # another topic: the model's is not touched
    "heartbeat_behind_metadata": None,        # a fenced broker behind its registration's offset stays fenced
    "heartbeat_wants_fence": None,            # a fenced broker asking to stay fenced stays fenced
    "cancel_reassignment_of_another_topic": None,             # its revert: cancelPartitionReassignment
    "standby_takes_over": None,     # a standby replays the log, refuses heartbeats, activates: the same state
}
STRANGER = 9        # the broker id the registration probes name (OracleProbes.STRANGER)


def _probe_needs(cfg: Config, s: State, kind: str) -> Optional[str]:
    """Why the state cannot take the probe as the model claims it (None: it can)."""
    ctrl, p = s.ctrl, s.ctrl.partition
    if kind.startswith("register_") and kind not in ("register_while_session_valid", "register_same_incarnation"):
        return "broker 9 registered or in the config" if STRANGER in cfg.brokers or STRANGER in ctrl.registered else None
    if kind in ("register_while_session_valid", "register_same_incarnation"):
        return None if ctrl.registered and ctrl.registered[0] not in ctrl.fenced else "its lowest broker fenced"
    if kind.startswith("alter_partition_"):
        return None if p.leader in ctrl.registered else "a registered leader"
    if kind == "elect_every_partition":
        return None if _elect_every_partition(cfg, s) is not False else \
            "the preferred replica leading, or unable to lead (a preferred election that would change nothing)"
    if kind == "cancel_reassignment_none_in_progress":
        return None if not (p.adding_replicas or p.removing_replicas) else "no reassignment in progress"
    if kind.startswith("heartbeat_"):
        return None if ctrl.fenced else "a fenced broker"
    if kind == "cancel_reassignment_of_another_topic":     # CreateTopics needs a live replica to lead
        live = [r for r in p.replicas[:2] if r not in ctrl.fenced and r not in ctrl.shutting_down]
        return None if len(p.replicas) >= 3 and live else "three replicas, one of the first two unfenced and running"
    return None


def _elect_every_partition(cfg: Config, s: State):
    """Kafka's answer to an election of every partition (ElectLeaders naming none) where the
    model's own preferred election changes nothing: None where the preferred replica leads
    (ELECTION_NOT_NEEDED is left out of the answer), else the preferred election's refusal;
    False where the election would change the partition (no probe: a step of the model)."""
    if s.ctrl.partition.leader == s.ctrl.partition.replicas[0]:
        return None
    out = C.elect(CONCRETE, cfg.rules, s.ctrl, C.PREFERRED)
    return False if out.error is None else out.error


@action(REQUEST, params=(Param("kind", choice(*PROBES)),),
        z3=Outside("requests outside the model: what they name, the z3 encoding has not either"))
class unmodelled_request:
    """A request naming what the model leaves out (another cluster, a ZooKeeper broker, log
    directories, a topic or partition the controller does not know, a version-2 AlterPartition,
    an election of every partition, another topic, a reassignment of another topic cancelled while
    in progress, a heartbeat behind the log or asking to stay fenced, a second controller that
    replays the log and takes over): it changes nothing the model holds, and Kafka answers it
    with the error PROBES names (an election of every partition where the preferred replica
    cannot lead: the model's own preferred election's refusal)."""

    def effect(cfg: Config, s: State, kind: str) -> Result:
        need = _probe_needs(cfg, s, kind)
        if need is not None:        # as a broker-side step whose guard does not hold (a scenario's failure)
            from specs.scenario.format import NotEnabled
            raise NotEnabled(f"unmodelled_request kind={kind} needs {need}, which this state lacks")
        if kind == "register_without_metadata_version" and not cfg.rules.registration_requires_metadata_version:
            return s, "UNSUPPORTED_VERSION"         # Kafka 3.9: the first KRaft metadata version assumed
        if kind == "elect_every_partition":
            return s, _elect_every_partition(cfg, s)
        return s, PROBES[kind]
