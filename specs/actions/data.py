"""The broker side's steps, declared: produce, replicate, advance the HWM, propose ISR changes,
and the process faults (crash with or without data loss, restart, clean shutdown).
docs/protocol.md, "Broker side", states the rules. Each declaration gives the step's
description, parameters, budget and category; its guard and effect, the model's one copy of
them, are `<name>_params` and `<name>_effect` in specs/kernel/data.py, which every engine runs
(compiled, or interpreted with NUMBA_DISABLE_JIT=1)."""
from __future__ import annotations

from specs.actions.declare import BROKER, DATA, INT_LIST, Param, action


@action(DATA, budget="records", z3=("stutter",))
class produce:
    """acks=all produce to the leader; refused (NOT_ENOUGH_REPLICAS) while |ISR| < min ISR."""


@action(DATA, params=(BROKER,), fair=True, z3=("fetch",))
class fetch:
    """Follower fetch: truncate to the leader's log, copy the rest; the leader learns the
    follower's log end offset and broker epoch."""


@action(DATA, z3=("advance_hwm",))
class advance_hwm:
    """The leader advances the high watermark; acks=all requests below it complete (acknowledged
    if |ISR| >= min ISR) and consumers may read below it."""


@action(DATA, params=(BROKER, Param("also", INT_LIST, required=False, default=())), budget="isr_shrinks",
        disturbance=True, z3=("stutter",))
class shrink_isr:
    """The leader sends AlterPartition dropping a lagging follower, and `also` others that lag as
    long (in flight until delivered): Kafka's maybeShrinkIsr drops every follower out of sync at
    its check in one request (a real 4.4.0 cluster dropped b2 and b3 together when neither had
    fetched since the leader's election). One request, one use of the budget."""


@action(DATA, params=(BROKER,), fair=True, z3=("stutter",))
class expand_isr:
    """The leader sends AlterPartition adding a caught-up follower; until the controller commits
    it, the follower counts only in the maximal ISR. Fair: Kafka expands on the fetch that shows
    the follower caught up. A leader elected uncleanly marks itself RECOVERED when it becomes
    leader and sends no AlterPartition for that alone; its next one (this, or a shrink) carries
    RECOVERED (Kafka's Partition.makeLeader; seen on a real 4.4.0 cluster, docs/cluster.md)."""


@action(DATA, elects=True, fair=True, z3=("alter_partition",))
class deliver_alter_partition:
    """The controller processes the AlterPartition in flight, however late."""


@action(DATA, params=(BROKER,), budget="crashes", fault=True, z3=("crash",))
class crash:
    """Unclean shutdown keeping the page cache: the log survives, the clean-shutdown file does not."""


@action(DATA, params=(BROKER, Param("keep")), budget="lossy_crashes", fault=True, z3=("crash",))
class crash_lossy:
    """Unclean shutdown losing the unflushed suffix beyond `keep` entries: the OS flushes in the
    background, so anything from the flushed prefix up to the log end may have survived."""


@action(DATA, params=(BROKER,), elects=True, fair=True, z3=("restart",))
class restart:
    """A stopped broker starts a new incarnation: it reads (then deletes) its clean-shutdown file
    and registers with that previous broker epoch."""


@action(DATA, params=(BROKER,), elects=True, fair=True, z3=("clean_shutdown",))
class clean_shutdown:
    """A broker in controlled shutdown flushes, writes its clean-shutdown file with its broker
    epoch and stops; the controller fences it (shutdown-now)."""
