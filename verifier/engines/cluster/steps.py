"""Each model step acted out on a real cluster (the table in docs/cluster.md).

Data links are cut unless a step opens them, so no replication happens that the model did not
ask for; requests go to the broker the controller names as leader, or to the controller (admin
requests, KIP-919), never through a broker that may hold stale metadata. A step is done when
the metadata log or the replicas' files show it; every wait has a timeout and yields to a stop
request. Steps a cluster only takes on its own (an HWM advance, an ISR expansion, an
AlterPartition's delivery, RECOVERED, a clean stop after a controlled shutdown, the periodic
unclean election) are waited for, not caused.
"""
from __future__ import annotations

import time
from typing import Optional

from verifier.core import stop
from verifier.engines.cluster.explain import partition_of, parts, plain
from verifier.engines.cluster.harness import TOPIC, Harness, Stopped

# Steps a harness can cause; the rest happen on their own or in no release.
DRIVEN = ("produce", "fetch", "crash", "crash_lossy", "restart", "fence", "unfence", "controlled_shutdown",
          "set_min_isr", "set_unclean", "elect", "reassign", "shrink_isr", "hold_metadata", "deliver_metadata",
          "stale_produce")
WAITED = ("advance_hwm", "expand_isr", "deliver_alter_partition", "clean_shutdown",
          "periodic_unclean_election", "stale_advance_hwm")
# How long past a waited step a real cluster may still take it, from the harness's Kafka settings
# (cluster.py): a leader advances its HWM and expands its ISR when it handles a Fetch
# (replica.fetch.wait.max.ms 200 ms; a fetch outstanding when a link was cut is answered or
# dropped within replica.socket.timeout.ms, 5 s); an AlterPartition is sent at once and resent
# after controller.socket.timeout.ms (5 s); a clean stop follows the controlled shutdown the
# harness waited for. A step the model drives and the cluster has not taken by then is a
# divergence (run.py). The periodic unclean election is not here: its task runs every 5 minutes
# (explain.MAY_BE_LEFT_OUT).
WAIT_PAST = {"advance_hwm": 6.0, "expand_isr": 6.0, "deliver_alter_partition": 6.0, "clean_shutdown": 6.0,
             "stale_advance_hwm": 6.0}


def not_drivable(model, s, label: tuple) -> Optional[str]:
    """Why the cluster cannot be made to take `label` in model state `s` (None: it can)."""
    name, label = label[0], plain(label)
    s = parts(s)[0]                        # (what the partitions share: the brokers' registry)
    if name in ("register", "alter_partition", "unmodelled_request"):
        return "a raw controller request: a real broker sends its own"
    if name == "unclean_recovery" or name == "elect" and label[1] == "designated":
        return "no Kafka release has it"
    if name == "restart" and label[1] not in s.ctrl.fenced:
        return (f"a real controller refuses b{label[1]}'s registration while its old session is valid and fences it "
                "the moment the session lapses, so the fence always comes first (write fence before restart)")
    if name not in DRIVEN + WAITED:
        return "the harness has no way to cause it"
    return None


def _follower_hwm(h: Harness, b: int, p: int) -> Optional[int]:
    """b's HWM from its checkpoint (written every 200 ms): it has fetched when this moved."""
    from verifier.engines.cluster.observe import hwm_checkpoint
    return hwm_checkpoint(h.cluster.nodes[b].data, TOPIC, p)


def _wait_quietly(test, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if test():
            return True
        pause(0.1)
    return test()


def pause(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if stop.requested():
            raise Stopped(stop.reason())
        time.sleep(0.05)


def drive(h: Harness, model, s, label: tuple, after, precut: tuple = ()) -> Optional[str]:
    """Make the cluster take `label` (the model goes from `s` to `after`); the answer of an admin
    request, else None. `precut`: brokers whose controller link is cut before a crash, in that
    order, so their sessions lapse first (a scenario that fences them before the crashed one).
    With several partitions, a partition's own step acts on the partition it names."""
    c, name = h.cluster, label[0]
    each = parts(s)
    p = partition_of(label, len(each))
    leader = each[p].ctrl.partition.leader
    b = plain(label)[1] if len(label) > 1 else None
    if name in ("produce", "stale_produce"):     # a stale produce goes to the held leader, as a producer
        record = each[p].hist.produced + 1       # whose metadata names it sends it (docs/cluster.md)
        to = leader if name == "produce" else b
        w = h.produce(to, record, p)
        h.until(lambda: w.result is not None or any(r == record for _, r in h.log(to, p)),
                f"r{record} in b{to}'s log" + (f" of partition {p}" if len(each) > 1 else ""))
        return None
    if name == "hold_metadata":          # cut off from the controller: no metadata, no requests arrive
        c.cut_controller(b)
        return None
    if name == "deliver_metadata":       # the link heals: it fetches the metadata (and heartbeats)
        c.heal_controller(b)
        return None
    if name == "fetch":
        if c.controller_cut(b):          # a fenced broker learns the leader from the controller first
            c.heal_controller(b)
        c.heal_data(b, leader)
        h.until(lambda: h.log(b, p) == h.log(leader, p), f"b{b}'s log equal to the leader b{leader}'s")
        pause(1.0)                      # a fetch more: the leader learns the follower's log end, the HWM moves
        # and one more, so the follower learns the HWM its fetch moved (if it does not within 10 s,
        # a reconnection after the cut can take that long, the observation compares what it has
        # with the model: a difference is a divergence, not the harness's failure)
        _wait_quietly(lambda: _follower_hwm(h, b, p) == h.leader_hwm(leader, p), 10.0)
        c.cut_data(b, leader)
        return None
    if name in ("crash", "crash_lossy"):
        for a in precut:
            c.cut_controller(a)
            pause(0.6)
        if precut:
            pause(1.0)
        c.nodes[b].kill()
        if name == "crash_lossy":               # each partition's replica keeps what the model's does
            for q, part in enumerate(parts(after)):
                c.truncate(b, TOPIC, len(part.replicas[model.cfg.brokers.index(b)].log), q)
        return None
    if name == "restart":
        seen = len(h.incarnations.get(b, []))
        c.heal_controller(b)             # the new incarnation reaches the controller
        c.nodes[b].start()
        h.until(lambda: len(h.incarnations.get(b, [])) > seen, f"b{b} registered again", timeout=90)
        return None
    if name == "fence":
        if c.nodes[b].running:
            c.cut_controller(b)
        h.until(lambda: h.fold.brokers[b]["fenced"], f"b{b} fenced")
        return None
    if name == "unfence":
        c.heal_controller(b)
        h.until(lambda: not h.fold.brokers[b]["fenced"], f"b{b} unfenced")
        return None
    if name == "controlled_shutdown":
        c.nodes[b].stop(timeout=60)
        h.until(lambda: h.fold.brokers[b]["fenced"], f"b{b} fenced after its controlled shutdown")
        return None
    if name == "set_min_isr":
        return h.set_config("min.insync.replicas", str(label[1]))
    if name == "set_unclean":
        return h.set_config("unclean.leader.election.enable", str(bool(label[1])).lower())
    if name == "elect":
        return h.elect(label[1] == "unclean", p)
    if name == "reassign":
        return h.reassign(list(label[1]), p)
    if name == "shrink_isr":
        gone = {b, *label[2]}
        h.until(lambda: not gone & set(h.fold.parts[p]["isr"]), f"{sorted(gone)} out of the ISR",
                timeout=c.lag_ms / 1000 + h.timeout)
        return None
    return None                            # WAITED: the observation's settling gives it time
