"""prove's footing: before any verdict, the z3 transition relation is compared with the
concrete controller for the exact config it was given.

For random controller states over N replicas (any values, reachable or not; the ISR in
replica order, which z3 does not keep) and every controller event, the concrete event
(specs/controller.py on the model's values) and the encoding's step for it (the same rules
in the z3 algebra, plus the encoding's guard) must agree: the step is enabled exactly when
Kafka accepts the event, and then leads to the controller state the concrete event gives,
electing uncleanly exactly when it does. Each step's formula is built once, with z3
variables, and every sample substitutes constants into that very formula.
"""
from __future__ import annotations

import random
from typing import NamedTuple, Optional

import z3

from specs import controller as C
from specs.actions import init_state
from specs.algebra import CONCRETE
from specs.config import Config
from specs.pipeline import DESIGNATED, PREFERRED, UNCLEAN
from specs.state import NO_LEADER, RECOVERED, RECOVERING, AlterPartitionRequest, Controller
from specs.symbolic.abstraction import mask, sized
from specs.symbolic.encoding import ACTION_ID, Encoding
from specs.symbolic.state import Params, Sym, sym_params, sym_state

# The controller events, each with the symbolic step that makes it.
EVENTS = ("alter_partition", "fence", "unfence", "controlled_shutdown", "register_clean", "register_unclean",
          "elect_preferred", "elect_unclean", "elect_designated", "periodic_unclean_election",
          "set_min_isr", "set_unclean", "unclean_recovery")
STEP_OF = {"register_clean": "restart", "register_unclean": "restart"}


class SelfCheck(NamedTuple):
    states: int                   # random controller states compared
    events: int                   # (state, event) pairs compared
    sizes: tuple[int, ...]        # the N checked
    mismatch: Optional[str]       # the first disagreement, in one line (None: they agree)
    stopped: bool = False         # `should_stop` ended it before every sample was compared


def _subset(rng, ids):
    """A random subset, empty a third of the time: the rules' corner cases live there."""
    return () if rng.random() < 1 / 3 else tuple(b for b in ids if rng.random() < 0.5)


def random_controller(rng: random.Random, cfg: Config) -> Controller:
    ids = cfg.replicas
    s = init_state(cfg)
    p = s.ctrl.partition._replace(
        isr=_subset(rng, ids), elr=_subset(rng, ids), cleared_elr=_subset(rng, ids), last_known_elr=_subset(rng, ids),
        leader=NO_LEADER if rng.random() < 1 / 3 else rng.choice(ids), leader_epoch=3, partition_epoch=5,
        last_known_leader=NO_LEADER if cfg.rules.use_last_known_leader else rng.choice(ids + (NO_LEADER,)),
        leader_recovery_state=RECOVERING if rng.random() < 0.3 else RECOVERED)
    return s.ctrl._replace(partition=p, fenced=_subset(rng, ids), shutting_down=_subset(rng, ids),
                           min_isr=rng.randint(1, len(ids)), unclean_leader_election=rng.random() < 0.3)


def _pins(enc: Encoding, s: Sym, ctrl: Controller) -> list:
    """The sample's controller state as constants for `s` (all but alive and clean_file, which
    the event sets): made once per sample, shared by its events."""
    cfg, n = enc.cfg, enc.n
    p = ctrl.partition
    sets = {"isr": p.isr, "elr": p.elr, "cleared_elr": p.cleared_elr, "last_known_elr": p.last_known_elr,
            "last_known_leader": [p.last_known_leader],
            "leader": [p.leader], "fenced": ctrl.fenced, "shutting_down": ctrl.shutting_down}
    out = [pin(getattr(s, f), mask(cfg, v)) for f, v in sets.items()]
    out += [pin(s.complete, (1 << n) - 1), pin(s.fetched, 0), pin(s.stale, 0),
            pin(s.min_isr, ctrl.effective_min_isr),
            (s.unclean_leader_election, z3.BoolVal(ctrl.unclean_leader_election)), (s.lost, z3.BoolVal(False)),
            (s.operator_unclean, z3.BoolVal(False)),
            pin(s.unclean_shutdowns, 0), pin(s.lossy_crashes, 0),
            (s.recovering, z3.BoolVal(p.leader_recovery_state == RECOVERING)), (s.committed, z3.BoolVal(False)),
            pin(s.promised_min_isr, ctrl.effective_min_isr), pin(s.least_min_isr, ctrl.effective_min_isr)]
    return out


def pin(var: z3.BitVecRef, bits: int) -> tuple:
    """(var, the numeral `bits` of var's sort): the very term z3.BitVecVal makes, by z3's own
    call (z3.BitVecVal builds a sort object and a string first, a third of a self-check)."""
    ref = var.ctx.ref()
    return var, z3.BitVecNumRef(z3.Z3_mk_unsigned_int64(ref, bits, z3.Z3_get_sort(ref, var.as_ast())), var.ctx)


