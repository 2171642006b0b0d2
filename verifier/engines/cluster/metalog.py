"""A KRaft metadata log folded record by record, every partition of every topic, and the metadata
invariants checked at each record, named as the model names them (invariants/).

What a record changes is Kafka's own reading of it: a PartitionChangeRecord names only the
fields it changes, a leader change bumps the leader epoch, every change bumps the partition
epoch, a ClearElrRecord empties ELR and last known ELR (and bumps the partition epoch when it
changed them), a broker is fenced or unfenced by its records. What the log cannot say (the
default min.insync.replicas of the brokers' own configuration) is an option.

The checks, at the record that breaks them (the state before it is kept for the report):
- LeaderInIsr: a partition's leader is -1 or in its ISR;
- IsrElrDisjoint: no broker is in both ISR and ELR;
- ElrOnlyBelowMinIsr: ELR is empty while the ISR reaches the effective min ISR (the topic's,
  capped at the replicas);
- LeaderElectedRegisteredUnfenced: a broker that becomes leader is registered, unfenced and not
  in controlled shutdown when it is elected;
- ElectedLeaderWasCandidate: a broker that becomes leader was in the ISR or ELR before (or in
  the ISR the record sets: an AlterPartition's or a reassignment's target), or the election is
  marked unclean (leader recovery state RECOVERING);
- OneLeaderPerEpoch: a PartitionRecord of a partition already known does not take its epochs
  back;
- EveryChangeExplained (with an explainer, Model.explain_change): a batch's partition change is
  what one controller event of the model writes from the state before the batch.
An unclean election (RECOVERING) is not a violation of these, but it is listed with who could
have chosen it: the topic's unclean.leader.election.enable, or, with it off, the controller's
own election of its last known leader (or an operator's ElectLeaders UNCLEAN, which the log
cannot tell apart).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable, Optional

NO_CHANGE, RECOVERY_NO_CHANGE, RECOVERING = -2, -1, 1
CHECKS = ("LeaderInIsr", "IsrElrDisjoint", "ElrOnlyBelowMinIsr", "LeaderElectedRegisteredUnfenced",
          "ElectedLeaderWasCandidate", "OneLeaderPerEpoch", "EveryChangeExplained")
TOPIC, CLUSTER = 2, 4            # ConfigRecord resource types
KEPT = 100                       # findings of each kind kept whole (the rest counted)


@dataclass
class Finding:
    """A record that breaks a check, or an unclean election."""
    name: str                    # the property (or "UncleanElection")
    partition: str               # topic-partition
    offset: int
    record: str                  # its type
    data: dict
    before: Optional[dict]       # the partition before it
    why: str


@dataclass
class Metadata:
    """The state a log's records build: topics, partitions, brokers, configs."""
    default_min_isr: int = 1
    topics: dict = field(default_factory=dict)          # topic id -> name
    partitions: dict = field(default_factory=dict)      # (topic id, partition) -> dict
    brokers: dict = field(default_factory=dict)         # id -> {epoch, fenced, shutting_down}
    configs: dict = field(default_factory=dict)         # (resource type, name) -> {config: value}
    records: int = 0
    findings: list = field(default_factory=list)        # the first KEPT of each kind
    counted: dict = field(default_factory=dict)         # kind -> how many
    broken: dict = field(default_factory=dict)          # property -> its first Finding
    explainer: Optional[Callable] = None                # Model.explain_change, or None: not asked
    explained: int = 0                                  # partition changes a controller event explains
    only: Optional[frozenset] = None                    # topics and topic-partitions checked (None: all)

    def wanted(self, key) -> bool:
        """Whether partition `key` is one `only` names (by its topic or its topic-partition)."""
        if self.only is None:
            return True
        topic = self.topics.get(key[0], key[0])
        return topic in self.only or f"{topic}-{key[1]}" in self.only

    def apply(self, rec: dict) -> None:
        """Fold one record in, checking what it changes."""
        self.records += 1
        getattr(self, "_" + rec["type"], lambda r: None)(rec)

    def apply_batch(self, records: list) -> None:
        """Fold a batch (one controller event's write) in; with an explainer, each partition it
        changes must be what one event of the model's controller writes from the state before."""
        touched = {k for k in self._touched(records) if self.wanted(k)} if self.explainer is not None else set()
        if not touched:                   # no partition of the log before it changes: nothing to explain
            for rec in records:
                self.apply(rec)
            return
        parts = {k: dict(self.partitions[k]) for k in touched}
        brokers = copy.deepcopy(self.brokers)
        settings = {k: (self.raw_min_isr(k[0]), self.unclean_enabled(k[0])) for k in parts}
        for rec in records:
            self.apply(rec)
        for key, before in parts.items():
            after = self.partitions.get(key)
            if after is None or after == before:
                continue
            min_isr, unclean = settings[key]
            event, _, tried = self.explainer(before, brokers, min_isr, unclean, records, after)
            if event is not None:
                self.explained += 1
                continue
            shown = "; ".join(f"{name} writes isr={p['isr']} elr={p['elr']} leader={p['leader']}"
                              for name, p in tried[:4]) or "no event the batch shows or implies"
            mine = [x for x in records if x["type"] in ("PartitionChangeRecord", "PartitionRecord")
                    and (x["data"]["topicId"], x["data"].get("partitionId", 0)) == key]
            r = (mine or [x for x in records if x["type"] == "ClearElrRecord"])[0]     # this partition's record
            self._found("EveryChangeExplained", key, r, before,
                        f"no controller event of the model writes leader={after['leader']} isr={after['isr']} "
                        f"elr={after['elr']} last_known_elr={after['last_known_elr']} from the state before "
                        f"(the batch: {', '.join(x['type'] for x in records)}); the model's: {shown}")

    # ---------------------------------------------------------------- brokers and configs
    def _RegisterBrokerRecord(self, r):
        d = r["data"]
        self.brokers[d["brokerId"]] = {"epoch": d.get("brokerEpoch", r["offset"]), "fenced": bool(d.get("fenced", True)),
                                       "shutting_down": bool(d.get("inControlledShutdown", False))}

    def _UnregisterBrokerRecord(self, r):
        self.brokers.pop(r["data"]["brokerId"], None)

    def _BrokerRegistrationChangeRecord(self, r):
        d = r["data"]
        b = self.brokers.get(d["brokerId"])
        if b is not None:
            if d.get("fenced", 0) in (1, -1):
                b["fenced"] = d["fenced"] == 1
            if d.get("inControlledShutdown", 0) in (1, -1):
                b["shutting_down"] = d["inControlledShutdown"] == 1

    def _FenceBrokerRecord(self, r):
        if r["data"]["id"] in self.brokers:
            self.brokers[r["data"]["id"]]["fenced"] = True

    def _UnfenceBrokerRecord(self, r):
        if r["data"]["id"] in self.brokers:
            self.brokers[r["data"]["id"]]["fenced"] = False

    def _TopicRecord(self, r):
        self.topics[r["data"]["topicId"]] = r["data"]["name"]

    def _ConfigRecord(self, r):
        d = r["data"]
        self.configs.setdefault((d.get("resourceType"), d.get("resourceName")), {})[d["name"]] = d.get("value")

    def config(self, topic_id: str, name: str) -> Optional[str]:
        """A topic's config as set: the topic's own, else the cluster's (None: neither set it)."""
        return (self.configs.get((TOPIC, self.topics.get(topic_id)), {}).get(name)
                or self.configs.get((CLUSTER, ""), {}).get(name))

    def raw_min_isr(self, topic_id: str) -> int:
        """The topic's min.insync.replicas as set (not capped at the replicas), else the brokers' default."""
        value = self.config(topic_id, "min.insync.replicas")
        return int(value) if value else self.default_min_isr

    def min_isr(self, topic_id: str, replicas: list) -> int:
        """The effective min ISR: the topic's, at most the replicas."""
        return min(self.raw_min_isr(topic_id), len(replicas))

    def unclean_enabled(self, topic_id: str) -> bool:
        return self.config(topic_id, "unclean.leader.election.enable") == "true"

    def _touched(self, records: list) -> set:
        """The partitions (known before the batch) its records may change."""
        keys = set()
        for rec in records:
            d = rec["data"]
            if rec["type"] in ("PartitionChangeRecord", "PartitionRecord"):
                keys.add((d["topicId"], d.get("partitionId", 0)))
            elif rec["type"] == "ClearElrRecord":
                keys |= {k for k in self.partitions if d.get("topicId") in (None, "", k[0])
                         and d.get("topicName") in (None, "", self.topics.get(k[0]))}
        return {k for k in keys if k in self.partitions}

    # ---------------------------------------------------------------- partitions
    def _PartitionRecord(self, r):
        d = r["data"]
        key = (d["topicId"], d.get("partitionId", 0))
        before = self.partitions.get(key)
        p = {"replicas": list(d["replicas"]), "isr": list(d["isr"]), "elr": list(d.get("eligibleLeaderReplicas") or []),
             "last_known_elr": list(d.get("lastKnownElr") or []), "leader": d["leader"],
             "leader_epoch": d["leaderEpoch"], "partition_epoch": d["partitionEpoch"],
             "recovery": d.get("leaderRecoveryState", 0), "adding": list(d.get("addingReplicas") or []),
             "removing": list(d.get("removingReplicas") or [])}
        if before is not None and (p["leader_epoch"] < before["leader_epoch"]
                                   or p["partition_epoch"] < before["partition_epoch"]):
            self._found("OneLeaderPerEpoch", key, r, before,
                        f"the partition is recorded again with leader epoch {p['leader_epoch']} and partition epoch "
                        f"{p['partition_epoch']}, below {before['leader_epoch']} and {before['partition_epoch']}")
        self.partitions[key] = p
        self._check(key, r, before, p)

    def _PartitionChangeRecord(self, r):
        d = r["data"]
        key = (d["topicId"], d.get("partitionId", 0))
        before = self.partitions.get(key)
        if before is None:
            return
        p = dict(before)
        for name, f in (("isr", "isr"), ("replicas", "replicas"), ("eligibleLeaderReplicas", "elr"),
                        ("lastKnownElr", "last_known_elr"), ("addingReplicas", "adding"),
                        ("removingReplicas", "removing")):
            if d.get(name) is not None:
                p[f] = list(d[name])
        if d.get("leader", NO_CHANGE) != NO_CHANGE:
            p["leader"], p["leader_epoch"] = d["leader"], before["leader_epoch"] + 1
        if d.get("leaderRecoveryState", RECOVERY_NO_CHANGE) != RECOVERY_NO_CHANGE:
            p["recovery"] = d["leaderRecoveryState"]
        p["partition_epoch"] = before["partition_epoch"] + 1
        self.partitions[key] = p
        self._check(key, r, before, p)

    def _ClearElrRecord(self, r):
        d = r["data"]
        for key, p in list(self.partitions.items()):
            if d.get("topicId") in (None, "", key[0]) and d.get("topicName") in (None, "", self.topics.get(key[0])):
                if p["elr"] or p["last_known_elr"]:     # the ELR index keeps the members' entries
                    self.partitions[key] = dict(p, elr=[], last_known_elr=[], partition_epoch=p["partition_epoch"] + 1,
                                                cleared_elr=sorted((p.get("cleared_elr") or []) + p["elr"]))

    def _check(self, key, r, before: Optional[dict], p: dict) -> None:
        if not self.wanted(key):
            return
        name = f"{self.topics.get(key[0], key[0])}-{key[1]}"
        if p["leader"] != -1 and p["leader"] not in p["isr"]:
            self._found("LeaderInIsr", key, r, before, f"{name}'s leader b{p['leader']} is not in isr={p['isr']}")
        both = sorted(set(p["isr"]) & set(p["elr"]))
        if both:
            self._found("IsrElrDisjoint", key, r, before, f"{name}'s {both} are in both isr={p['isr']} and elr={p['elr']}")
        least = self.min_isr(key[0], p["replicas"])
        if p["elr"] and len(p["isr"]) >= least:
            self._found("ElrOnlyBelowMinIsr", key, r, before,
                        f"{name}'s elr={p['elr']} is not empty although |isr|={len(p['isr'])} reaches the effective "
                        f"min ISR {least}")
        elected = p["leader"] != -1 and (before is None or p["leader"] != before["leader"])
        if elected and before is not None:
            b = self.brokers.get(p["leader"])
            if b is None or b["fenced"] or b["shutting_down"]:
                what = "not registered" if b is None else "fenced" if b["fenced"] else "in controlled shutdown"
                self._found("LeaderElectedRegisteredUnfenced", key, r, before,
                            f"{name} elected b{p['leader']}, which is {what}")
            unclean = p["recovery"] == RECOVERING and before.get("recovery") != RECOVERING
            # a record that sets the ISR elects from it (an AlterPartition's, a reassignment's
            # target: the model's deliver_alter_partition), any other from the ISR and ELR before it
            target = p["isr"] if r["data"].get("isr") is not None else []
            if p["leader"] not in before["isr"] + before["elr"] + target and not unclean:
                self._found("ElectedLeaderWasCandidate", key, r, before,
                            f"{name} elected b{p['leader']}, in neither isr={before['isr']} nor elr={before['elr']}"
                            + (f" nor the isr={target} it set" if target else "") + ", and did not mark it unclean")
            if unclean:
                who = ("the topic's unclean.leader.election.enable=true" if self.unclean_enabled(key[0]) else
                       "unclean.leader.election.enable is false: the controller's own election of its last known "
                       "leader, or an operator's ElectLeaders UNCLEAN")
                self._keep(Finding("UncleanElection", name, r["offset"], r["type"], r["data"], before,
                                   f"{name} elected b{p['leader']} uncleanly (RECOVERING), out of "
                                   f"isr={before['isr']} elr={before['elr']}; who: {who}"))

    def _found(self, prop: str, key, r, before, why: str) -> None:
        if not self.wanted(key):
            return
        name = f"{self.topics.get(key[0], key[0])}-{key[1]}"
        self._keep(Finding(prop, name, r["offset"], r["type"], r["data"], before, why))

    def _keep(self, f: Finding) -> None:
        """Every finding counted; the first KEPT of each kind kept whole (memory stays bounded by
        the partitions however many records break a property)."""
        self.counted[f.name] = self.counted.get(f.name, 0) + 1
        if self.counted[f.name] <= KEPT:
            self.findings.append(f)
        if f.name != "UncleanElection":
            self.broken.setdefault(f.name, f)
