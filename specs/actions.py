"""The action table: one protocol step = one named action with an enabling
condition and an effect.

`successors(cfg, state)` is what the exhaustive, random, Hypothesis and Spark
engines explore; `apply_op(cfg, state, op)` is what replay runs. Both go through
`step`, so a counterexample replays to exactly the state the engine saw.
A label is a tuple `(name, *params)`; `label_to_op` turns it into a scenario step.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, NamedTuple, Optional

from specs import brokers as B
from specs.algebra import CONCRETE
from specs import controller as C
from specs.config import BUDGETS, Config
from specs.state import (NO_EPOCH, NO_LEADER, RECOVERED, RECOVERING, Controller, History, Partition,
                         Replica, State)

Label = tuple


class Action(NamedTuple):
    name: str
    params: tuple[str, ...]                                   # parameter names, in label order
    candidates: Callable[[Config, State], Iterable[tuple]]    # params whose guard holds (budgets aside)
    effect: Callable[..., tuple[State, Optional[str]]]        # (cfg, state, *params) -> (state, error)
    budget: Optional[Callable[[Config, State, tuple], Optional[str]]]  # which budget a step uses
    kind: str                                                 # "controller" or "data"
    doc: str


# ---------------------------------------------------------------- helpers

def _use(budget: str) -> Callable[[Config, State, tuple], str]:
    def charge(cfg: Config, s: State, params: tuple) -> str:
        return budget
    charge.budget_name = budget     # type: ignore[attr-defined]  (read by off_by_config)
    return charge


def _after_controller(cfg: Config, s: State, out: C.Outcome) -> tuple[State, Optional[str]]:
    """Install a controller outcome. Metadata reaches brokers atomically: a new leader epoch
    resets the leader's follower bookkeeping (it is learned again from Fetch)."""
    old, new = s.ctrl.partition, out.ctrl.partition
    followers = s.followers
    if new.leader_epoch != old.leader_epoch or new.leader != old.leader:
        followers = (B.UNKNOWN,) * len(cfg.brokers)
    hist = s.hist
    if out.unclean_election or out.unclean_shutdown:
        hist = hist._replace(unclean_elections=hist.unclean_elections + out.unclean_election,
                             unclean_shutdowns=hist.unclean_shutdowns + out.unclean_shutdown)
    return s._replace(ctrl=out.ctrl, followers=followers, hist=hist), out.error


def _event(cfg: Config, fn: Callable[..., C.Outcome], ctrl: Controller, *args, **kw) -> C.Outcome:
    """A controller event, memoised per config: events read only the controller's state, of
    which a run has few distinct values (about 1,300 in the default check's 238,000 states)."""
    key = (fn, ctrl, args, tuple(kw.items()))
    memo = cfg.memo
    out = memo.get(key)
    if out is None:
        out = memo[key] = fn(CONCRETE, cfg.rules, ctrl, *args, **kw)
    return out


def _alive(cfg: Config, s: State, b: int) -> bool:
    return b in cfg.brokers and B.replica_of(cfg, s, b).alive


def _next_epoch(ctrl: Controller, b: int) -> int:
    epoch = ctrl.broker_epoch(b)
    return (100 + b if epoch is None else epoch) + 1000


# ---------------------------------------------------------------- data plane

def _produce_candidates(cfg: Config, s: State):
    leader = B.live_leader(cfg, s)
    if leader != NO_LEADER and len(s.ctrl.partition.isr) >= s.ctrl.effective_min_isr:
        yield ()


def _produce(cfg: Config, s: State) -> tuple[State, Optional[str]]:
    """acks=all produce; refused (NOT_ENOUGH_REPLICAS) while |ISR| < min ISR."""
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