def _event(rng, cfg: Config, ctrl: Controller, kind: str):
    """(concrete outcome, broker, members, value, flag, pick, alive mask, clean-file mask)."""
    ids, rules = cfg.replicas, cfg.rules
    b = rng.choice(ids)
    pick = rng.choice(ids) if rules.any_candidate_elections else None
    everyone = (1 << len(ids)) - 1
    alive, clean_file, members, value, flag = everyone, 0, (), 1, False
    p = ctrl.partition
    if kind == "alter_partition":
        ok = [x for x in ids if ctrl.acceptable_leader(x)]
        members = tuple(sorted(({p.leader} if p.leader != NO_LEADER else set()) | set(_subset(rng, ok)))) \
            if rng.random() < 0.8 else _subset(rng, ids)
        req = AlterPartitionRequest(p.leader, ctrl.broker_epoch(p.leader) if p.leader != NO_LEADER else -1,
                                    p.leader_epoch, p.partition_epoch, members,
                                    tuple(ctrl.broker_epoch(x) for x in members), RECOVERED)
        out = C.alter_partition(CONCRETE, rules, ctrl, req, prefer=pick)
        if out.error not in (None, C.NEW_LEADER_ELECTED):
            out = None
    elif kind in ("fence", "unfence", "controlled_shutdown"):
        out = getattr(C, kind)(CONCRETE, rules, ctrl, b, prefer=pick)
        if kind == "unfence":
            shutting = mask(cfg, ctrl.shutting_down)
            alive = everyone & ~shutting      # only a running broker not shutting down heartbeats
            if b not in ctrl.fenced or b in ctrl.shutting_down:
                out = None
        elif kind == "fence" and b in ctrl.fenced:
            out = None
        elif kind == "controlled_shutdown" and (b in ctrl.fenced or b in ctrl.shutting_down):
            out = None
    elif kind.startswith("register"):
        clean = kind == "register_clean"
        alive = everyone & ~mask(cfg, [b])
        clean_file = mask(cfg, [b]) if clean else 0
        out = C.register(CONCRETE, rules, ctrl, b, -1, ctrl.broker_epoch(b) + 1000, clean=clean, prefer=pick)
        if not rules.restart_before_fence and b not in ctrl.fenced:
            out = None                  # the restart waits for the fence (actions.data.restart)
    elif kind.startswith("elect_"):
        election = {"elect_preferred": PREFERRED, "elect_unclean": UNCLEAN, "elect_designated": DESIGNATED}[kind]
        out = C.elect(CONCRETE, rules, ctrl, election, b if election == DESIGNATED else None,
                      prefer=pick if election == UNCLEAN else None)
        if out.error is not None:
            out = C.Outcome(ctrl)       # a refused election changes nothing; the step is a no-op
    elif kind == "periodic_unclean_election":
        out = C.periodic_unclean_election(CONCRETE, rules, ctrl, prefer=pick)
    elif kind == "unclean_recovery":
        # Every running acceptable replica answers GetReplicaLogInfo (all run here); z3's
        # choice is pinned to the concrete one, so the two differ only if the rules do.
        info = {x: (rng.randint(0, 3), rng.randint(0, 3)) for x in ids if ctrl.acceptable_leader(x)}
        candidates = tuple(x for x in ids if x in info)
        pick = CONCRETE.most_data(info, candidates, ids, rules.recovery_prefers_most_data)
        out = None
        if rules.unclean_recovery_strategy is not None:
            out = C.unclean_recovery(CONCRETE, rules, ctrl, rules.unclean_recovery_strategy, info)
            out = out if out.error is None else None
    elif kind == "set_min_isr":
        value = rng.randint(1, len(ids))
        out = C.set_min_isr(CONCRETE, rules, ctrl, value)
    else:
        flag = rng.random() < 0.5
        out = C.set_unclean(CONCRETE, rules, ctrl, flag)
    return out, b, members, value, flag, pick, alive, clean_file


def check(cfg: Config, sizes: tuple[int, ...], samples: int = 200, seed: int = 0,
          config_changes: bool = True, should_stop=lambda: False) -> SelfCheck:
    """Compare for each N in `sizes`, `samples` random states per N, every event each; a
    caller's budget or signal (`should_stop()`, asked before each sample) ends it early."""
    rng = random.Random(seed)
    states = events = 0
    for n in sizes:
        scfg = sized(cfg, n, min(2, n))
        enc = Encoding(scfg, n, config_changes)
        s, p = sym_state(n, "c"), sym_params(n, "c")
        built = {k: _packed_step(enc.step(STEP_OF.get(k, k), s, p)) for k in EVENTS}
        for _ in range(samples):
            if should_stop():
                return SelfCheck(states, events, tuple(sizes), None, stopped=True)
            ctrl = random_controller(rng, scfg)
            states += 1
            pinned = _pins(enc, s, ctrl)
            for kind in EVENTS:
                if not config_changes and kind in ("set_min_isr", "set_unclean"):
                    continue
                problem = _compare(enc, s, p, built[kind], kind, ctrl, pinned, rng)
                events += 1
                if problem:
                    return SelfCheck(states, events, tuple(sizes), f"N={n}, {kind}: {problem}")
    return SelfCheck(states, events, tuple(sizes), None)


