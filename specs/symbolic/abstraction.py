"""The map between concrete model states (specs/state.py) and symbolic states
(specs/symbolic/state.py): `abstract` forgets logs, epochs and requests; `concretize` builds
one concrete state with a given abstraction (for turning a z3 model into a state the
concrete model can run from)."""
from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import z3

from specs import actions as A
from specs.config import Config
from specs.state import NO_EPOCH, NO_LEADER, RECOVERED, RECOVERING, FollowerState, State
from specs.symbolic.state import SET_FIELDS, Sym


class Abstract(NamedTuple):
    """A symbolic state's value: bit masks over replica order, min ISR, lost."""
    isr: int
    elr: int
    cleared_elr: int
    last_known_elr: int
    last_known_leader: int
    leader: int
    fenced: int
    shutting_down: int
    alive: int
    clean_file: int
    complete: int
    fetched: int
    stale: int
    min_isr: int
    unclean_leader_election: bool
    lost: bool
    unclean_shutdowns: int
    lossy_crashes: int
    recovering: bool = False
    operator_unclean: bool = False
    committed: bool = False
    promised_min_isr: int = 0      # 0 (a value made by hand): min_isr
    least_min_isr: int = 0         # likewise
    lossy: int = 0                 # stopped, no clean-shutdown file, shorter than the leader saw it fetch

    def kept(self) -> "Abstract":
        """With the min ISR ghosts spelled out (0 stands for min_isr)."""
        return self._replace(promised_min_isr=self.promised_min_isr or self.min_isr,
                             least_min_isr=self.least_min_isr or self.min_isr)


def mask(cfg: Config, brokers) -> int:
    out = 0
    for b in brokers:
        if b in cfg.replicas:
            out |= 1 << cfg.replicas.index(b)
    return out


def members(cfg: Config, bits: int) -> tuple[int, ...]:
    return tuple(b for i, b in enumerate(cfg.replicas) if bits >> i & 1)


def holds_committed(s: State, log) -> bool:
    visible = s.hist.visible
    return len(log) >= len(visible) and all(log[i][1] == rec for i, rec in enumerate(visible))


def abstract(cfg: Config, s: State) -> Abstract:
    from specs.facts import least_min_isr, promised_min_isr
    p, ctrl = s.ctrl.partition, s.ctrl
    reps = {b: r for b, r in zip(cfg.brokers, s.replicas)}
    return Abstract(
        isr=mask(cfg, p.isr), elr=mask(cfg, p.elr), cleared_elr=mask(cfg, p.cleared_elr),
        last_known_elr=mask(cfg, p.last_known_elr),
        last_known_leader=mask(cfg, [p.last_known_leader]), leader=mask(cfg, [p.leader]),
        fenced=mask(cfg, ctrl.fenced), shutting_down=mask(cfg, ctrl.shutting_down),
        alive=mask(cfg, [b for b in cfg.replicas if reps[b].alive]),
        clean_file=mask(cfg, [b for b in cfg.replicas if reps[b].clean_file != NO_EPOCH]),
        complete=mask(cfg, [b for b in cfg.replicas if holds_committed(s, reps[b].log)]),
        fetched=mask(cfg, [b for b, fs in zip(cfg.brokers, s.followers) if fs.leo >= 0]),
        stale=mask(cfg, [b for b, fs in zip(cfg.brokers, s.followers)
                         if fs.leo >= 0 and fs.broker_epoch != ctrl.broker_epoch(b)]),
        min_isr=ctrl.effective_min_isr, unclean_leader_election=ctrl.unclean_leader_election,
        lost=s.hist.unclean_elections > 0, unclean_shutdowns=min(s.hist.unclean_shutdowns, 255),
        lossy_crashes=min(s.hist.lossy_crashes, 255), recovering=p.leader_recovery_state == RECOVERING,
        operator_unclean=s.hist.operator_unclean_elections > 0,
        committed=bool(s.hist.acked or s.hist.visible), promised_min_isr=promised_min_isr(s),
        least_min_isr=least_min_isr(s),
        lossy=mask(cfg, [b for b, fs in zip(cfg.brokers, s.followers)
                         if not reps[b].alive and reps[b].clean_file == NO_EPOCH and len(reps[b].log) < fs.leo]))


def equals(sym: Sym, value: Abstract) -> z3.BoolRef:
    n = sym.isr.size()
    eqs = [getattr(sym, f) == z3.BitVecVal(getattr(value, f), n) for f in SET_FIELDS]
    eqs.append(sym.min_isr == value.min_isr)
    eqs.append(sym.unclean_leader_election == z3.BoolVal(value.unclean_leader_election))
    eqs.append(sym.lost == z3.BoolVal(value.lost))
    eqs.append(sym.unclean_shutdowns == value.unclean_shutdowns)
    eqs.append(sym.lossy_crashes == value.lossy_crashes)
    eqs.append(sym.recovering == z3.BoolVal(value.recovering))
    eqs.append(sym.operator_unclean == z3.BoolVal(value.operator_unclean))
    value = value.kept()
    eqs.append(sym.committed == z3.BoolVal(value.committed))
    eqs.append(sym.promised_min_isr == value.promised_min_isr)
    eqs.append(sym.least_min_isr == value.least_min_isr)
    return z3.And(*eqs)


