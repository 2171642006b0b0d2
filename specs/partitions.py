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
- The periodic unclean and preferred elections (`WHERE_ENABLED`) act on every partition where
  they apply and leave the others; where one would take a partition beyond the bounds, the
  event is not taken (as a step beyond them is not in one partition), never taken in the others
  alone.
- A controlled shutdown: whether the broker is told to shut down at once depends on its leading
  no partition at all (BrokerHeartbeatManager), which one partition's rule cannot see. Where
  it leads some partition, a partition it does not lead takes the rule's `elsewhere` step
  (specs/controller.controlled_shutdown; label LEADS_ELSEWHERE): controlled shutdown there
  too. (Before that input, the lift's own check found the two partitions disagreeing on the
  broker, LiftError.)
After every step the controller's ELR index across partitions is applied (specs/elr_index.py:
a partition's stale entries can become partition 0's, F5).
Identical partitions are interchangeable: `canonical` sorts them (a symmetry reduction over
partitions; tests/specs/test_partitions.py compares it with the unreduced search); with config
changes, which can leave stale index entries, all but partition 0 (`canonical_but_first`).
"""
from __future__ import annotations

from dataclasses import replace
from itertools import product
from typing import Iterator, Optional

from specs import actions as A
from specs import partitions_view as V
from specs.partitions_kafka import KafkaSide
from specs.elr_index import elr_index
from specs.actions.labels import LEADS_ELSEWHERE
from specs.config import BUDGETS, MAX_PARTITIONS, Config
from specs.model import Model
from specs.state import State

PER_PARTITION = frozenset({"produce", "fetch", "advance_hwm", "shrink_isr", "expand_isr", "deliver_alter_partition",
                           "elect", "reassign", "unclean_recovery", "alter_partition"})
WHERE_ENABLED = frozenset({"periodic_unclean_election", "periodic_preferred_election"})
# A broker event whose label's parameters from this place are a partition's own (an elected
# broker's choice always is).
OWN = {"crash_lossy": 2, "controlled_shutdown": 2}
# A broker event a partition takes as another where its own guard fails: a lossy crash loses an
# unflushed suffix, and a partition whose replica on that broker has none loses nothing (the
# process crashes all the same: `crash`'s step there, the lossy crash's budget charged once).
FALLBACK = {"crash_lossy": "crash"}
MOST = MAX_PARTITIONS             # partitions a state holds (a search's state is a tuple of at most 8 fields)


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
                    yield label + (("partition", p),), elr_index(s, _put(s, p, t, label, unbounded))
        else:
            for label, t in _together(cfg, s, name, unbounded):
                yield label, elr_index(s, t)


def _put(s: Partitions, p: int, t: State, label: tuple, unbounded: bool) -> Partitions:
    """s with partition p's step to t: the others take the budgets t spent. (An unbounded step's
    state is not checked: only whether a step exists is asked of it, and the kernel does not
    hold one past its bounds, a produce beyond the log's capacity say.)"""
    if not unbounded and shared(t)[:-1] != shared(s[p])[:-1]:
        raise LiftError(f"a step of partition {p} alone changed what the partitions share ({label}): "
                        f"{shared(s[p])[:-1]} -> {shared(t)[:-1]}")
    return Partitions(*(t if q == p else with_shared(part, t) for q, part in enumerate(s)))


def _key(label: tuple) -> tuple:
    """What every partition's step of one broker event shares: its label without the parts
    that are a partition's own (an elected broker, a lossy crash's kept prefix)."""
    params, _ = A.split_choice(label)
    return ((label[0],) + params)[:OWN.get(label[0], len(label))]


def _leads_elsewhere(cfg: Config, s: Partitions, outcomes: list, unbounded: bool) -> list:
    """A controlled shutdown of a broker that leads some partition puts it in controlled
    shutdown in every partition (Kafka's heartbeat manager asks whether it leads any): where
    it leads this one, the one-partition step says so already; where it does not, the step is
    controlled shutdown's all the same (LEADS_ELSEWHERE), not the fence one partition alone
    would take, and within the epoch bounds as any step. A broker that leads nothing takes the
    one-partition steps (a fence and a clean stop) everywhere."""
    leaders = {part.ctrl.partition.leader for part in s}
    lifted = [[(label, t) for label, t in each if label[1] not in leaders or part.ctrl.partition.leader == label[1]]
              for part, each in zip(s, outcomes)]
    budget = BUDGETS.index("clean_shutdowns")
    if not unbounded and s[0].hist.used[budget] >= cfg.bounds.clean_shutdowns:
        return lifted
    for (b,) in _enabled(cfg, s[0], "controlled_shutdown"):
        if b not in leaders:
            continue
        for part, mine in zip(s, lifted):
            if part.ctrl.partition.leader != b:
                label = ("controlled_shutdown", b, LEADS_ELSEWHERE)
                t = A.step(cfg, part, label)[0]
                p = t.ctrl.partition
                if unbounded or (p.leader_epoch <= cfg.bounds.max_leader_epoch
                                 and p.partition_epoch <= cfg.bounds.max_partition_epoch):
                    mine.append((label, t))
    return lifted