# The controller fields a step's successor is compared on (and, last, whether it is unclean).
FIELDS = ("isr", "elr", "last_known_elr", "last_known_leader", "leader", "fenced", "shutting_down", "min_isr",
          "unclean_leader_election", "recovering", "operator_unclean")


def _packed_step(step) -> Packed:
    """A step's successor fields, its unclean flag and its guard as one term, packed once per
    event kind: each sample then costs one substitution."""
    return pack({**{f: getattr(step.succ, f) for f in FIELDS}, "unclean_election": step.unclean,
                 "enabled": step.guard})


def _compare(enc: Encoding, s: Sym, p: Params, step: Packed, kind: str, ctrl: Controller, pinned: list,
             rng) -> Optional[str]:
    cfg = enc.cfg
    out, b, members, value, flag, pick, alive, clean_file = _event(rng, cfg, ctrl, kind)
    pins = pinned + [
        pin(s.alive, alive), pin(s.clean_file, clean_file), pin(p.action, ACTION_ID[STEP_OF.get(kind, kind)]),
        pin(p.broker, mask(cfg, [b])), pin(p.members, mask(cfg, members)), pin(p.pending, 0),
        pin(p.value, value), (p.flag, z3.BoolVal(flag)), pin(p.pick, mask(cfg, [pick]) if pick is not None else 0)]

    q, c = (out.ctrl.partition, out.ctrl) if out is not None else (ctrl.partition, ctrl)
    want = {"isr": mask(cfg, q.isr), "elr": mask(cfg, q.elr), "last_known_elr": mask(cfg, q.last_known_elr),
            "last_known_leader": mask(cfg, [q.last_known_leader]), "leader": mask(cfg, [q.leader]),
            "fenced": mask(cfg, c.fenced), "shutting_down": mask(cfg, c.shutting_down),
            "min_isr": c.effective_min_isr, "unclean_leader_election": c.unclean_leader_election,
            "recovering": q.leader_recovery_state == RECOVERING,
            "operator_unclean": bool(out.operator_unclean) if out is not None else False,
            "unclean_election": bool(out.unclean_election) if out is not None else False}
    got = evaluate(step, pins)
    if out is None:
        return "z3 enables a step the concrete controller refuses" if got["enabled"] else None
    if not got["enabled"]:
        return f"the concrete controller accepts it, z3 does not (state {_brief(ctrl)})"
    for f in want:
        if want[f] != got[f]:
            return f"{f}: concrete {want[f]}, z3 {got[f]} (state {_brief(ctrl)})"
    return None


class Packed(NamedTuple):
    """Terms concatenated into one bit-vector, so that one substitution values them all."""
    term: z3.ExprRef
    fields: tuple[tuple[str, int, bool], ...]     # (name, width, boolean), in concatenation order


def pack(terms: dict) -> Packed:
    """`terms` (z3 terms or Python booleans) as one Packed term; build it once, evaluate it often."""
    parts, fields = [], []
    for name, term in terms.items():
        boolean = isinstance(term, bool) or z3.is_bool(term)
        if isinstance(term, bool):
            term = z3.BoolVal(term)
        if z3.is_bool(term):
            term = z3.If(term, z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
        parts.append(term)
        fields.append((name, term.size(), boolean))
    return Packed(z3.Concat(*parts) if len(parts) > 1 else parts[0], tuple(fields))


def evaluate(packed: Packed, pins: list) -> dict:
    """Every packed term's value under `pins` (constants for every variable the terms read), by
    one substitution: z3's own call, which checks the sorts itself (z3.substitute's wrapper
    checks them again in Python first, half the time of a self-check)."""
    count = len(pins)
    source, target = (z3.Ast * count)(), (z3.Ast * count)()
    for i, (var, value) in enumerate(pins):
        source[i], target[i] = var.as_ast(), value.as_ast()
    term, ctx = packed.term, packed.term.ctx
    substituted = z3.z3._to_expr_ref(z3.Z3_substitute(ctx.ref(), term.as_ast(), count, source, target), ctx)
    bits = z3.simplify(substituted).as_long()
    out = {}
    for name, width, boolean in reversed(packed.fields):
        value = bits & ((1 << width) - 1)
        bits >>= width
        out[name] = bool(value) if boolean else value
    return out


def _brief(ctrl: Controller) -> str:
    p = ctrl.partition
    shown = {"leader": p.leader, "isr": list(p.isr), "elr": list(p.elr), "last_known_elr": list(p.last_known_elr),
             "fenced": list(ctrl.fenced), "shutting_down": list(ctrl.shutting_down), "min_isr": ctrl.min_isr}
    return " ".join(f"{k}={v}" for k, v in shown.items())
