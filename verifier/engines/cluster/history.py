"""A partition's history in a metadata log, up to the record that broke a check, as a replay
scenario of the model (validate-log's evidence, docs/validate.md).

The first pass (validate.py) keeps memory bounded by the partitions: it remembers no history.
When a check is broken, a second pass reads the log again and, for each broken check's first
finding only, writes the partition's story as the model would replay it: the partition as its
PartitionRecord created it (the brokers' registrations, fencing and epochs then) as `initial`,
then one operation a batch, the controller event the model's rules found for it
(specs/metadata.py: a fence, an unfence, a registration, an AlterPartition, an election, a
reassignment step, a min ISR change), each followed by an `expect` of the leader, ISR, ELR and
epochs the log holds after it. Batches that touch the partition's brokers or its topic's
settings without changing it are steps too, so the model's controller keeps the same brokers.

`kraft-verify replay` then runs the history on the release's own preset: the model writes what
the log holds at every step, and at the last one breaks the same invariant (expect_violation).
A change no event explains ends the history at the state before it, the record in the notes.
"""
from __future__ import annotations

from typing import Optional

from verifier.engines.cluster.metalog import RECOVERING, Metadata

INVARIANTS = ("LeaderInIsr", "IsrElrDisjoint", "ElrOnlyBelowMinIsr", "LeaderElectedRegisteredUnfenced",
              "ElectedLeaderWasCandidate", "OneLeaderPerEpoch")      # the model's names for the log's checks
BROKER_RECORDS = ("RegisterBrokerRecord", "FenceBrokerRecord", "UnfenceBrokerRecord", "BrokerRegistrationChangeRecord")


def _expect(p: dict) -> dict:
    return {"leader": p["leader"], "isr": list(p["isr"]), "elr": sorted(p["elr"]),
            "last_known_elr": sorted(p["last_known_elr"]), "leader_epoch": p["leader_epoch"],
            "partition_epoch": p["partition_epoch"]}