def _fetch_candidates(cfg: Config, s: State):
    leader = B.live_leader(cfg, s)
    if leader == NO_LEADER:
        return
    lrep = B.replica_of(cfg, s, leader)
    for f in s.ctrl.partition.replicas:
        if f == leader or not _alive(cfg, s, f):
            continue
        frep = B.replica_of(cfg, s, f)
        fs = s.followers[cfg.brokers.index(f)]
        if (frep.log != lrep.log or fs.leo != len(lrep.log) or fs.broker_epoch != s.ctrl.broker_epoch(f)
                or frep.hwm != min(lrep.hwm, len(lrep.log))):
            yield (f,)


def _fetch(cfg: Config, s: State, broker: int) -> tuple[State, Optional[str]]:
    return B.fetch(cfg, s, broker), None


def _advance_candidates(cfg: Config, s: State):
    if B.next_hwm(cfg, s) is not None:
        yield ()


def _advance_hwm(cfg: Config, s: State) -> tuple[State, Optional[str]]:
    """The leader moves its HWM up; acks=all requests below it complete (NONE if |ISR| >= min ISR,
    else NOT_ENOUGH_REPLICAS_AFTER_APPEND); consumers may now read below it."""
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


def _shrink_candidates(cfg: Config, s: State):
    leader = B.live_leader(cfg, s)
    if leader == NO_LEADER or s.inflight is not None:
        return
    leo = len(B.replica_of(cfg, s, leader).log)
    for f in s.ctrl.partition.isr:
        if f != leader and B.follower_leo(cfg, s, leader, f) < leo:
            yield (f,)


def _in_replica_order(p: Partition, members: set) -> tuple[int, ...]:
    return tuple(r for r in p.replicas if r in members)


def _shrink_isr(cfg: Config, s: State, broker: int) -> tuple[State, Optional[str]]:
    """The leader proposes to drop a lagging follower (AlterPartition sent, not yet delivered)."""
    p = s.ctrl.partition
    isr = _in_replica_order(p, set(p.isr) - {broker})
    return s._replace(inflight=B.alter_partition_request(cfg, s, p.leader, isr)), None


def _expand_candidates(cfg: Config, s: State):
    leader = B.live_leader(cfg, s)
    if leader == NO_LEADER or s.inflight is not None or s.ctrl.partition.leader_recovery_state != RECOVERED:
        return
    for f in B.expand_candidates(cfg, s, leader):
        yield (f,)


def _expand_isr(cfg: Config, s: State, broker: int) -> tuple[State, Optional[str]]:
    """The leader proposes a caught-up follower for the ISR; until the controller commits it,
    the follower counts only in the maximal ISR."""
    p = s.ctrl.partition
    isr = _in_replica_order(p, set(p.isr) | {broker})
    return s._replace(inflight=B.alter_partition_request(cfg, s, p.leader, isr)), None


def _recovery_candidates(cfg: Config, s: State):
    leader = B.live_leader(cfg, s)
    if leader != NO_LEADER and s.inflight is None and s.ctrl.partition.leader_recovery_state == RECOVERING:
        yield ()


def _complete_recovery(cfg: Config, s: State) -> tuple[State, Optional[str]]:
    """After an unclean election the leader reports the partition RECOVERED."""
    p = s.ctrl.partition
    return s._replace(inflight=B.alter_partition_request(cfg, s, p.leader, p.isr, RECOVERED)), None


def _deliver_candidates(cfg: Config, s: State):
    if s.inflight is not None:
        yield ()


def _deliver_alter_partition(cfg: Config, s: State, prefer: Optional[int] = None) -> tuple[State, Optional[str]]:
    """The controller receives the AlterPartition in flight, however late."""
    out = _event(cfg, C.alter_partition, s.ctrl, s.inflight, prefer=prefer)
    return _after_controller(cfg, s._replace(inflight=None), out)


def _alive_candidates(cfg: Config, s: State):
    for b, r in zip(cfg.brokers, s.replicas):
        if r.alive:
            yield (b,)


def _crash(cfg: Config, s: State, broker: int) -> tuple[State, Optional[str]]:
    """Unclean shutdown that keeps the page cache: the log survives, the clean file does not."""
    return B.crash(cfg, s, broker, B.replica_of(cfg, s, broker).log), None


