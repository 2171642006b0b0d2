"""Several partitions on Kafka's side (the conform engine, issue 59): the lifted model's steps as
the requests one Kafka controller receives for a topic of that many partitions, and its state in
the oracle's report vocabulary, partition by partition.

Every projection is the one-partition model's (specs/projection.py), applied to the partition
that took the step:
- a partition's own step (`("partition", p)`) is its request with the partition it names
  (an AlterPartition, an admin election and a reassignment carry `"partition": p`; the oracle
  sends them for that partition);
- a broker's or the topic's event is one request (a heartbeat, a registration, a session that
  lapses, a config change, the periodic unclean election): Kafka's controller walks the broker's
  partitions itself, which is what conform compares. It is projected from the first partition
  that took the event itself (not its fallback: a lossy crash's crash elsewhere is invisible to
  the controller all the same).
The view holds each partition's registration and ELR index entries under `partitions` and
`elr_index` (keyed "0", "1", ...); what the partitions share (the broker registry, the topic
config) once. Kafka's BrokersToElrs is one index for every partition, so the entries another
partition's removal leaves for partition 0 (F5, specs/elr_index.py) are compared there.
"""
from __future__ import annotations

from typing import Optional

from specs import actions as A
from specs import projection as P


class KafkaSide:
    """PartitionsModel's conform hooks (specs/model.Model's, lifted); `self.one` is a
    partition's own config and `self.partitions` how many there are."""

    def _each(self, label: tuple) -> list:
        from specs.partitions import labels_of
        return labels_of(label, self.partitions)

    def _taker(self, label: tuple) -> int:
        """The partition a request is projected from: the one that took the step, or for a
        broker's or the topic's event the first that took the event itself."""
        each = self._each(label)
        return next(p for p, mine in enumerate(each) if mine is not None and mine[0] == label[0])

    def kafka_start(self, state) -> dict:
        init = P.initial(self.one, state[0])
        init.pop("partition", None)
        init["partitions"] = self.partitions
        overrides = {str(p): own for p, part in enumerate(state)
                     if (own := P.initial(self.one, part).get("partition")) is not None}
        if overrides:
            init["overrides"] = overrides
        return init

    def kafka_request(self, state, label: tuple, after) -> dict:
        p = self._taker(label)
        op = P.project(self.one, state[p], self._each(label)[p], after[p])
        if op["op"] in ("alter_partition", "elect", "reassign"):
            op["partition"] = p
        return op

    def kafka_view(self, state, error) -> dict:
        views = [P.view(part, error) for part in state]
        return {"partitions": {str(p): v["partition"] for p, v in enumerate(views)}, "brokers": views[0]["brokers"],
                "elr_index": {str(p): v["elr_index"] for p, v in enumerate(views)},
                "min_isr": views[0]["min_isr"], "unclean": views[0]["unclean"], "error": error}

    kafka_set_fields = P.SET_FIELDS

    def kafka_lacks(self, label: tuple) -> Optional[str]:
        """Why no Kafka release can take this step (a partition's own step, or any partition's
        part of a broker's event): the one-partition model's reason."""
        return next((why for mine in self._each(label) if mine is not None and (why := P.unsupported(mine))), None)

    def impossible_start(self, state) -> Optional[str]:
        return next((f"partition {p}: {why}" for p, part in enumerate(state)
                     if (why := P.impossible_start(self.one, part))), None)

    def apply(self, state, label: tuple):
        """(the state after `label`, the error the controller answered): the error of the
        partition the request is projected from (`_taker`)."""
        p = self._taker(label)
        return self.step(state, label), A.step(self.one, state[p], self._each(label)[p])[1]

    def allows(self, state, label: tuple) -> bool:
        """Whether the lifted step `label` is one the model takes in `state`, bounds aside (its
        labels only: a step past the bounds has no state worth making)."""
        return label in self.enabled_labels(state)
