"""Several partitions of one topic on the same brokers, lifted from the one-partition model
(issue 59, first step: the Python model; the kernel, the reports and conform do not take it yet).

A state is one single-partition `State` per partition (`Partitions`). What the brokers and the
topic share is the same in each: the controller's broker registry (registered, broker epochs,
fenced, in controlled shutdown), the topic's min ISR and unclean election setting, each broker's
process (alive, its clean-shutdown file) and the budgets spent (`shared`). What is a partition's
own is the rest: its registration (leader, ISR, ELR, last known ELR, epochs, recovery state),
each replica's log, flushed prefix and high watermark, the leader's follower bookkeeping, the
AlterPartition in flight and the history (what was produced, acknowledged, lost).

No rule is restated here: every step is the one-partition model's step (specs/actions) on one
partition's `State`, so the lifted model has exactly the rules the engines check today.
- A partition's own step (`PER_PARTITION`: produce, fetch, the HWM, ISR changes, an
  AlterPartition, an admin election, a reassignment, a recovery round) is taken in one partition,
  labelled with it (`("partition", p)` last); the others keep their state, the budgets spent
  follow. It must leave the shared part as the partition found it but for the budgets.
- A broker's or the topic's event (a fence, an unfence, a controlled shutdown, a registration,
  a config change, a crash, a restart, a clean shutdown) acts on every partition in one step,
  as Kafka's controller walks a broker's partitions in one event (and a process's crash hits
  every log it holds): the same label's step in each partition, which must agree on the shared
  part (else the lifting is wrong, and says so). It is enabled only where it is enabled in every
  partition. A parameter that is a partition's own (a lossy crash's surviving prefix, `OWN`)
  is chosen per partition: the label then lists each partition's label (`("each", labels)`).
  A lossy crash is one where some partition loses something; the others crash keeping their
  log (`FALLBACK`).
- The periodic unclean election (`WHERE_ENABLED`) acts on every partition where it applies and
  leaves the others.
Not lifted yet (`PartitionsModel` refuses it): a controlled shutdown. Whether the broker is told
to shut down at once depends on its leading nothing in any partition, which one partition's rule
(specs/controller.controlled_shutdown) cannot see: the lift found two partitions' steps
disagreeing on the broker's state (LiftError) as soon as the broker led one partition and not
the other. That rule needs the other partitions' leadership as an input first.
Identical partitions are interchangeable: `canonical` sorts them (a symmetry reduction over
partitions; tests/specs/test_partitions.py compares it with the unreduced search).
"""
from __future__ import annotations

from itertools import product
from typing import Iterator, Optional

from specs import actions as A
from specs.config import Config
from specs.model import Model
from specs.state import State

PER_PARTITION = frozenset({"produce", "fetch", "advance_hwm", "shrink_isr", "expand_isr", "deliver_alter_partition",
                           "elect", "reassign", "unclean_recovery", "alter_partition"})
WHERE_ENABLED = frozenset({"periodic_unclean_election"})
OWN = {"crash_lossy": 2}         # a broker event whose label's parameters from this place are a partition's own
# A broker event a partition takes as another where its own guard fails: a lossy crash loses an
# unflushed suffix, and a partition whose replica on that broker has none loses nothing (the
# process crashes all the same: `crash`'s step there, the lossy crash's budget charged once).
FALLBACK = {"crash_lossy": "crash"}
MOST = 8                          # partitions a state holds (a search's state is a tuple of at most 8 fields)


class Partitions(tuple):
    """One `State` per partition, aligned with the partitions' numbers (0, 1, ...)."""

    def __new__(cls, *parts: State):
        return super().__new__(cls, parts)

    def __repr__(self) -> str:
        return f"Partitions{tuple.__repr__(self)}"


class LiftError(AssertionError):
    """Two partitions' steps of one broker event disagree on what the partitions share."""


def shared(s: State) -> tuple:
    """What every partition's `State` holds alike."""
    c = s.ctrl
    return (c.registered, c.broker_epochs, c.fenced, c.shutting_down, c.min_isr, c.unclean_leader_election,
            tuple((r.alive, r.clean_file) for r in s.replicas), s.hist.used)