def _lossy_candidates(cfg: Config, s: State):
    for b, r in zip(cfg.brokers, s.replicas):
        if r.alive:
            for keep in range(r.flushed, len(r.log)):
                yield (b, keep)


def _crash_lossy(cfg: Config, s: State, broker: int, keep: int) -> tuple[State, Optional[str]]:
    """Unclean shutdown that takes the page cache with it: only the first `keep` entries were
    on disk (the OS flushes in the background, so anything from the flushed prefix up to the
    log end may have survived; flushing is folded into this choice)."""
    r = B.replica_of(cfg, s, broker)
    p = s.ctrl.partition
    candidate = broker in p.isr or broker in p.elr
    s = B.crash(cfg, s, broker, r.log[:max(keep, r.flushed)])
    if candidate:   # only a leader candidate's loss counts against KIP-966's tolerance
        s = s._replace(hist=s.hist._replace(lossy_crashes=s.hist.lossy_crashes + 1))
    return s, None


def _restart_candidates(cfg: Config, s: State):
    for b, r in zip(cfg.brokers, s.replicas):
        if not r.alive:
            yield (b,)


def _restart(cfg: Config, s: State, broker: int, prefer: Optional[int] = None) -> tuple[State, Optional[str]]:
    """A new incarnation starts: it reads the clean-shutdown file (then deletes it) and
    registers with that previous broker epoch."""
    r = B.replica_of(cfg, s, broker)
    s = B.set_replica(cfg, s, broker, r._replace(alive=True, flushed=len(r.log), clean_file=NO_EPOCH))
    out = _event(cfg, C.register, s.ctrl, broker, r.clean_file, _next_epoch(s.ctrl, broker), prefer=prefer)
    return _after_controller(cfg, s, out)


def _clean_shutdown_candidates(cfg: Config, s: State):
    for b in s.ctrl.shutting_down:
        if _alive(cfg, s, b):
            yield (b,)


def _clean_shutdown(cfg: Config, s: State, broker: int, prefer: Optional[int] = None) -> tuple[State, Optional[str]]:
    """After controlled shutdown: flush, write the clean-shutdown file with the broker epoch,
    stop; the controller fences the broker (shutdown-now)."""
    r = B.replica_of(cfg, s, broker)
    epoch = s.ctrl.broker_epoch(broker)
    s = B.set_replica(cfg, s, broker, r._replace(alive=False, flushed=len(r.log),
                                                 clean_file=NO_EPOCH if epoch is None else epoch))
    return _after_controller(cfg, s, _event(cfg, C.fence, s.ctrl, broker, prefer=prefer))


# ---------------------------------------------------------------- controller events

def _fence_candidates(cfg: Config, s: State):
    for b in s.ctrl.registered:
        if b not in s.ctrl.fenced:
            yield (b,)


def _fence_budget(cfg: Config, s: State, params: tuple) -> Optional[str]:
    """A dead broker's session timing out is free; fencing a live one is a network fault."""
    return "fences" if _alive(cfg, s, params[0]) else None


def _fence(cfg: Config, s: State, broker: int, prefer: Optional[int] = None) -> tuple[State, Optional[str]]:
    return _after_controller(cfg, s, _event(cfg, C.fence, s.ctrl, broker, prefer=prefer))


def _unfence_candidates(cfg: Config, s: State):
    for b in s.ctrl.fenced:
        if _alive(cfg, s, b) and b not in s.ctrl.shutting_down:
            yield (b,)


def _unfence(cfg: Config, s: State, broker: int, prefer: Optional[int] = None) -> tuple[State, Optional[str]]:
    return _after_controller(cfg, s, _event(cfg, C.unfence, s.ctrl, broker, prefer=prefer))