def _guard_order(cfg: Config, s: Partitions, name: str) -> list:
    """A controlled shutdown's keys in its guard's order (the brokers it enables)."""
    return [(name, b) for (b,) in _enabled(cfg, s[0], name)]


def _enabled(cfg: Config, part: State, name: str) -> list:
    """The parameter tuples the action's guard enables in one partition. (The kernel is imported
    here, not with `specs`: its cache reads the user's key, whose errors the command line turns
    into one line only once it runs.)"""
    from specs.kernel import on_kernel
    return on_kernel(cfg, lambda k: k.enabled(part, name))


def _together(cfg: Config, s: Partitions, name: str, unbounded: bool) -> Iterator[tuple[tuple, Partitions]]:
    """A broker's or the topic's event: one step of every partition (or of those where it applies)."""
    outcomes = [list(A.action_successors(cfg, part, name, unbounded)) for part in s]
    instead, others = FALLBACK.get(name), {}         # a partition's fallback steps, asked for when needed
    keys = list(dict.fromkeys(_key(label) for each in outcomes for label, _ in each))
    if name == "controlled_shutdown" and len(s) > 1:
        outcomes, keys = _leads_elsewhere(cfg, s, outcomes, unbounded), _guard_order(cfg, s, name)
    for key in keys:
        choices = []
        for p, each in enumerate(outcomes):
            mine = [(label, t) for label, t in each if _key(label) == key]
            if not mine and instead:
                if p not in others:
                    others[p] = list(A.action_successors(cfg, s[p], instead, True))
                mine = [(label, t) for label, t in others[p] if _key(label)[1:] == key[1:]]
            if not mine:
                if name not in WHERE_ENABLED:
                    break
                if not unbounded and next(iter(A.action_successors(cfg, s[p], name, True)), None) is not None:
                    break           # it applies there beyond the bounds: the event is not taken at all
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
    return elr_index(s, Partitions(*(with_shared(t if t is not None else part, ref) for part, t in zip(s, after))))


def canonical(s: Partitions, key=repr) -> Partitions:
    """Identical partitions are interchangeable: the state with its partitions sorted by `key`
    (a total order on a partition's states; PartitionsModel's is the compiled search's,
    specs/kernel/lifted_rows.part_key)."""
    return Partitions(*sorted(s, key=key))


def canonical_but_first(s: Partitions, key=repr) -> Partitions:
    """With config changes, partition 0 is not like the others: the ELR index's stale entries,
    which only a ClearElrRecord leaves, fall to it (`elr_index`). The others are sorted."""
    return Partitions(s[0], *sorted(s[1:], key=key))


def describe(label: tuple) -> str:
    """A lifted step in words: the one-partition model's words, with the partitions it took."""
    last = label[-1] if len(label) > 1 else None
    if isinstance(last, tuple) and last[:1] == ("partition",):
        return f"{A.describe(label[:-1])} (partition {last[1]})"
    if len(label) == 2 and isinstance(label[1], tuple) and label[1][:1] == ("each",):
        return "; ".join(f"partition {p}: {_words(x)}" for p, x in enumerate(label[1][1]) if x is not None)
    return A.describe(label)


def _words(label: tuple) -> str:
    if LEADS_ELSEWHERE in label:
        return f"{A.describe(label)} (it leads another partition: controlled shutdown here too)"
    return A.describe(label)


def one_of(cfg: Config) -> Config:
    """A partition's own config (partitions = 1), one object per config: the kernel a step or a
    property runs on is cached in it (Config.memo)."""
    if cfg.partitions == 1:
        return cfg
    one = cfg.memo.get("one partition")
    if one is None:
        one = cfg.memo["one partition"] = replace(cfg, partitions=1)
    return one


def lift_property(inv):
    """A property of one partition (invariants/registry.Invariant) as one of every partition:
    a state property holds in each partition's `State`; a step property in each partition's
    step (a partition that took none is not judged). Why it fails names the partitions where
    it does, each as the one-partition model shows itself."""
    check = inv.check

    def failing(cfg, states, labels) -> list:
        one, last = one_of(cfg), states[-1]
        if inv.kind == "state":
            return [p for p, part in enumerate(last) if not check(one, part)]
        each = labels_of(labels[-1], len(last)) if labels else [None] * len(last)
        return [p for p, (a, mine, b) in enumerate(zip(states[-2], each, last))
                if mine is not None and not check(one, a, mine, b)]

    def explain(cfg, states, labels, describe):
        from specs.display import headline
        where = failing(cfg, states, labels) if len(states) > 1 or inv.kind == "state" else []
        if not where:
            return None
        step = f"after step {len(labels)} ({describe(labels[-1])})" if labels else "in the initial state"
        return f"{inv.name} fails {step} in partition{'s' if len(where) > 1 else ''} " + "; ".join(
            f"{p} ({headline(one_of(cfg), states[-1][p])})" for p in where)

    if inv.kind == "state":
        def each_state(cfg, s):
            one = one_of(cfg)
            return all(check(one, part) for part in s)
        return inv._replace(check=each_state, explain=explain)

    def each_step(cfg, s, label, t):
        one = one_of(cfg)
        return all(mine is None or check(one, a, mine, b) for a, mine, b in zip(s, labels_of(label, len(s)), t))
    return inv._replace(check=each_step, explain=explain)


