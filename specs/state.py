"""Immutable protocol state: the controller's view, each broker's local replica,
the leader's follower bookkeeping, the AlterPartition in flight, and history.

States are NamedTuples of ints and sorted tuples, so they hash, compare and
pickle cheaply (the BFS stores millions; Spark ships them between executors).
Broker-indexed tuples are aligned with `Config.brokers` (sorted broker ids).
"""
from __future__ import annotations

from typing import NamedTuple, Optional

NO_LEADER = -1
RECOVERED = 0
RECOVERING = 1
RECOVERY_NAMES = ("RECOVERED", "RECOVERING")
NO_EPOCH = -1  # a broker epoch that is unknown / not sent (AlterPartition v0-2)


class Partition(NamedTuple):
    """The controller's PartitionRegistration."""
    replicas: tuple[int, ...]            # ordered; replicas[0] is the preferred leader
    isr: tuple[int, ...]                 # ordered as Kafka writes it (compared as a list)
    elr: tuple[int, ...]                 # sorted
    last_known_elr: tuple[int, ...]      # sorted
    leader: int
    leader_epoch: int
    partition_epoch: int
    leader_recovery_state: int
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    last_known_leader: int = NO_LEADER   # only the KIP-text variant keeps it apart from last_known_elr
    # Entries a ClearElrRecord left in the controller's ELR index (ReplicationControlManager's
    # BrokersToElrs), a broker once per entry, sorted. A partition change adds an index entry
    # for each broker that joins the ELR and drops one for each that leaves it; a ClearElrRecord
    # empties the ELR without touching the index, so each broker it removed keeps an entry for
    # good: the index lists the partition (ELR membership + these) times for a broker
    # (docs/protocol.md, "Registration").
    cleared_elr: tuple[int, ...] = ()


class Controller(NamedTuple):
    """The controller's metadata: one partition, the broker registry and the topic config."""
    partition: Partition
    registered: tuple[int, ...]          # sorted ids of registered brokers
    broker_epochs: tuple[int, ...]       # aligned with `registered`
    fenced: tuple[int, ...]              # sorted
    shutting_down: tuple[int, ...]       # sorted: in controlled shutdown
    min_isr: int                         # topic min.insync.replicas (not yet capped)
    unclean_leader_election: bool

    def broker_epoch(self, b: int) -> Optional[int]:
        try:
            return self.broker_epochs[self.registered.index(b)]
        except ValueError:
            return None

    def acceptable_leader(self, b: int) -> bool:
        """Registered, unfenced and not in controlled shutdown."""
        return b in self.registered and b not in self.fenced and b not in self.shutting_down

    @property
    def effective_min_isr(self) -> int:
        return min(self.min_isr, len(self.partition.replicas))


class Replica(NamedTuple):
    """One broker's local copy of the partition."""
    alive: bool                          # the process is running
    log: tuple[tuple[int, int], ...]     # entries (leader_epoch, record id); offset = index
    flushed: int                         # prefix length that survives a lossy crash
    hwm: int                             # this broker's high watermark
    clean_file: int                      # broker epoch in the clean-shutdown file; NO_EPOCH = absent


class FollowerState(NamedTuple):
    """What the current leader learned from a follower's Fetch in this leader epoch."""
    leo: int                             # -1 = no fetch seen in this epoch
    broker_epoch: int                    # the follower's broker epoch sent in its Fetch


class AlterPartitionRequest(NamedTuple):
    broker: int                          # sender
    broker_epoch: int                    # sender's broker epoch
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]                 # proposed ISR, in proposal order
    member_epochs: tuple[int, ...]       # broker epoch per proposed member (NO_EPOCH = not checked)
    leader_recovery_state: int


class History(NamedTuple):
    """Ghost variables the properties need; no protocol rule reads them."""
    produced: int                        # records produced so far (record ids are 1..produced)
    acked: tuple[int, ...]               # record ids acknowledged to an acks=all producer
    visible: tuple[int, ...]             # record ids below the highest HWM consumers saw, by offset
    lossy_crashes: int                   # lossy unclean shutdowns of the partition's replicas
    unclean_shutdowns: int               # registrations the controller judged unclean
    unclean_elections: int               # elections that took a leader from outside ISR/ELR
    # ... of which an operator chose (unclean.leader.election.enable, an admin UNCLEAN or
    # designated election, a recovery strategy): the only elections that excuse a loss
    # (specs/facts.py, within_tolerance). The controller's last-known-leader election is not one.
    operator_unclean_elections: int
    # The min ISR KIP-966's durability promise was made at, kept so that a later raise cannot
    # turn a loss the promise never covered into a violation: the least effective min ISR since
    # the first record was committed (a lowering lowers it, a raise leaves it). 0 while it is the
    # current effective min ISR (before any commit too), so a run whose min ISR never changes
    # has the states it had without it (specs/kernel/mechanics.py, keep_promises).
    promised_min_isr: int
    # The least effective min ISR since the run began: what the count of unclean shutdowns, kept
    # since the run began, is held to (UncleanElectionOnlyAfterMinIsrUncleanShutdowns). 0 while
    # it is the current one.
    least_min_isr: int
    used: tuple[int, ...]                # budget use, aligned with config.BUDGETS


class HeldView(NamedTuple):
    """The partition as a leader cut off from the controller last received it (bound
    metadata_lag): it goes on acting on this, at this leader epoch with this ISR, until the
    metadata is delivered, though the controller may have elected another leader meanwhile (a
    zombie leader: docs/protocol.md, "Metadata that lags")."""
    broker: int
    leader_epoch: int
    isr: tuple[int, ...]                 # sorted
    # sorted: the ISR and the members its AlterPartition in flight added, which its HWM waits
    # for until it hears back (it never does while held)
    maximal_isr: tuple[int, ...]


class State(NamedTuple):
    ctrl: Controller
    replicas: tuple[Replica, ...]        # aligned with Config.brokers
    followers: tuple[FollowerState, ...]  # the current leader's view, aligned with Config.brokers
    inflight: Optional[AlterPartitionRequest]
    hist: History
    view: Optional[HeldView] = None      # a leader's metadata held back (None: every broker is current)


def sorted_tuple(xs) -> tuple[int, ...]:
    return tuple(sorted(set(xs)))


# The model's value types, by name: what data read back from a file may build (verifier/core/values.py).
VALUE_TYPES = {t.__name__: t for t in (State, Controller, Partition, Replica, FollowerState,
                                        AlterPartitionRequest, History, HeldView)}
