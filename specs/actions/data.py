"""The broker side's steps: produce, replicate, advance the HWM, propose ISR changes, and the
process faults (crash with or without data loss, restart, clean shutdown). docs/protocol.md,
"Broker side", states the rules; specs/brokers.py holds the mechanics they share."""
from __future__ import annotations

from itertools import combinations
from typing import Optional

from specs import brokers as B
from specs import controller as C
from specs.actions.common import after_controller, alive, event, next_epoch
from specs.actions.declare import BROKER, DATA, INT_LIST, Param, action
from specs.config import Config
from specs.state import NO_EPOCH, NO_LEADER, Partition, State

Result = tuple[State, Optional[str]]


def _proposed(cfg: Config, p: Partition, members) -> tuple[int, ...]:
    """The ISR a leader proposes: in broker id order (Kafka 4.x: a hash set of small ids), or
    (variant, Kafka 3.9: an insertion-ordered set) the ISR's own order with a new member last."""
    if cfg.rules.leader_proposes_sorted_isr:
        return tuple(sorted(members))
    return tuple(b for b in p.isr if b in members) + tuple(b for b in members if b not in p.isr)


def _idle_leader(cfg: Config, s: State) -> int:
    """The running leader if it has no AlterPartition in flight (so it may send one), else NO_LEADER."""
    return B.live_leader(cfg, s) if s.inflight is None else NO_LEADER


@action(DATA, budget="records", z3=("stutter",))
class produce:
    """acks=all produce to the leader; refused (NOT_ENOUGH_REPLICAS) while |ISR| < min ISR."""

    def enabled(cfg: Config, s: State):
        if B.live_leader(cfg, s) != NO_LEADER and len(s.ctrl.partition.isr) >= s.ctrl.effective_min_isr:
            yield ()

    def effect(cfg: Config, s: State) -> Result:
        p = s.ctrl.partition
        leader = B.live_leader(cfg, s)
        if leader == NO_LEADER:
            return s, "NOT_LEADER_OR_FOLLOWER"
        if len(p.isr) < s.ctrl.effective_min_isr:
            return s, "NOT_ENOUGH_REPLICAS"
        record = s.hist.produced + 1
        r = B.replica_of(cfg, s, leader)
        s = B.set_replica(cfg, s, leader, r._replace(log=r.log + ((p.leader_epoch, record),)))
        return s._replace(hist=s.hist._replace(produced=record)), None


@action(DATA, params=(BROKER,), fair=True, z3=("fetch",))
class fetch:
    """Follower fetch: truncate to the leader's log, copy the rest; the leader learns the
    follower's log end offset and broker epoch."""

    def enabled(cfg: Config, s: State):
        leader = B.live_leader(cfg, s)
        if leader == NO_LEADER:
            return
        lrep = B.replica_of(cfg, s, leader)
        for f in s.ctrl.partition.replicas:
            if f == leader or not alive(cfg, s, f):
                continue
            frep = B.replica_of(cfg, s, f)
            fs = s.followers[cfg.brokers.index(f)]
            if (frep.log != lrep.log or fs.leo != len(lrep.log) or fs.broker_epoch != s.ctrl.broker_epoch(f)
                    or frep.hwm != min(lrep.hwm, len(lrep.log))):
                yield (f,)

    def effect(cfg: Config, s: State, broker: int) -> Result:
        return B.fetch(cfg, s, broker), None


@action(DATA, z3=("advance_hwm",))
class advance_hwm:
    """The leader advances the high watermark; acks=all requests below it complete (acknowledged
    if |ISR| >= min ISR) and consumers may read below it."""

    def enabled(cfg: Config, s: State):
        if B.next_hwm(cfg, s) is not None:
            yield ()

    def effect(cfg: Config, s: State) -> Result:
        hwm = B.next_hwm(cfg, s)
        leader = s.ctrl.partition.leader
        r = B.replica_of(cfg, s, leader)
        old = r.hwm
        s = B.set_replica(cfg, s, leader, r._replace(hwm=hwm))
        h = s.hist
        acked = h.acked
        if len(s.ctrl.partition.isr) >= s.ctrl.effective_min_isr:
            epoch = s.ctrl.partition.leader_epoch
            new = [rec for (ep, rec) in r.log[old:hwm] if ep == epoch]
            if new:
                acked = tuple(sorted(set(acked) | set(new)))
        visible = h.visible
        if hwm > len(visible):
            visible = tuple(rec for (_, rec) in r.log[:hwm])
        return s._replace(hist=h._replace(acked=acked, visible=visible)), None


@action(DATA, params=(BROKER, Param("also", INT_LIST, required=False, default=())), budget="isr_shrinks",
        disturbance=True, z3=("stutter",))
class shrink_isr:
    """The leader sends AlterPartition dropping a lagging follower, and `also` others that lag as
    long (in flight until delivered): Kafka's maybeShrinkIsr drops every follower out of sync at
    its check in one request (a real 4.4.0 cluster dropped b2 and b3 together when neither had
    fetched since the leader's election). One request, one use of the budget."""

    def enabled(cfg: Config, s: State):
        leader = _idle_leader(cfg, s)
        if leader == NO_LEADER:
            return
        leo = len(B.replica_of(cfg, s, leader).log)
        lagging = sorted(f for f in s.ctrl.partition.isr if f != leader and B.follower_leo(cfg, s, leader, f) < leo)
        for i, f in enumerate(lagging):          # each set once: named by its smallest member
            rest = lagging[i + 1:]
            for k in range(len(rest) + 1):
                for also in combinations(rest, k):
                    yield (f, also)

    def effect(cfg: Config, s: State, broker: int, also: tuple) -> Result:
        p = s.ctrl.partition
        gone = {broker, *also}
        isr = _proposed(cfg, p, [b for b in p.isr if b not in gone])
        return s._replace(inflight=B.alter_partition_request(cfg, s, p.leader, isr)), None


