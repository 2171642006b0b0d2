"""z3 engine: which properties are inductive for every N-broker cluster, and which a run from
the initial state breaks within K steps? Each property gets its own verdict.

For each size N and min ISR m:
1. induction: Inv(s) and T(s, t) and not Inv(t) is unsat. If it is sat, z3's model is a
   counterexample to induction (CTI). With topic-config changes on, min ISR is part of the
   state (a run may set any value), so one induction per N pins none and must hold initially
   at every m: a proof at one m that assumed the pre-state's min ISR would not cover the states
   a change leads to. With fixed topic config each (N, m) has its own.
2. strengthening (Houdini): start from the properties plus the lemmas the caller gives
   (invariants/symbolic.py), drop any that fails initially or is not preserved by the rest,
   until the set is inductive: the greatest inductive subset, so what survives is proved at
   this size, each property on its own account, and each lemma kept is proved with them
   (a CTI then breaks a survivor: its state was unreachable).
3. bounded model checking from the initial state to depth K for the properties Houdini
   dropped, shortest violation first; a violation the concrete model reproduces (`realize`)
   refutes the properties it breaks, and the search goes on for the rest. One no concrete run
   matches is blocked and asked again (`attempts`); what is neither proved nor refuted is
   unknown at this size.
The checker knows the model only through the specs.symbolic seam (the encoding); the
properties are the z3 twins the caller hands it, each with the concrete invariant it restates.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from specs import Config
from specs.symbolic import Abstract, evaluate
from verifier.core import knobs, stop
from verifier.core.exitcodes import EXIT_OK, EXIT_STOPPED, EXIT_VIOLATION
from verifier.core.result import (COMPLETE, HOLDS, PROVED, REFUTED, STOPPED, STOPPED_STATUS, UNKNOWN,  # noqa: F401
                                  UNKNOWN_STATUS, VIOLATED, VIOLATION, Result, Verdict)
from verifier.core.settings import Settings
from verifier.engines.prove.problem import Cti, Problem, Step, _step  # noqa: F401


@dataclass
class Refutation:
    """A BMC violation from the initial state: the properties it breaks, the symbolic run and
    the concrete run that reproduces it (None when no realization was asked for)."""
    names: list[str]
    trace: list
    witness: object = None
    scenario: Optional[str] = None


@dataclass
class SizeResult:
    n: int
    min_isr: int
    verdict: str                                           # PROVED (all), REFUTED (any), else UNKNOWN
    inductive_alone: bool
    proved: list[str] = field(default_factory=list)        # the properties proved at this size
    strengthening: list[str] = field(default_factory=list)  # the lemmas their proof needs (proved with them)
    dropped: list[str] = field(default_factory=list)       # the properties Houdini had to drop
    refutations: list[Refutation] = field(default_factory=list)
    cti: Optional[Cti] = None
    bmc_depth: int = 0                                     # depth explored without violation
    violation: Optional[list[str]] = None                  # the first refutation's properties
    trace: Optional[list[tuple[Optional[Step], Abstract]]] = None
    cfg: Optional[Config] = None                           # the concrete config this size stands for
    witness: object = None                                 # the first refutation's concrete run
    scenario: Optional[str] = None                         # its replay scenario's file name
    cti_scenario: Optional[str] = None
    cti_breaks: list[str] = field(default_factory=list)   # the lemmas the CTI's state violates
    cti_reproduced: Optional[bool] = None                  # the concrete model breaks the CTI's invariants too
    unrealized: int = 0                                    # BMC traces no concrete run matched
    seconds: float = 0.0
    induction_seconds: float = 0.0
    bmc_seconds: float = 0.0

    def verdict_of(self, name: str) -> str:
        """This size's verdict on one property: proved, refuted or unknown."""
        if name in self.proved:
            return PROVED
        return REFUTED if any(name in r.names for r in self.refutations) else UNKNOWN

    def refutation_of(self, name: str) -> Optional[Refutation]:
        return next((r for r in self.refutations if name in r.names), None)


@dataclass
class Induction:
    """What induction and Houdini decided for a set of properties (on one Problem)."""
    inductive_alone: bool
    cti: Optional[Cti] = None
    proved: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    strengthening: list[str] = field(default_factory=list)
    cti_breaks: list[str] = field(default_factory=list)
    seconds: float = 0.0


def induct(prob: Problem, invariants, lemmas) -> Induction:
    """Induction alone; if it fails, Houdini's greatest inductive subset (what survives is
    proved) and the lemmas the survivors need, with the CTI the first query gave."""
    start = time.monotonic()
    out = prob.induction(invariants, invariants)
    result = Induction(inductive_alone=out is None, proved=[inv.name for inv in invariants])
    if out is not None:
        model, s, p, t = out
        result.cti = Cti(evaluate(model, s), _step(model, p), evaluate(model, t),
                         prob._broken(model, invariants, s, p, t))
        kept, result.dropped = prob.houdini(invariants, lemmas)
        proved = [inv for inv in invariants if inv.name not in result.dropped]
        result.proved = [inv.name for inv in proved]
        if proved:
            names = {inv.name for inv in invariants}
            needed = prob.minimal_strengthening(proved, [k for k in kept if k.name not in names])
            result.strengthening = [inv.name for inv in needed]
            result.cti_breaks = prob.false_at(needed, result.cti.pre)
    result.seconds = time.monotonic() - start
    return result


