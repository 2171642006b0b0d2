"""A metadata log's partition change explained by the model's controller (validate-log).

A record batch is one controller event's atomic write. The log shows or implies the event: a
fence, an unfence, a controlled shutdown or a registration of a broker beside the change; a
topic config change; and a partition change alone is an AlterPartition from the leader, an
admin or periodic election, or a reassignment step. Each event the batch can be is run through
the model's controller (specs/controller.py, the release's rules) on the controller the log has
built so far, and the change is explained when one of them writes the partition the log holds
after the batch. The log's values come in as plain dicts (the fold of
verifier/engines/cluster/metalog.py); the model's Controller is built from them here.
"""
from __future__ import annotations

from typing import Optional

from specs import controller as C
from specs.algebra import CONCRETE
from specs.config import Config
from specs.pipeline import PREFERRED, UNCLEAN
from specs.state import RECOVERY_NAMES, AlterPartitionRequest, Controller, Partition, sorted_tuple

FIELDS = ("replicas", "isr", "elr", "last_known_elr", "leader", "leader_epoch", "partition_epoch", "recovery",
          "adding", "removing")


def controller(part: dict, brokers: dict, min_isr: int, unclean: bool) -> Controller:
    """The model's controller of one partition as the log has it (broker epochs are Kafka's:
    only their equality matters to a rule)."""
    registered = sorted(brokers)
    p = Partition(replicas=tuple(part["replicas"]), isr=tuple(part["isr"]), elr=sorted_tuple(part["elr"]),
                  last_known_elr=sorted_tuple(part["last_known_elr"]), leader=part["leader"],
                  leader_epoch=part["leader_epoch"], partition_epoch=part["partition_epoch"],
                  leader_recovery_state=part["recovery"], adding_replicas=tuple(part.get("adding") or ()),
                  removing_replicas=tuple(part.get("removing") or ()), cleared_elr=tuple(part.get("cleared_elr") or ()))
    return Controller(p, tuple(registered), tuple(brokers[b]["epoch"] for b in registered),
                      tuple(b for b in registered if brokers[b]["fenced"]),
                      tuple(b for b in registered if brokers[b]["shutting_down"]), min_isr, unclean)


def fields(p: Partition) -> dict:
    return {"replicas": list(p.replicas), "isr": list(p.isr), "elr": sorted(p.elr),
            "last_known_elr": sorted(p.last_known_elr), "leader": p.leader, "leader_epoch": p.leader_epoch,
            "partition_epoch": p.partition_epoch, "recovery": p.leader_recovery_state,
            "adding": list(p.adding_replicas), "removing": list(p.removing_replicas)}


def _same(p: Partition, after: dict) -> bool:
    mine = fields(p)
    return all(mine[f] == (sorted(after.get(f) or []) if f in ("elr", "last_known_elr") else
                           list(after.get(f) or []) if f in ("replicas", "isr", "adding", "removing") else after.get(f))
               for f in FIELDS)


def events(cfg: Config, ctrl: Controller, batch: list, after: dict):
    """(name, its replay operation, the partition it writes) of every event this batch can be, in
    the model, those the batch shows first (a generator: the caller stops at the one that
    explains the change). The operation is the scenario step (docs/SCENARIOS.md) that replays
    the event on the model: a validate-log history is a scenario of them."""
    R, rules = CONCRETE, cfg.rules
    p = ctrl.partition

    def tried(name: str, op: dict, outcome) -> list:
        ok = outcome.error is None or outcome.error == C.NEW_LEADER_ELECTED
        return [(name, op, outcome.ctrl.partition)] if ok else []

    for rec in batch:
        d, kind = rec["data"], rec["type"]
        b = d.get("brokerId", d.get("id"))
        if kind == "FenceBrokerRecord" or (kind == "BrokerRegistrationChangeRecord" and d.get("fenced") == 1):
            yield from tried(f"fence b{b}", {"op": "fence", "broker": b}, C.fence(R, rules, ctrl, b))
            yield from tried(f"controlled shutdown of b{b}", {"op": "controlled_shutdown", "broker": b},
                             C.controlled_shutdown(R, rules, ctrl, b))
        if kind == "BrokerRegistrationChangeRecord" and d.get("inControlledShutdown") == 1:
            yield from tried(f"controlled shutdown of b{b}", {"op": "controlled_shutdown", "broker": b},
                             C.controlled_shutdown(R, rules, ctrl, b))
        if kind == "UnfenceBrokerRecord" or (kind == "BrokerRegistrationChangeRecord" and d.get("fenced") == -1):
            yield from tried(f"unfence b{b}", {"op": "unfence", "broker": b}, C.unfence(R, rules, ctrl, b))
        if kind == "RegisterBrokerRecord":
            epoch = d.get("brokerEpoch", rec["offset"])
            for clean in (True, False):
                yield from tried(f"{'clean' if clean else 'unclean'} registration of b{b}",
                                 {"op": "register", "broker": b, "clean_shutdown": clean, "new_broker_epoch": epoch},
                                 C.register(R, rules, ctrl, b, None, epoch, clean=clean))
        if kind == "ConfigRecord" and d.get("name") == "min.insync.replicas" and d.get("value"):
            value = int(d["value"])
            yield from tried(f"min.insync.replicas={value}", {"op": "set_min_isr", "value": value},
                             C.set_min_isr(R, rules, ctrl, value))
    leader = p.leader
    if leader in ctrl.registered:
        # the ISR the leader proposed: the one written, or (a reassignment completed by it, a
        # member that may not stay) the ISR before with the members the change brought in
        proposals = {tuple(after["isr"]), tuple(sorted(set(p.isr) | set(after["isr"]))),
                     tuple(sorted(set(p.isr) - set(after["replicas"]) | set(after["isr"])))}
        sender = ctrl.broker_epochs[ctrl.registered.index(leader)]
        for isr in sorted(proposals):
            epochs = tuple(ctrl.broker_epochs[ctrl.registered.index(m)] if m in ctrl.registered else -1 for m in isr)
            for recovery in sorted({after["recovery"], p.leader_recovery_state}):
                req = AlterPartitionRequest(leader, sender, p.leader_epoch, p.partition_epoch, isr, epochs, recovery)
                op = {"op": "alter_partition", "broker": leader, "request_broker_epoch": sender,
                      "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch, "isr": list(isr),
                      "broker_epochs": {str(m): e for m, e in zip(isr, epochs)},
                      "leader_recovery_state": RECOVERY_NAMES[recovery]}
                yield from tried(f"AlterPartition from b{leader} isr={list(isr)}", op,
                                 C.alter_partition(R, rules, ctrl, req))
    for kind in (PREFERRED, UNCLEAN):
        yield from tried(f"ElectLeaders {kind}", {"op": "elect", "type": kind}, C.elect(R, rules, ctrl, kind))
    yield from tried("the periodic unclean election", {"op": "periodic_unclean_election"},
                     C.periodic_unclean_election(R, rules, ctrl))
    target = tuple(r for r in after["replicas"] if r not in (after.get("removing") or []))
    if target and tuple(target) != p.replicas:
        yield from tried(f"reassignment to {list(target)}", {"op": "reassign", "replicas": list(target)},
                         C.reassign(R, rules, ctrl, target))