@action(DATA, params=(BROKER,), fair=True, z3=("stutter",))
class expand_isr:
    """The leader sends AlterPartition adding a caught-up follower; until the controller commits
    it, the follower counts only in the maximal ISR. Fair: Kafka expands on the fetch that shows
    the follower caught up. A leader elected uncleanly marks itself RECOVERED when it becomes
    leader and sends no AlterPartition for that alone; its next one (this, or a shrink) carries
    RECOVERED (Kafka's Partition.makeLeader; seen on a real 4.4.0 cluster, docs/cluster.md)."""

    def enabled(cfg: Config, s: State):
        leader = _idle_leader(cfg, s)
        if leader != NO_LEADER:
            for f in B.expand_candidates(cfg, s, leader):
                yield (f,)

    def effect(cfg: Config, s: State, broker: int) -> Result:
        p = s.ctrl.partition
        isr = _proposed(cfg, p, list(p.isr) + [broker])
        return s._replace(inflight=B.alter_partition_request(cfg, s, p.leader, isr)), None


@action(DATA, elects=True, fair=True, z3=("alter_partition",))
class deliver_alter_partition:
    """The controller processes the AlterPartition in flight, however late."""

    def enabled(cfg: Config, s: State):
        if s.inflight is not None:
            yield ()

    def effect(cfg: Config, s: State, prefer: Optional[int] = None) -> Result:
        out = event(cfg, C.alter_partition, s.ctrl, s.inflight, prefer=prefer)
        return after_controller(cfg, s._replace(inflight=None), out)


def _running(cfg: Config, s: State):
    for b, r in zip(cfg.brokers, s.replicas):
        if r.alive:
            yield (b,)


@action(DATA, params=(BROKER,), budget="crashes", fault=True, z3=("crash",))
class crash:
    """Unclean shutdown keeping the page cache: the log survives, the clean-shutdown file does not."""

    enabled = _running

    def effect(cfg: Config, s: State, broker: int) -> Result:
        return B.crash(cfg, s, broker, B.replica_of(cfg, s, broker).log), None


@action(DATA, params=(BROKER, Param("keep")), budget="lossy_crashes", fault=True, z3=("crash",))
class crash_lossy:
    """Unclean shutdown losing the unflushed suffix beyond `keep` entries: the OS flushes in the
    background, so anything from the flushed prefix up to the log end may have survived."""

    def enabled(cfg: Config, s: State):
        for b, r in zip(cfg.brokers, s.replicas):
            if r.alive:
                for keep in range(r.flushed, len(r.log)):
                    yield (b, keep)

    def effect(cfg: Config, s: State, broker: int, keep: int) -> Result:
        r = B.replica_of(cfg, s, broker)
        p = s.ctrl.partition
        # Every replica's loss counts against KIP-966's tolerance ("MinISR-1 tolerance to data
        # loss unclean shutdown events"), a replica outside ISR and ELR too: an AlterPartition
        # sent before its crash can bring it back into the ISR with its old broker epoch.
        s = B.crash(cfg, s, broker, r.log[:max(keep, r.flushed)])
        if broker in p.replicas:
            s = s._replace(hist=s.hist._replace(lossy_crashes=s.hist.lossy_crashes + 1))
        return s, None


@action(DATA, params=(BROKER,), elects=True, fair=True, z3=("restart",))
class restart:
    """A stopped broker starts a new incarnation: it reads (then deletes) its clean-shutdown file
    and registers with that previous broker epoch."""

    def enabled(cfg: Config, s: State):
        for b, r in zip(cfg.brokers, s.replicas):
            # variant (Kafka 3.9 preset): only once the controller has fenced the old incarnation
            if not r.alive and (cfg.rules.restart_before_fence or b in s.ctrl.fenced):
                yield (b,)

    def effect(cfg: Config, s: State, broker: int, prefer: Optional[int] = None) -> Result:
        r = B.replica_of(cfg, s, broker)
        s = B.set_replica(cfg, s, broker, r._replace(alive=True, flushed=len(r.log), clean_file=NO_EPOCH))
        out = event(cfg, C.register, s.ctrl, broker, r.clean_file, next_epoch(s.ctrl, broker), prefer=prefer)
        return after_controller(cfg, s, out)


@action(DATA, params=(BROKER,), elects=True, fair=True, z3=("clean_shutdown",))
class clean_shutdown:
    """A broker in controlled shutdown flushes, writes its clean-shutdown file with its broker
    epoch and stops; the controller fences it (shutdown-now)."""

    def enabled(cfg: Config, s: State):
        for b in s.ctrl.shutting_down:
            if alive(cfg, s, b):
                yield (b,)

    def effect(cfg: Config, s: State, broker: int, prefer: Optional[int] = None) -> Result:
        s = B.stop_cleanly(cfg, s, broker)
        return after_controller(cfg, s, event(cfg, C.fence, s.ctrl, broker, prefer=prefer))