def with_shared(s: State, src: State) -> State:
    """`s` with the shared part of `src`."""
    c = src.ctrl
    ctrl = s.ctrl._replace(registered=c.registered, broker_epochs=c.broker_epochs, fenced=c.fenced,
                           shutting_down=c.shutting_down, min_isr=c.min_isr,
                           unclean_leader_election=c.unclean_leader_election)
    replicas = tuple(r._replace(alive=q.alive, clean_file=q.clean_file) for r, q in zip(s.replicas, src.replicas))
    return s._replace(ctrl=ctrl, replicas=replicas, hist=s.hist._replace(used=src.hist.used))


def init_states(cfg: Config, partitions: int) -> list[Partitions]:
    """Every partition as the one-partition model starts it (combinations that share alike)."""
    if not 1 <= partitions <= MOST:
        raise ValueError(f"partitions: {partitions}; a state holds 1 to {MOST}")
    starts = A.init_states(cfg)
    return [Partitions(*ps) for ps in product(starts, repeat=partitions)
            if all(shared(p) == shared(ps[0]) for p in ps)]


def successors(cfg: Config, s: Partitions, unbounded: bool = False) -> Iterator[tuple[tuple, Partitions]]:
    """Every enabled step, in the one-partition model's action order: a partition's own steps
    partition by partition, a broker's or the topic's event once for all."""
    for name in A.ACTION_NAMES:
        if name in PER_PARTITION:
            for p, part in enumerate(s):
                for label, t in A.action_successors(cfg, part, name, unbounded):
                    yield label + (("partition", p),), _put(s, p, t, label, unbounded)
        else:
            yield from _together(cfg, s, name, unbounded)


def _put(s: Partitions, p: int, t: State, label: tuple, unbounded: bool) -> Partitions:
    """s with partition p's step to t: the others take the budgets t spent. (An unbounded step's
    state is not checked: only whether a step exists is asked of it, and the kernel does not
    hold one past its bounds, a produce beyond the log's capacity say.)"""
    if not unbounded and shared(t)[:-1] != shared(s[p])[:-1]:
        raise LiftError(f"a step of partition {p} alone changed what the partitions share ({label}): "
                        f"{shared(s[p])[:-1]} -> {shared(t)[:-1]}")
    return Partitions(*(t if q == p else with_shared(part, t) for q, part in enumerate(s)))


def _key(label: tuple) -> tuple:
    return label[:OWN.get(label[0], len(label))]


def _together(cfg: Config, s: Partitions, name: str, unbounded: bool) -> Iterator[tuple[tuple, Partitions]]:
    """A broker's or the topic's event: one step of every partition (or of those where it applies)."""
    outcomes = [list(A.action_successors(cfg, part, name, unbounded)) for part in s]
    instead, others = FALLBACK.get(name), {}         # a partition's fallback steps, asked for when needed
    keys = list(dict.fromkeys(_key(label) for each in outcomes for label, _ in each))
    for key in keys:
        choices = []
        for p, each in enumerate(outcomes):
            mine = [(label, t) for label, t in each if _key(label) == key]
            if not mine and instead:
                if p not in others:
                    others[p] = list(A.action_successors(cfg, s[p], instead, True))
                mine = [(label, t) for label, t in others[p] if label[1:] == key[1:]]
            if not mine:
                if name not in WHERE_ENABLED:
                    break
                mine = [(None, s[p])]
            choices.append(mine)
        else:
            for combo in product(*choices):
                yield _joined(name, combo, unbounded)


def _joined(name: str, combo, unbounded: bool) -> tuple[tuple, Partitions]:
    """One step of the event from each partition's (label, state) in `combo` (label None: the
    partition takes none): the lifted label and state. The budgets spent are those of a
    partition that took the event itself (not its FALLBACK)."""
    stepped = [t for label, t in combo if label is not None and label[0] == name]
    ref = shared(stepped[0])
    disagree = (any(shared(t)[:-1] != ref[:-1] for label, t in combo if label is not None)
                or any(shared(t) != ref for t in stepped[1:]))
    if disagree and not unbounded:          # (an unbounded step's state is not checked: _put)
        raise LiftError(f"{name}: the partitions' steps disagree on what they share")
    labels = [label for label, _ in combo]
    label = labels[0] if all(x == labels[0] for x in labels) else (name, ("each", tuple(labels)))
    return label, Partitions(*(with_shared(t, stepped[0]) for _, t in combo))