def _controlled_shutdown_candidates(cfg: Config, s: State):
    for b in s.ctrl.registered:
        if _alive(cfg, s, b) and b not in s.ctrl.fenced and b not in s.ctrl.shutting_down:
            yield (b,)


def _controlled_shutdown(cfg: Config, s: State, broker: int,
                         prefer: Optional[int] = None) -> tuple[State, Optional[str]]:
    return _after_controller(cfg, s, _event(cfg, C.controlled_shutdown, s.ctrl, broker, prefer=prefer))


def _elect_candidates(cfg: Config, s: State):
    p = s.ctrl.partition
    yield ("preferred", None)
    if p.leader == NO_LEADER:
        yield ("unclean", None)
        for b in p.replicas:
            yield ("designated", b)


def _elect(cfg: Config, s: State, type: str, leader: Optional[int] = None,
           prefer: Optional[int] = None) -> tuple[State, Optional[str]]:
    return _after_controller(cfg, s, _event(cfg, C.elect, s.ctrl, type, leader, prefer=prefer))


def _min_isr_candidates(cfg: Config, s: State):
    for v in range(1, len(s.ctrl.partition.replicas) + 1):
        yield (v,)


def _set_min_isr(cfg: Config, s: State, value: int) -> tuple[State, Optional[str]]:
    return _after_controller(cfg, s, _event(cfg, C.set_min_isr, s.ctrl, value))


def _unclean_candidates(cfg: Config, s: State):
    yield (not s.ctrl.unclean_leader_election,)


def _set_unclean(cfg: Config, s: State, value: bool) -> tuple[State, Optional[str]]:
    return _after_controller(cfg, s, _event(cfg, C.set_unclean, s.ctrl, value))


def _periodic_candidates(cfg: Config, s: State):
    if s.ctrl.unclean_leader_election and s.ctrl.partition.leader == NO_LEADER:
        yield ()


def _periodic_unclean_election(cfg: Config, s: State, prefer: Optional[int] = None) -> tuple[State, Optional[str]]:
    return _after_controller(cfg, s, _event(cfg, C.periodic_unclean_election, s.ctrl, prefer=prefer))


def _reassign_candidates(cfg: Config, s: State):
    p = s.ctrl.partition
    if p.adding_replicas or p.removing_replicas:
        return
    spare = [b for b in cfg.brokers if b not in p.replicas]
    for i in range(len(p.replicas)):
        for e in spare:
            yield (p.replicas[:i] + (e,) + p.replicas[i + 1:],)


def _reassign(cfg: Config, s: State, replicas) -> tuple[State, Optional[str]]:
    return _after_controller(cfg, s, _event(cfg, C.reassign, s.ctrl, tuple(replicas)))


def _recovery_round_candidates(cfg: Config, s: State):
    if cfg.rules.unclean_recovery_strategy is not None and s.ctrl.partition.leader == NO_LEADER:
        yield (cfg.rules.unclean_recovery_strategy,)


def log_info(cfg: Config, s: State) -> dict[int, tuple[int, int]]:
    """GetReplicaLogInfo answers: every live replica the controller has unfenced replies with
    (last written leader epoch, log end offset)."""
    out = {}
    for b in s.ctrl.partition.replicas:
        if _alive(cfg, s, b) and s.ctrl.acceptable_leader(b):
            log = B.replica_of(cfg, s, b).log
            out[b] = (log[-1][0] if log else -1, len(log))
    return out


def _unclean_recovery(cfg: Config, s: State, strategy: Optional[str] = None) -> tuple[State, Optional[str]]:
    strategy = strategy or cfg.rules.unclean_recovery_strategy or "balanced"
    return _after_controller(cfg, s, C.unclean_recovery(CONCRETE, cfg.rules, s.ctrl, strategy, log_info(cfg, s)))