def evaluate(model: z3.ModelRef, sym: Sym) -> Abstract:
    def bits(x):
        return model.eval(x, model_completion=True).as_long()
    def truth(x):
        return z3.is_true(model.eval(x, model_completion=True))
    return Abstract(**{f: bits(getattr(sym, f)) for f in SET_FIELDS}, min_isr=bits(sym.min_isr),
                    unclean_leader_election=truth(sym.unclean_leader_election), lost=truth(sym.lost),
                    unclean_shutdowns=bits(sym.unclean_shutdowns), lossy_crashes=bits(sym.lossy_crashes),
                    recovering=truth(sym.recovering), operator_unclean=truth(sym.operator_unclean),
                    committed=truth(sym.committed), promised_min_isr=bits(sym.promised_min_isr),
                    least_min_isr=bits(sym.least_min_isr))


def describe(cfg: Config, a: Abstract) -> dict:
    """The abstract state as broker lists (for tables and reports)."""
    out = {f: list(members(cfg, getattr(a, f))) for f in SET_FIELDS}
    out["leader"] = members(cfg, a.leader)[0] if a.leader else NO_LEADER
    out["last_known_leader"] = members(cfg, a.last_known_leader)[0] if a.last_known_leader else NO_LEADER
    out["min_isr"] = a.min_isr
    out["unclean_leader_election"] = a.unclean_leader_election
    out["lost"] = a.lost
    out["operator_unclean"] = a.operator_unclean
    out["unclean_shutdowns"] = a.unclean_shutdowns
    out["lossy_crashes"] = a.lossy_crashes
    out["leader_recovery_state"] = "RECOVERING" if a.recovering else "RECOVERED"
    kept = a.kept()
    out["committed"] = a.committed
    out["promised_min_isr"] = kept.promised_min_isr
    out["least_min_isr"] = kept.least_min_isr
    return out


def concretize(cfg: Config, a: Abstract, epoch: int = 1) -> State:
    """One concrete state whose abstraction is `a`: one committed record (if a record was
    committed or any replica is incomplete), held by the complete replicas; stopped replicas
    with a clean file wrote it with their current broker epoch; the leader saw a lossy replica
    fetch one entry more than it holds. Leader and partition epochs are `epoch`; the min ISR ghosts are a's (History's form: 0 where one is the min ISR)."""
    s = A.init_state(cfg)
    d = describe(cfg, a)
    committed = (1,) if a.committed or a.complete != (1 << len(cfg.replicas)) - 1 else ()
    p = s.ctrl.partition._replace(
        isr=tuple(d["isr"]), elr=tuple(d["elr"]), last_known_elr=tuple(d["last_known_elr"]),
        leader=d["leader"], last_known_leader=d["last_known_leader"], leader_epoch=epoch, partition_epoch=epoch,
        cleared_elr=tuple(sorted(d["cleared_elr"])),
        leader_recovery_state=RECOVERING if a.recovering else RECOVERED)
    ctrl = s.ctrl._replace(partition=p, fenced=tuple(d["fenced"]),
                           shutting_down=tuple(d["shutting_down"]),
                           min_isr=a.min_isr, unclean_leader_election=a.unclean_leader_election)
    replicas = []
    for b, r in zip(cfg.brokers, s.replicas):
        log = tuple((0, rec) for rec in committed) if b in d["complete"] or b not in cfg.replicas else ()
        alive = b in d["alive"] or b not in cfg.replicas
        clean = ctrl.broker_epoch(b) if b in d["clean_file"] else NO_EPOCH
        replicas.append(r._replace(alive=alive, log=log, flushed=len(log), hwm=len(log), clean_file=clean))
    followers = tuple(
        FollowerState(len(r.log) + (1 if b in d["lossy"] else 0), ctrl.broker_epoch(b) - (1 if b in d["stale"] else 0))
        if b in d["fetched"] else fs
        for b, r, fs in zip(cfg.brokers, replicas, s.followers))
    hist = s.hist._replace(produced=len(committed), acked=committed, visible=committed,
                           unclean_elections=1 if a.lost else 0,
                           operator_unclean_elections=1 if a.operator_unclean else 0,
                           unclean_shutdowns=a.unclean_shutdowns,
                           lossy_crashes=a.lossy_crashes,
                           promised_min_isr=_kept(d["promised_min_isr"], a.min_isr),
                           least_min_isr=_kept(d["least_min_isr"], a.min_isr))
    return s._replace(ctrl=ctrl, replicas=tuple(replicas), followers=followers, hist=hist)


def _kept(value: int, min_isr: int) -> int:
    return 0 if value >= min_isr else value


def sized(cfg: Config, n: int, min_isr: int) -> Config:
    """cfg with replicas 1..n and the given min ISR (what a symbolic size-n check stands for)."""
    return replace(cfg, replicas=tuple(range(1, n + 1)), min_isr=min_isr, extra_brokers=())


__all__ = ["Abstract", "abstract", "equals", "evaluate", "describe", "concretize", "mask", "members", "sized"]