def labels_of(label: tuple, partitions: int) -> list[Optional[tuple]]:
    """Each partition's one-partition label of a lifted step (None: that partition takes no step)."""
    last = label[-1] if len(label) > 1 else None
    if isinstance(last, tuple) and len(last) == 2 and last[0] == "partition":
        return [label[:-1] if q == last[1] else None for q in range(partitions)]
    if len(label) == 2 and isinstance(label[1], tuple) and label[1][:1] == ("each",):
        return list(label[1][1])
    return [label] * partitions


def step(cfg: Config, s: Partitions, label: tuple) -> Partitions:
    """The state after a lifted label (no guard checked): traces are rebuilt with it."""
    each = labels_of(label, len(s))
    after = [A.step(cfg, part, mine)[0] if mine is not None else None for part, mine in zip(s, each)]
    ref = next(t for t, mine in zip(after, each) if mine is not None and mine[0] == label[0])
    return Partitions(*(with_shared(t if t is not None else part, ref) for part, t in zip(s, after)))


def canonical(s: Partitions) -> Partitions:
    """Identical partitions are interchangeable: the state with its partitions sorted."""
    return Partitions(*sorted(s, key=repr))      # (a total order: a State may hold None beside a request)


def describe(label: tuple) -> str:
    """A lifted step in words: the one-partition model's words, with the partitions it took."""
    last = label[-1] if len(label) > 1 else None
    if isinstance(last, tuple) and last[:1] == ("partition",):
        return f"{A.describe(label[:-1])} (partition {last[1]})"
    if len(label) == 2 and isinstance(label[1], tuple) and label[1][:1] == ("each",):
        return "; ".join(f"partition {p}: {A.describe(x)}" for p, x in enumerate(label[1][1]) if x is not None)
    return A.describe(label)


def lift_property(inv):
    """A property of one partition (invariants/registry.Invariant) as one of every partition:
    a state property holds in each partition's `State`; a step property in each partition's
    step (a partition that took none is not judged)."""
    check = inv.check
    if inv.kind == "state":
        def each_state(cfg, s):
            return all(check(cfg, part) for part in s)
        return inv._replace(check=each_state, explain=None)

    def each_step(cfg, s, label, t):
        return all(mine is None or check(cfg, a, mine, b) for a, mine, b in zip(s, labels_of(label, len(s)), t))
    return inv._replace(check=each_step, explain=None)


class PartitionsModel(Model):
    """The lifted model as the interpreted engines see it (specs/model.Model's successors, steps
    and deadlocks; its other hooks, reports and Kafka's side, are a single partition's and are
    not offered: `check --partitions` is not yet a command). `symmetry`: identical partitions
    sorted (`canonical`); the brokers' symmetry is not applied (a renaming must rename every
    partition alike)."""

    def __init__(self, cfg: Config, partitions: int, symmetry: bool = True):
        if partitions > 1 and cfg.bounds.clean_shutdowns > 0:
            raise ValueError("clean_shutdowns > 0 with several partitions: a controlled shutdown depends on the "
                             "broker leading no partition, which the one-partition rule cannot see yet")
        super().__init__(cfg, symmetry=False)
        self.partitions = partitions
        self.symmetric = symmetry and partitions > 1
        self.canonical = canonical if self.symmetric else None
        self.group_size = 1

    def init_states(self) -> list:
        return init_states(self.cfg, self.partitions)

    def successors(self, state, unbounded: bool = False):
        return successors(self.cfg, state, unbounded)

    def step(self, state, label: tuple):
        return step(self.cfg, state, label)

    def stuck(self, state) -> bool:
        return next(successors(self.cfg, state, unbounded=True), None) is None

    def enabled_actions(self, state, unbounded: bool = False) -> set:
        return {label[0] for label, _ in successors(self.cfg, state, unbounded)}

    describe = staticmethod(describe)