ACTIONS: tuple[Action, ...] = (
    Action("produce", (), _produce_candidates, _produce, _use("records"), "data",
           "acks=all produce to the leader"),
    Action("fetch", ("broker",), _fetch_candidates, _fetch, None, "data",
           "follower fetch: truncate to the leader's log, copy the rest"),
    Action("advance_hwm", (), _advance_candidates, _advance_hwm, None, "data",
           "leader advances the high watermark"),
    Action("shrink_isr", ("broker",), _shrink_candidates, _shrink_isr, _use("isr_shrinks"), "data",
           "leader sends AlterPartition dropping a lagging follower"),
    Action("expand_isr", ("broker",), _expand_candidates, _expand_isr, None, "data",
           "leader sends AlterPartition adding a caught-up follower"),
    Action("complete_recovery", (), _recovery_candidates, _complete_recovery, None, "data",
           "leader sends AlterPartition marking the partition RECOVERED"),
    Action("deliver_alter_partition", (), _deliver_candidates, _deliver_alter_partition, None, "data",
           "the controller processes the AlterPartition in flight"),
    Action("crash", ("broker",), _alive_candidates, _crash, _use("crashes"), "data",
           "unclean shutdown keeping the page cache"),
    Action("crash_lossy", ("broker", "keep"), _lossy_candidates, _crash_lossy, _use("lossy_crashes"), "data",
           "unclean shutdown losing the unflushed suffix beyond `keep` entries"),
    Action("restart", ("broker",), _restart_candidates, _restart, None, "data",
           "a stopped broker starts and registers a new incarnation"),
    Action("clean_shutdown", ("broker",), _clean_shutdown_candidates, _clean_shutdown, None, "data",
           "a broker in controlled shutdown flushes, writes its clean-shutdown file and stops"),
    Action("fence", ("broker",), _fence_candidates, _fence, _fence_budget, "controller",
           "session timeout (free for a stopped broker) or network partition from the controller"),
    Action("unfence", ("broker",), _unfence_candidates, _unfence, None, "controller",
           "a heartbeat unfences a running broker"),
    Action("controlled_shutdown", ("broker",), _controlled_shutdown_candidates, _controlled_shutdown,
           _use("clean_shutdowns"), "controller", "a broker asks for controlled shutdown"),
    Action("elect", ("type", "leader"), _elect_candidates, _elect, _use("admin_elections"), "controller",
           "admin election: preferred, unclean or designated"),
    Action("set_min_isr", ("value",), _min_isr_candidates, _set_min_isr, _use("config_changes"), "controller",
           "min.insync.replicas change"),
    Action("set_unclean", ("value",), _unclean_candidates, _set_unclean, _use("config_changes"), "controller",
           "unclean.leader.election.enable change"),
    Action("periodic_unclean_election", (), _periodic_candidates, _periodic_unclean_election, None, "controller",
           "the controller's periodic unclean election task"),
    Action("reassign", ("replicas",), _reassign_candidates, _reassign, _use("reassignments"), "controller",
           "partition reassignment to a new replica set"),
    Action("unclean_recovery", ("strategy",), _recovery_round_candidates, _unclean_recovery,
           _use("unclean_recoveries"), "controller", "KIP-966 unclean recovery round (variant)"),
)
ACTIONS_BY_NAME = {a.name: a for a in ACTIONS}
# Actions whose controller event may run an election; under any_candidate_elections their label
# may end in ("elected", broker) to say which valid candidate the election picked.
ELECTING = frozenset({"deliver_alter_partition", "restart", "clean_shutdown", "fence", "unfence",
                      "controlled_shutdown", "elect", "periodic_unclean_election"})
ELECTED = "elected"
# Faults injected on one broker (label[1] is the broker): engines may aim them at a few brokers.
FAULTS = frozenset({"crash", "crash_lossy", "fence", "controlled_shutdown"})
ACTION_NAMES = tuple(a.name for a in ACTIONS)
_BUDGET_INDEX = {name: i for i, name in enumerate(BUDGETS)}


# ---------------------------------------------------------------- the seam