_SEEN: dict = {}          # a change met before (another partition of the same shape): its answer, for "cfg"


_BATCH: list = [None, None, None, None]     # the last batch and brokers seen, and their keys


def _frozen(d: dict, le: int, pe: int) -> tuple:
    """A partition's fields as a key, its epochs relative to (le, pe)."""
    return (tuple(d["replicas"]), tuple(d["isr"]), tuple(d["elr"]), tuple(d["last_known_elr"]), d["leader"],
            d["leader_epoch"] - le, d["partition_epoch"] - pe, d["recovery"], tuple(d.get("adding") or ()),
            tuple(d.get("removing") or ()), tuple(d.get("cleared_elr") or ()))


def _key(cfg: Config, part: dict, brokers: dict, min_isr: int, unclean: bool, batch: list, after: dict) -> tuple:
    """What an answer depends on, beside the config (whose answers alone the cache holds): the
    partition before and after, the brokers, the topic's settings, and the batch's records that
    are not partition records (its event). The events read epochs only
    against each other (a bump, a request at the partition's own epochs), so a change is keyed
    by its epochs relative to the partition's before it. A batch changes many partitions with
    one event: its and the brokers' keys are made once a batch."""
    if _BATCH[0] is not batch or _BATCH[1] is not brokers:
        _BATCH[0], _BATCH[1] = batch, brokers
        _BATCH[2] = tuple((r["type"], tuple(sorted((k, str(v)) for k, v in r["data"].items()))) for r in batch
                          if r["type"] not in ("PartitionChangeRecord", "PartitionRecord", "NoOpRecord"))
        _BATCH[3] = tuple(sorted((b, tuple(sorted(v.items()))) for b, v in brokers.items()))
    le, pe = part["leader_epoch"], part["partition_epoch"]
    return _frozen(part, le, pe), _frozen(after, le, pe), _BATCH[3], min_isr, unclean, _BATCH[2]


def explain(cfg: Config, part: dict, brokers: dict, min_isr: int, unclean: bool, batch: list,
            after: dict) -> tuple[Optional[str], Optional[dict], list]:
    """(the event that writes `after`, its replay operation, []), or (None, None, what every event
    tried writes instead).
    A change of the same shape as one met before (a fence moves every partition of a broker
    alike) is answered from that one."""
    if _SEEN.get("cfg") is not cfg:       # answers are a config's (its rules): another config's are dropped
        _SEEN.clear()
        _SEEN["cfg"] = cfg
    key = _key(cfg, part, brokers, min_isr, unclean, batch, after)
    if key not in _SEEN:
        if len(_SEEN) > 100_000:
            _SEEN.clear()
            _SEEN["cfg"] = cfg
        _SEEN[key] = _explain(cfg, part, brokers, min_isr, unclean, batch, after)
    return _SEEN[key]


def _explain(cfg: Config, part: dict, brokers: dict, min_isr: int, unclean: bool, batch: list,
             after: dict) -> tuple[Optional[str], Optional[dict], list]:
    tried = []
    for name, op, p in events(cfg, controller(part, brokers, min_isr, unclean), batch, after):
        if _same(p, after):
            return name, op, []
        tried.append((name, fields(p)))
    return None, None, tried
