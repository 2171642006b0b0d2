"""Conform's own walk sets, beside the matrix's bound sets (verifier/studies/matrix.py), and
the sets `make conform` and CI walk.

The matrix's sets are sized for exhaustive search; walked, they never take a controlled
shutdown and rarely an unclean election, so a model wrong there agreed with Kafka. These two
fill that in, for every release (none needs ELR, so 3.9 walks them too), and others walk
cluster settings no preset has:

- `shutdowns`: controlled shutdowns and the clean stop after them, both kinds of crash, and
  admin elections (a preferred one after the leader moved; refused ones: the preferred replica
  already leads or cannot lead), with the periodic preferred election that moves a leader back
  unasked (auto.leader.rebalance.enable, a cluster setting: rule auto_leader_rebalance);
- `epoch-bump`: a cluster at metadata.version 3.5-IV2, where an ISR shrink still bumps the leader
  epoch (KAFKA-15021 stopped it in 3.6), so ELR is off; a cluster setting, not a rule of the
  release (specs/projection.CLUSTER_SETTINGS), and the only way to reach PartitionChangeBuilder's
  epoch-bump branches;
- `unclean`: two replicas with min ISR 1 and no leader-initiated ISR shrink, so fences and
  crashes leave the partition leaderless within a few steps; unclean.leader.election.enable toggled often
  (weight 3, set_min_isr 0.2) within six config changes, and the periodic unclean election
  taken when it can be (weight 20): it needs a leaderless partition whose topic has just
  enabled unclean elections, which plain walks reach once in tens of thousands of steps. Kafka's
  controller classes log at INFO in it (`controller_log`), where they log nothing elsewhere but
  in `make conform`'s scenario files (DEBUG): each logging path runs and is compared once.

- `held-leader`: a leader cut off from the controller (issue 59, bound metadata_lag): the
  controller's side of it is that the held broker cannot heartbeat, shut down or send an
  AlterPartition until its metadata is delivered, while fences depose it; its own steps (the
  stale produce, its HWM) touch no controller state, so the walks compare what the controller
  does around them.

- `two-partitions`: a topic of two partitions on the same three brokers (issue 59): every broker
  event walks both in Kafka's controller, a partition's own step names one; controlled
  shutdowns of a broker that leads the other partition, admin elections, crashes, and a config
  change that leaves stale ELR index entries to move across partitions (F5), and the periodic
  preferred election over both partitions at once. Its walks are the
  lifted model's (specs/partitions.py), about a tenth as fast: `make conform` walks it a tenth of
  the other sets' steps (`share`), and it is not one of CONFORM_SETS, whose every walk CI and the
  mutant gate take with the one-partition model.

- `unstable-elr`: Kafka 3.9's ELR, which it runs only at its unstable metadata version 4.0-IV0
  with the controller's ELR setting (as 3.9's own tests run it; no 3.9 cluster runs it
  otherwise): fences, both crashes, a clean stop and an admin election with ELR on. No config
  change: 3.9 writes no ClearElrRecord (4.0 added it), so a min.insync.replicas change keeps the
  ELR there, which no rule of the model says (conform diverges at once with one). Walked only for
  a release whose preset has ELR off (`unstable`): the others walk ELR in every set. The only
  way conform reaches 3.9's ELR code (most of its PartitionChangeBuilder).

The first two offer refused requests (walks.py), at most two per walk. The actions no release has
(KIP-966's unclean recovery rounds, the designated election) are in no set: conform refuses a
config that enables them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from specs import make_config
from verifier.engines.conform.walks import Plan


@dataclass(frozen=True)
class WalkSet:
    doc: str
    bounds: dict
    replicas: tuple = (1, 2, 3)
    min_isr: Optional[int] = None
    plan: Plan = field(default_factory=Plan)
    flags: dict = field(default_factory=dict)     # rules a cluster can be set to run (specs.projection.CLUSTER_SETTINGS)
    partitions: int = 1                           # the topic's partitions (more than one: specs/partitions.py)
    share: float = 1.0                            # of `make conform`'s walk steps per set
    controller_log: str = ""                      # Kafka's controller classes log at this level (oracle.LOG_LEVELS)
    unstable: bool = False                        # walked only where the release runs it at an unstable version


WALK_SETS = {
    "shutdowns": WalkSet(
        "controlled shutdowns, clean stops, crashes and admin elections, with refused requests",
        {"clean_shutdowns": 2, "crashes": 1, "lossy_crashes": 1, "admin_elections": 2},
        plan=Plan(refusals=2), flags={"auto_leader_rebalance": True}),
    "unclean": WalkSet(
        "leaderless partitions and unclean elections: two replicas, min ISR 1, no ISR shrink, "
        "unclean.leader.election.enable toggled, the periodic unclean election preferred",
        {"fences": 3, "crashes": 2, "lossy_crashes": 0, "isr_shrinks": 0, "config_changes": 6,
         "admin_elections": 1},
        replicas=(1, 2), min_isr=1, controller_log="info",
        plan=Plan(refusals=2, weights={"set_unclean": 3.0, "periodic_unclean_election": 20.0, "set_min_isr": 0.2})),
    "epoch-bump": WalkSet(
        "metadata.version 3.5-IV2 (before KAFKA-15021): an ISR shrink bumps the leader epoch; ELR off, which "
        "that metadata version cannot run; two ISR shrinks and a config change",
        {"isr_shrinks": 2, "config_changes": 1},
        flags={"leader_epoch_bump_on_isr_shrink": True, "elr": False}),
    "held-leader": WalkSet(
        "a leader cut off from the controller (metadata_lag 1): its held metadata, stale produces, the fences "
        "that depose it while it cannot heartbeat, and the delivery",
        {"metadata_lag": 1, "fences": 2}),
    "two-partitions": WalkSet(
        "a topic of two partitions on three brokers: controlled shutdowns of a broker leading the other "
        "partition, admin elections, crashes, a config change (F5's stale ELR index entries across partitions)",
        {"clean_shutdowns": 1, "crashes": 1, "lossy_crashes": 1, "admin_elections": 1, "config_changes": 1},
        partitions=2, share=0.1, flags={"auto_leader_rebalance": True}),
    "unstable-elr": WalkSet(
        "Kafka 3.9 at its unstable metadata version 4.0-IV0 with ELR on: fences, crashes, a clean stop and an "
        "admin election (no config change: 3.9 writes no ClearElrRecord)",
        {"fences": 3, "crashes": 1, "lossy_crashes": 1, "clean_shutdowns": 1, "config_changes": 0, "isr_shrinks": 2,
         "admin_elections": 1},
        flags={"elr": True}, unstable=True),
}

# What `make conform` (bench/conform_bench.py) and CI (tests/verifier/engines/test_conform.py) walk per
# release: the matrix's four sets as before, then conform's own.
MATRIX_SETS = ("default", "config", "min-isr-above-rf", "admin+reassignment")
CONFORM_SETS = MATRIX_SETS + tuple(n for n, ws in WALK_SETS.items() if ws.partitions == 1 and not ws.unstable)
PARTITION_SETS = tuple(n for n, ws in WALK_SETS.items() if ws.partitions > 1)
UNSTABLE_SETS = tuple(n for n, ws in WALK_SETS.items() if ws.unstable)       # where the preset has ELR off


def controller_log(name: str) -> str:
    """The level a set's walks run Kafka's controller classes at ("": none; the matrix's sets too)."""
    return WALK_SETS[name].controller_log if name in WALK_SETS else ""


def walk_config(preset: str, name: str, mutant: Optional[str] = None):
    """The config of one of conform's own walk sets under `preset` (and a mutant)."""
    ws = WALK_SETS[name]
    return make_config(preset, replicas=list(ws.replicas), min_isr=ws.min_isr, bounds=dict(ws.bounds),
                       mutant=mutant, flags=dict(ws.flags) or None, partitions=ws.partitions)


def model_of(cfg):
    """The model a set's walks take: one partition's, or several lifted from it."""
    from specs import Model, PartitionsModel
    return PartitionsModel(cfg, symmetry=False) if cfg.partitions > 1 else Model(cfg, symmetry=False)