def check_size(cfg: Config, n: int, min_isr: int, depth: int,
               invariants=(), lemmas=(), deadline: Optional[float] = None,
               config_changes: bool = True, realize: Optional[Callable] = None, attempts: int = 6,
               induction: Optional[Induction] = None) -> SizeResult:
    """Induction, strengthening and BMC for one size, a verdict per property. `realize(cfg,
    trace, names)` turns a BMC trace into a concrete run (or None); an unrealizable trace is
    blocked and BMC asked again, up to `attempts` times. `induction`: the size's induction,
    made already (with config changes one covers every min ISR of a cluster size)."""
    start = time.monotonic()
    prob = Problem(cfg, n, min_isr, config_changes)
    ind = induction if induction is not None else induct(prob, invariants, lemmas)
    result = SizeResult(n, min_isr, PROVED, inductive_alone=ind.inductive_alone, cfg=prob.cfg, cti=ind.cti,
                        proved=list(ind.proved), dropped=list(ind.dropped), strengthening=list(ind.strengthening),
                        cti_breaks=list(ind.cti_breaks))
    result.induction_seconds = ind.seconds if induction is None else 0.0
    t0 = time.monotonic()
    open_ = [inv for inv in invariants if inv.name in result.dropped]
    blocked: list = []
    while open_ and depth > 0:
        names, trace = prob.bmc(open_, depth, deadline, blocked)
        if not names:
            result.bmc_depth = trace                        # the depth reached without a violation
            break
        witness = realize(prob.cfg, trace, names) if realize is not None else None
        if realize is not None and witness is None:
            result.unrealized += 1
            if len(blocked) + 1 >= attempts:
                result.bmc_depth = len(trace) - 2          # every shorter run was searched
                break
            blocked.append([st for st, _ in trace[1:]])
            continue
        result.refutations.append(Refutation(list(names), trace, witness))
        result.bmc_depth = len(trace) - 1
        open_ = [inv for inv in open_ if inv.name not in names]
    result.bmc_seconds = time.monotonic() - t0
    if result.refutations:
        first = result.refutations[0]
        result.verdict, result.violation, result.trace, result.witness = REFUTED, first.names, first.trace, first.witness
    elif open_:
        result.verdict = UNKNOWN
    result.seconds = time.monotonic() - start
    return result


def sizes(max_brokers: int, min_isrs: Optional[list[int]]) -> list[tuple[int, int]]:
    out = []
    for n in range(1, max_brokers + 1):
        for m in (min_isrs or range(1, n + 1)):
            if m <= n:
                out.append((n, m))
    return out


def prove(cfg: Config, max_brokers: int, min_isrs: Optional[list[int]], depth: int,
          time_budget: Optional[float] = None, on_result: Optional[Callable[[SizeResult], None]] = None,
          stop_at_refutation: bool = False, bmc_max_brokers: Optional[int] = None,
          **kw) -> tuple[list[SizeResult], bool]:
    """Every (N, m) in order of N; returns (results, completed). BMC runs only up to
    `bmc_max_brokers` (its cost grows fast with N; induction covers every N). With config
    changes one induction per N covers every min ISR (its seconds go to the first m's result)."""
    deadline = time.monotonic() + time_budget if time_budget else None
    results = []
    shared: dict[int, Induction] = {}
    todo = sizes(max_brokers, min_isrs)
    for n, m in todo:
        if (deadline is not None and time.monotonic() > deadline) or stop.requested():
            return results, False
        bmc_depth = depth if bmc_max_brokers is None or n <= bmc_max_brokers else 0
        first = n not in shared
        if kw.get("config_changes", True) and first:
            mins = tuple(x for k, x in todo if k == n)
            shared[n] = induct(Problem(cfg, n, m, True, initial_mins=mins), kw["invariants"], kw.get("lemmas", ()))
        r = check_size(cfg, n, m, bmc_depth, deadline=deadline, induction=shared.get(n), **kw)
        if first and n in shared:
            r.induction_seconds = shared[n].seconds
            r.seconds += shared[n].seconds
        results.append(r)
        if on_result:
            on_result(r)
        if stop_at_refutation and r.verdict == REFUTED:
            break
    return results, True


class ProveResult(Result):
    """The base result, with every size's result (`sizes`) and whether every size was checked."""

    def __init__(self, sizes_: list, completed: bool, **kw):
        super().__init__(engine="z3", **kw)
        self.sizes, self.completed = sizes_, completed