def init_state(cfg: Config) -> State:
    """A healthy partition: every replica registered, unfenced, in the ISR; replicas[0] leads."""
    p = Partition(replicas=cfg.replicas, isr=cfg.replicas, elr=(), last_known_elr=(),
                  leader=cfg.replicas[0], leader_epoch=0, partition_epoch=0,
                  leader_recovery_state=RECOVERED)
    ctrl = Controller(partition=p, registered=cfg.brokers,
                      broker_epochs=tuple(100 + b for b in cfg.brokers), fenced=(), shutting_down=(),
                      min_isr=cfg.min_isr, unclean_leader_election=cfg.unclean_leader_election)
    return State(ctrl=ctrl,
                 replicas=tuple(Replica(True, (), 0, 0, NO_EPOCH) for _ in cfg.brokers),
                 followers=(B.UNKNOWN,) * len(cfg.brokers),
                 inflight=None,
                 hist=History(0, (), (), 0, 0, 0, (0,) * len(BUDGETS)))


def init_states(cfg: Config) -> list[State]:
    return [init_state(cfg)]


def step(cfg: Config, s: State, label: Label) -> tuple[State, Optional[str]]:
    """Apply one action by label, charging its budget. No guard is checked here."""
    action = ACTIONS_BY_NAME[label[0]]
    params, prefer = split_choice(label)
    if prefer is None:
        new, error = action.effect(cfg, s, *params)
    else:
        new, error = action.effect(cfg, s, *params, prefer=prefer)
    budget = action.budget(cfg, s, params) if action.budget else None
    if budget is not None:
        h = new.hist
        i = _BUDGET_INDEX[budget]
        used = h.used[:i] + (h.used[i] + 1,) + h.used[i + 1:]
        new = State(new.ctrl, new.replicas, new.followers, new.inflight,
                    History(h.produced, h.acked, h.visible, h.lossy_crashes, h.unclean_shutdowns,
                            h.unclean_elections, used))
    return new, error


def split_choice(label: Label) -> tuple[tuple, Optional[int]]:
    """(params, elected broker or None) of a label."""
    last = label[-1] if len(label) > 1 else None
    if type(last) is tuple and len(last) == 2 and last[0] == ELECTED:
        return label[1:-1], last[1]
    return label[1:], None


def within_bounds(cfg: Config, s: State) -> bool:
    p = s.ctrl.partition
    return p.leader_epoch <= cfg.bounds.max_leader_epoch and p.partition_epoch <= cfg.bounds.max_partition_epoch


def successors(cfg: Config, s: State, unbounded: bool = False) -> Iterator[tuple[Label, State]]:
    """Every enabled action within the bounds, as (label, next state); self-loops left out.
    `unbounded` ignores budgets and epoch bounds: deadlock detection asks whether anything
    at all could still happen."""
    return _steps(cfg, s, _plan(cfg), unbounded)


def action_successors(cfg: Config, s: State, action: Action,
                      unbounded: bool = False) -> Iterator[tuple[Label, State]]:
    """The enabled steps of one action (what a Hypothesis rule chooses among)."""
    return _steps(cfg, s, [row for row in _plan(cfg) if row[0] is action], unbounded)


def _steps(cfg: Config, s: State, plan, unbounded: bool) -> Iterator[tuple[Label, State]]:
    """One flat loop over the actions of `plan`: this is the checker's hot path."""
    used = s.hist.used
    any_choice = cfg.rules.any_candidate_elections
    for action, fixed, limit, charge in plan:
        if fixed is not None and not unbounded and used[fixed] >= limit:
            continue            # the whole action is spent: skip computing its candidates
        for params in action.candidates(cfg, s):
            if charge is not None and not unbounded:
                budget = charge(cfg, s, params)
                if budget is not None and used[_BUDGET_INDEX[budget]] >= getattr(cfg.bounds, budget):
                    continue
            label = (action.name,) + tuple(params)
            new, _ = step(cfg, s, label)
            if _same_but_budgets(new, s):
                continue
            if unbounded or within_bounds(cfg, new):
                yield label, new
            if any_choice and action.name in ELECTING:
                yield from _other_choices(cfg, s, label, new, unbounded)