class History(Metadata):
    """The fold, recording the partitions of `targets` ({partition name: (check, offset)}) and
    leaving each one's scenario in `done` ({check: scenario}) at its offset."""

    def __init__(self, default_min_isr: int, targets: dict, done: dict, preset: str) -> None:
        super().__init__(default_min_isr)
        self.targets, self.done, self.preset = targets, done, preset     # shared by the folds a snapshot restarts
        self.open: dict = {}             # key -> scenario being written

    @property
    def finished(self) -> bool:
        return not self.targets

    def name(self, key) -> str:
        return f"{self.topics.get(key[0], key[0])}-{key[1]}"

    def apply_batch(self, records: list) -> None:
        keys = [k for k in self.open]
        before = {k: (dict(self.partitions[k]), {b: dict(v) for b, v in self.brokers.items()},
                      self.raw_min_isr(k[0]), self.unclean_enabled(k[0])) for k in keys}
        super().apply_batch(records)
        for key in keys:
            if self.explainer is None:    # a snapshot: a whole state, read to its end before the history starts
                self.open[key]["initial"], self.open[key]["config"] = self._initial(key)
            else:
                self._step(key, records, *before[key])
        for rec in records:               # a target created in this batch starts its history
            d = rec["data"]
            if rec["type"] == "PartitionRecord":
                key = (d["topicId"], d.get("partitionId", 0))
                if self.name(key) in self.targets and key not in self.open:
                    self._start(key, rec)
                    self._finish_if_due(key, records)

    def _start(self, key, rec) -> None:
        initial, config = self._initial(key)
        self.open[key] = {
            "name": f"history-{self.name(key)}", "kind": "history",
            "source": f"validate-log: {self.name(key)} as its metadata log records it, from its PartitionRecord "
                      f"at offset {rec['offset']}",
            "check_invariants": list(INVARIANTS), "config": config, "initial": initial, "steps": []}

    def _initial(self, key) -> tuple[dict, dict]:
        """The scenario's `initial` and `config`: the partition, its brokers and settings now."""
        p, registered = self.partitions[key], sorted(self.brokers)
        config = {"preset": self.preset, "replicas": list(p["replicas"]), "min_isr": self.raw_min_isr(key[0]),
                  "unclean_leader_election": self.unclean_enabled(key[0])}
        initial = {"leader": p["leader"], "isr": list(p["isr"]), "elr": sorted(p["elr"]),
                   "last_known_elr": sorted(p["last_known_elr"]), "leader_epoch": p["leader_epoch"],
                   "partition_epoch": p["partition_epoch"],
                   "leader_recovery_state": "RECOVERING" if p["recovery"] == RECOVERING else "RECOVERED",
                   "adding_replicas": list(p["adding"]), "removing_replicas": list(p["removing"]),
                   "broker_epochs": {str(b): self.brokers[b]["epoch"] for b in registered},
                   "fenced": [b for b in registered if self.brokers[b]["fenced"]],
                   "in_controlled_shutdown": [b for b in registered if self.brokers[b]["shutting_down"]]}
        return initial, config

    def _relevant(self, key, records: list) -> bool:
        """A batch that changes the partition's brokers or its topic's settings."""
        topic = self.topics.get(key[0])
        return any(r["type"] in BROKER_RECORDS or (r["type"] == "ConfigRecord" and r["data"].get("resourceName")
                                                   in (topic, "")) for r in records)

    def _step(self, key, records: list, part: dict, brokers: dict, min_isr: int, unclean: bool) -> None:
        scenario, after = self.open[key], self.partitions[key]
        steps = scenario["steps"]
        first, last = records[0]["offset"], records[-1]["offset"]
        where = f"offset {first}" if first == last else f"offsets {first}-{last}"
        changed = after != part
        topic = self.topics.get(key[0])
        unclean_set = [r["data"]["value"] == "true" for r in records if r["type"] == "ConfigRecord"
                       and r["data"].get("name") == "unclean.leader.election.enable"
                       and r["data"].get("resourceName") in (topic, "") and r["data"].get("value") is not None]
        if unclean_set and not changed:   # no event of the explainer: it changes no partition by itself
            steps.append({"op": "set_unclean", "value": unclean_set[-1],
                          "comment": f"{where}: unclean.leader.election.enable={unclean_set[-1]}"})
        elif changed or self._relevant(key, records):
            event, op, tried = self.explainer(part, brokers, min_isr, unclean, records, after)
            if op is None and changed:
                steps.append({"expect": _expect(part), "comment": f"{where}: no controller event of the model writes "
                                         f"{_expect(after)} from the state before (the batch: "
                                         f"{', '.join(r['type'] for r in records)}); the history ends here"})
                self._close(key, None)
                return
            if op is not None:
                steps.append(dict(op, comment=f"{where}: {event}"))
                steps.append({"expect": _expect(after)})
            else:                         # a broker or config record no modelled event reads: noted
                steps.append({"expect": _expect(after), "comment": f"{where}: {', '.join(r['type'] for r in records)}, "
                                                                  "no event of the model, no change to the partition"})
        self._finish_if_due(key, records)

    def _finish_if_due(self, key, records: list) -> None:
        check, offset = self.targets[self.name(key)]
        if key in self.open and any(r["offset"] == offset for r in records):
            self._close(key, check if check in INVARIANTS else None)

    def _close(self, key, check: Optional[str]) -> None:
        scenario = self.open.pop(key)
        want, offset = self.targets.pop(self.name(key))
        if check is not None:
            scenario["steps"].append({"expect_violation": [check]})
        scenario["notes"] = (f"{want} is broken at offset {offset}: replayed on the model, "
                             + (f"its last step breaks {check} too" if check else
                                "the history stops before the record no controller event of the model writes "
                                "(its last step's comment)"))
        self.done[want] = scenario


def targets(broken: dict) -> dict:
    """{partition name: (check, offset)}: each broken check's first finding ({check: Finding}),
    one history a partition (its first finding's)."""
    out: dict = {}
    for check, f in broken.items():
        out.setdefault(f.partition, (check, f.offset))
    return out