class PartitionsModel(KafkaSide, Model):
    """The lifted model as the engines see it (specs/model.Model's successors, steps, deadlocks,
    reports, and Kafka's side in specs/partitions_kafka.py). `symmetry`: identical partitions
    sorted (`canonical`); the brokers' symmetry is not applied (a renaming must rename every
    partition alike)."""

    def __init__(self, cfg: Config, partitions: Optional[int] = None, symmetry: bool = True, compiled: bool = True):
        """`partitions`: cfg.partitions unless given. `self.cfg` names them (reports show it);
        `self.one` is a partition's own config, which every step runs on. `compiled`: steps
        from the compiled join (False: the join above, in Python; bench/partitions_bench.py)."""
        self.compiled = compiled
        partitions = cfg.partitions if partitions is None else partitions
        if not 1 <= partitions <= MOST:
            raise ValueError(f"partitions: {partitions}; a state holds 1 to {MOST}")
        whole = cfg if cfg.partitions == partitions else replace(cfg, partitions=partitions)
        self.one = one_of(whole)
        super().__init__(self.one, symmetry=False)
        self.cfg = whole
        self.partitions = partitions
        self.symmetric = symmetry and partitions > 1
        self.canonical = None if not self.symmetric else self._canonical
        self.group_size = 1
        if partitions > 1:
            self.symmetry_note = "brokers are not renamed with several partitions; identical partitions are"

    def init_states(self) -> list:
        return init_states(self.one, self.partitions)

    def _canonical(self, state) -> Partitions:
        """The partitions sorted as the compiled search sorts its rows' parts (its
        representatives are this one's, so its counterexamples replay here state for state)."""
        from specs.kernel import kernel_of
        from specs.kernel.lifted_rows import part_key
        k = kernel_of(self.one)
        sort = canonical_but_first if self.cfg.bounds.config_changes else canonical
        return sort(state, key=lambda part: part_key(k, part))

    def successors(self, state, unbounded: bool = False):
        """The compiled join (specs/kernel/lift.py), which tests/specs/test_lifted_kernel.py
        holds to `successors` above on every state of small configs: one compiled call a state."""
        if self.partitions == 1 or not self.compiled:
            return successors(self.one, state, unbounded)
        return iter(self._lifted().successors(state, unbounded))

    def _lifted(self):
        lk = self.one.memo.get(("lifted", self.partitions))
        if lk is None:
            from specs.kernel.lift import LiftedKernel
            lk = self.one.memo[("lifted", self.partitions)] = LiftedKernel(self.one, self.partitions)
        return lk

    def step(self, state, label: tuple):
        return step(self.one, state, label)

    def stuck(self, state) -> bool:
        if self.partitions == 1 or not self.compiled:
            return next(successors(self.one, state, unbounded=True), None) is None
        return not self._lifted().labels_of_steps(state, unbounded=True)

    def enabled_actions(self, state, unbounded: bool = False) -> set:
        return {label[0] for label in self.enabled_labels(state, unbounded)}

    def enabled_labels(self, state, unbounded: bool = True) -> list:
        if self.partitions == 1 or not self.compiled:
            return [label for label, _ in successors(self.one, state, unbounded)]
        return self._lifted().labels_of_steps(state, unbounded)

    describe = staticmethod(describe)

    # ---------------------------------------------------------------- how it shows itself
    def view(self, state) -> dict[str, str]:
        return V.view(self.one, state)

    def headline(self, state) -> str:
        return V.headline(self.one, state)

    def partition_cells(self, state) -> dict[str, str]:
        return V.partition_cells(self.one, state)

    def timeline(self, state) -> dict[str, dict[str, str]]:
        return V.timeline(self.one, state)

    @property
    def start_fields(self) -> tuple:
        return V.start_fields(self.partitions)

    @property
    def itf_vars(self) -> tuple:
        return tuple(f"p{n}" for n in range(self.partitions))

    @staticmethod
    def itf(state) -> dict:
        return V.itf(state)

    def scenario(self, trace, name: str, source: str) -> dict:
        return V.scenario(trace, self.one, name, source)

    @staticmethod
    def expectation(state) -> dict:
        return V.expectation_of(state)