def _plan(cfg: Config) -> tuple:
    """Per action: (action, index of its fixed budget or None, that budget's bound, the
    budget function for budgets that depend on the step), computed once per config."""
    plan = cfg.memo.get("successor plan")
    if plan is None:
        rows = []
        for action in ACTIONS:
            name = getattr(action.budget, "budget_name", None)
            if name is not None:
                rows.append((action, _BUDGET_INDEX[name], getattr(cfg.bounds, name), None))
            else:
                rows.append((action, None, 0, action.budget))
        plan = cfg.memo["successor plan"] = tuple(rows)
    return plan


def _other_choices(cfg: Config, s: State, label: Label, first: State, unbounded: bool):
    """Under any_candidate_elections, the runs where the election picked another candidate."""
    old, chosen = s.ctrl.partition.leader, first.ctrl.partition.leader
    if chosen == NO_LEADER or chosen == old:
        return
    for b in cfg.brokers:
        if b == chosen:
            continue
        alt = label + ((ELECTED, b),)
        new, _ = step(cfg, s, alt)
        if new.ctrl.partition.leader == b and (unbounded or within_bounds(cfg, new)):
            yield alt, new


def _same_but_budgets(a: State, b: State) -> bool:
    """A step that changed nothing but its budget use is a self-loop."""
    if a.ctrl != b.ctrl or a.replicas != b.replicas or a.followers != b.followers or a.inflight != b.inflight:
        return False
    x, y = a.hist, b.hist
    return (x.produced == y.produced and x.acked == y.acked and x.visible == y.visible
            and x.lossy_crashes == y.lossy_crashes and x.unclean_shutdowns == y.unclean_shutdowns
            and x.unclean_elections == y.unclean_elections)


def off_by_config(cfg: Config) -> dict[str, str]:
    """Actions the config switches off, so coverage can tell "off" from "never reached"."""
    off = {}
    for action in ACTIONS:
        name = getattr(action.budget, "budget_name", None)
        if name is not None and getattr(cfg.bounds, name) == 0:
            off[action.name] = f"bound {name} = 0"
    if cfg.bounds.clean_shutdowns == 0:
        off["clean_shutdown"] = "follows controlled_shutdown (bound clean_shutdowns = 0)"
    if not cfg.unclean_leader_election and cfg.bounds.config_changes == 0:
        off["periodic_unclean_election"] = "unclean.leader.election.enable is false and config_changes = 0"
    if cfg.rules.unclean_recovery_strategy is None:
        off["unclean_recovery"] = "flag unclean_recovery_strategy is not set"
    return off


def enabled(cfg: Config, s: State, label: Label) -> bool:
    """Whether the action's guard holds (budgets and bounds aside): replay checks this for
    data-plane steps, which are model actions rather than free controller operations."""
    action = ACTIONS_BY_NAME[label[0]]
    return tuple(split_choice(label)[0]) in {tuple(p) for p in action.candidates(cfg, s)}


def label_to_op(label: Label) -> dict[str, Any]:
    """The scenario step for a label. Replay-only controller requests (register,
    alter_partition) carry their fields as a dict in the label."""
    if label[0] not in ACTIONS_BY_NAME:
        return {"op": label[0], **(label[1] if len(label) > 1 else {})}
    action = ACTIONS_BY_NAME[label[0]]
    op: dict[str, Any] = {"op": label[0]}
    params, prefer = split_choice(label)
    for name, value in zip(action.params, params):
        if value is None:
            continue
        op[name] = list(value) if isinstance(value, tuple) else value
    if prefer is not None:
        op[ELECTED] = prefer
    return op


def describe(label: Label) -> str:
    op = label_to_op(label)
    args = " ".join(f"{k}={v}" for k, v in op.items() if k != "op")
    return f"{op['op']} {args}".strip()