@knobs.declare("prove")
class Knobs(knobs.Knobs):
    """The sizes and depth the prover covers, and what it does with what it finds."""
    max_brokers: int = knobs.knob(8, least=1)  # prove for every cluster size 1..N
    min_isrs: Optional[list] = None  # the min ISR values (None: every one a size allows)
    depth: int = knobs.knob(6, least=0)  # bounded model checking steps from the initial state
    bmc_max_brokers: Optional[int] = knobs.knob(None, least=0)  # BMC only up to this size (None: max_brokers)
    config_changes: bool = True  # min ISR and unclean.leader.election may change in a run
    lemmas: tuple = ()  # facts the proof may use once proved inductive with the invariants
    stop_at_first: bool = False  # stop at the first refuted size
    witness: bool = True  # search the concrete model for a run a BMC refutation stands for
    on_result: Optional[Callable] = None  # called with each size's result as it is found


def run(model, properties, settings: Settings = Settings(), progress=None) -> ProveResult:
    """The engine interface: `properties` are z3 twins (each with its `concrete` invariant);
    the sizes and depth are its `Knobs`; the time budget is `settings.limits.time_budget`.
    Exit 1 if a property is refuted, 3 if one is neither proved at every size nor refuted (or
    the run stopped), 0 if every one is proved at every size."""
    from specs.symbolic import witness_trace
    own = Knobs.of(settings)
    concrete = [p.concrete for p in properties if getattr(p, "concrete", None) is not None]
    realize = (lambda cfg, trace, names: witness_trace(cfg, trace, names, concrete)) if own.witness else None
    started = time.monotonic()
    results, completed = prove(model.cfg, own.max_brokers, own.min_isrs, own.depth, settings.limits.time_budget,
                               own.on_result, invariants=list(properties), lemmas=own.lemmas,
                               config_changes=own.config_changes, realize=realize,
                               stop_at_refutation=own.stop_at_first, bmc_max_brokers=own.bmc_max_brokers)
    seconds = time.monotonic() - started
    verdicts = [_verdict(inv, results, completed) for inv in properties]
    code = (EXIT_VIOLATION if any(v.status == VIOLATED for v in verdicts)
            else EXIT_OK if completed and all(v.status == HOLDS for v in verdicts) else EXIT_STOPPED)
    per_n: dict[int, float] = {}
    for r in results:
        per_n[r.n] = per_n.get(r.n, 0.0) + r.seconds
    result = ProveResult(results, completed, seconds=seconds, exit_code=code, explored_all=completed,
                         status={EXIT_OK: COMPLETE, EXIT_VIOLATION: VIOLATION}.get(code, STOPPED),
                         stop_reason="" if code != EXIT_STOPPED else (
                             (stop.reason() if stop.requested() else "time budget spent") if not completed
                             else "a property is neither proved nor refuted"))
    result.verdicts = verdicts
    result.counterexamples = {v.name: v.trace for v in result.verdicts if v.trace is not None}
    result.counterexample = next(iter(result.counterexamples.values()), None)
    result.counts = {"sizes": len(results), "seconds": round(seconds, 3),
                     "solver_seconds_per_n": {str(n): round(s, 3) for n, s in per_n.items()}}
    return result


def _span(results: list) -> str:
    ns = sorted({r.n for r in results})
    return f"N={ns[0]}..{ns[-1]}" if ns else "no size"


def _verdict(inv, results: list, completed: bool) -> Verdict:
    """One property across the sizes: refuted at some size (with the first such size's concrete
    run), proved at every size (with the lemmas its proofs used), or neither (where it is
    proved, and where it is neither)."""
    quote = getattr(inv.concrete, "quote", "") if getattr(inv, "concrete", None) is not None else inv.why
    assumes = getattr(getattr(inv, "concrete", None), "assumes", "") or ""
    refuted = next((r for r in results if r.verdict_of(inv.name) == REFUTED), None)
    if refuted is not None:
        run = refuted.refutation_of(inv.name)
        steps = len(run.witness) if run.witness is not None else len(run.trace) - 1
        kind = "a concrete run" if run.witness is not None else "a symbolic run"
        return Verdict(inv.name, inv.kind, VIOLATED, quote=quote, assumes=assumes, trace=run.witness,
                       detail=f"refuted at N={refuted.n}, min ISR {refuted.min_isr} by {kind} of {steps} steps")
    proved = [r for r in results if r.verdict_of(inv.name) == PROVED]
    lemmas = sorted({x for r in proved for x in r.strengthening})
    with_ = f", with the lemmas {', '.join(lemmas)}, proved inductive together with it" if lemmas else ""
    if completed and results and len(proved) == len(results):
        return Verdict(inv.name, inv.kind, HOLDS, quote=quote, assumes=assumes,
                       detail=f"proved for {_span(results)} and every min ISR{with_}")
    open_ = [f"N={r.n} m={r.min_isr}" for r in results if r.verdict_of(inv.name) != PROVED]
    if open_:
        return Verdict(inv.name, inv.kind, UNKNOWN_STATUS, quote=quote, assumes=assumes,
                       detail=f"not inductive and no violation within the BMC depth at {', '.join(open_[:4])}"
                              + (f" and {len(open_) - 4} more" if len(open_) > 4 else "")
                              + (f"; proved at the {len(proved)} other sizes" if proved else ""))
    return Verdict(inv.name, inv.kind, STOPPED_STATUS, quote=quote, assumes=assumes,
                   detail=f"proved where checked ({_span(results)}), but not every size was checked")
