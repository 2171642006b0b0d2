"""z3 engine: are the ELR invariants inductive for every N-broker cluster, and can a run
from the initial state break them within K steps?

For each size N and min ISR m:
1. induction: Inv(s) and T(s, t) and not Inv(t) is unsat. If it is sat, z3's model is a
   counterexample to induction (CTI).
2. strengthening (Houdini): start from the invariants plus the lemmas the caller gives
   (invariants/symbolic.py), drop any that fails initially or is not preserved by the rest,
   until the set is inductive. If every ELR invariant survives, they hold in every
   reachable state, and the CTI's state was unreachable: it breaks a surviving lemma.
3. bounded model checking from the initial state to depth K, shortest violation first.
The checker knows the model only through the specs.symbolic seam (the encoding); the
properties are the z3 twins the caller hands it, each with the concrete invariant it restates.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import z3

from specs import Config
from specs.symbolic import (ACTIONS, Abstract, Encoding, Params, Sym,
                            evaluate, sized, sym_params, sym_state)
from verifier.core import knobs, stop
from verifier.core.exitcodes import EXIT_OK, EXIT_STOPPED, EXIT_VIOLATION
from verifier.core.result import (COMPLETE, HOLDS, PROVED, REFUTED, STOPPED, STOPPED_STATUS, UNKNOWN,  # noqa: F401
                                  UNKNOWN_STATUS, VIOLATED, VIOLATION, Result, Verdict)
from verifier.core.settings import Settings


@dataclass
class Step:
    """One symbolic transition as z3 chose it."""
    action: str
    broker: int              # bit mask (one-hot) or 0
    members: int
    pending: int
    value: int
    flag: bool
    pick: int
    unclean: bool


@dataclass
class Cti:
    pre: Abstract
    step: Step
    post: Abstract
    violated: list[str]


@dataclass
class SizeResult:
    n: int
    min_isr: int
    verdict: str
    inductive_alone: bool
    strengthening: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)       # ELR invariants Houdini had to drop
    cti: Optional[Cti] = None
    bmc_depth: int = 0                                     # depth explored without violation
    violation: Optional[list[str]] = None                  # invariants broken by the BMC trace
    trace: Optional[list[tuple[Optional[Step], Abstract]]] = None
    cfg: Optional[Config] = None                           # the concrete config this size stands for
    witness: object = None                                 # the concrete run (verifier.reports.story.Trace)
    scenario: Optional[str] = None                         # file names of the written replay scenarios
    cti_scenario: Optional[str] = None
    cti_breaks: list[str] = field(default_factory=list)   # the lemmas the CTI's state violates
    cti_reproduced: Optional[bool] = None                  # the concrete model breaks the CTI's invariants too
    unrealized: int = 0                                    # BMC traces no concrete run matched
    seconds: float = 0.0
    induction_seconds: float = 0.0
    bmc_seconds: float = 0.0


def _step(model: z3.ModelRef, p: Params) -> Step:
    def val(x):
        return model.eval(x, model_completion=True)
    return Step(ACTIONS[val(p.action).as_long()], val(p.broker).as_long(), val(p.members).as_long(),
                val(p.pending).as_long(), val(p.value).as_long(), z3.is_true(val(p.flag)),
                val(p.pick).as_long(), z3.is_true(val(p.unclean)))


class Problem:
    """The formulas for one (config, N, min ISR)."""

    def __init__(self, cfg: Config, n: int, min_isr: int, config_changes: bool = True):
        self.cfg = sized(cfg, n, min_isr)
        self.n, self.min_isr = n, min_isr
        self.enc = Encoding(self.cfg, n, config_changes)

    def holds(self, invs, s: Sym) -> z3.BoolRef:
        """The state invariants among `invs`, on s."""
        out = [inv.formula(self.enc, s) for inv in invs if inv.kind == "state"]
        return z3.And(*out) if out else z3.BoolVal(True)

    def _broken(self, model, invs, s, p, t) -> list[str]:
        """The invariants false in `model` at t (step invariants: on s -p-> t, if given)."""
        names = []
        for inv in invs:
            if inv.kind == "step" and p is None:
                continue
            f = inv.formula(self.enc, t) if inv.kind == "state" else inv.formula(self.enc, s, p, t)
            if z3.is_false(model.eval(f, model_completion=True)):
                names.append(inv.name)
        return names

    def false_at(self, invs, value: Abstract) -> list[str]:
        """The state invariants that do not hold in the concrete abstract state `value`."""
        from specs.symbolic import equals
        s = sym_state(self.n, "v")
        out = []
        for inv in invs:
            solver = self._solver(None)
            solver.add(equals(s, value), inv.formula(self.enc, s))
            if solver.check() == z3.unsat:
                out.append(inv.name)
        return out

    def _solver(self, timeout_ms: Optional[int]) -> z3.Solver:
        solver = z3.SolverFor("QF_BV")
        if timeout_ms:
            solver.set("timeout", timeout_ms)
        return solver

    def induction(self, assumed, goals, timeout_ms=None):
        """None if `assumed` (on s) and T imply every goal; else (model, s, p, t, solver)."""
        s, t, p = sym_state(self.n, "s"), sym_state(self.n, "t"), sym_params(self.n, "p")
        solver = self._solver(timeout_ms)
        solver.add(self.enc.well_formed(s), self.enc.well_formed(t), s.min_isr == self.min_isr)
        solver.add(self.holds(assumed, s))
        solver.add(self.enc.transition(s, t, p))
        solver.add(z3.Not(self._goal(goals, s, p, t)))
        r = solver.check()
        if r == z3.unsat:
            return None
        if r != z3.sat:
            raise TimeoutError("induction query")
        return solver.model(), s, p, t

    def _goal(self, goals, s, p, t) -> z3.BoolRef:
        """Every goal after the step s -p-> t."""
        out = [inv.formula(self.enc, t) if inv.kind == "state" else inv.formula(self.enc, s, p, t) for inv in goals]
        return z3.And(*out) if out else z3.BoolVal(True)

    def initially(self, inv: Any) -> bool:
        if inv.kind != "state":
            return True
        s = sym_state(self.n, "i")
        solver = self._solver(None)
        solver.add(self.enc.initial(s, self.min_isr), z3.Not(inv.formula(self.enc, s)))
        return solver.check() == z3.unsat

    def houdini(self, invariants, lemmas, timeout_ms=None) -> tuple[list[Any], list[str]]:
        """The largest inductive subset of invariants + lemmas (that also holds initially)."""
        current = [inv for inv in list(invariants) + list(lemmas) if self.initially(inv)]
        changed = True
        while changed:
            changed = False
            out = self.induction(current, current, timeout_ms)
            if out is None:
                break
            model, s, p, t = out
            bad = set(self._broken(model, current, s, p, t))
            current = [inv for inv in current if inv.name not in bad]
            changed = True
        kept = {inv.name for inv in current}
        return current, [inv.name for inv in invariants if inv.name not in kept]

    def minimal_strengthening(self, invariants, kept_lemmas, timeout_ms=None) -> list[Any]:
        """Drop each lemma the invariants do not need to stay inductive."""
        needed = list(kept_lemmas)
        for lemma in list(needed):
            trial = [x for x in needed if x is not lemma]
            both = list(invariants) + trial
            if self.induction(both, both, timeout_ms) is None:
                needed = trial
        return needed

    def bmc(self, invariants, depth: int, deadline: Optional[float] = None, blocked=()):
        """(violated names, trace) for the shortest violation within `depth`, or (None, reached).
        `blocked` lists step sequences (from earlier traces) the answer must differ from."""
        solver = self._solver(None)
        states = [sym_state(self.n, "k0")]
        params: list[Params] = []
        solver.add(self.enc.initial(states[0], self.min_isr))
        model = self._model_with(solver, z3.Not(self.holds(invariants, states[0])))
        if model is not None:
            return self._broken(model, invariants, None, None, states[0]), self._trace(model, states, params)
        for k in range(1, depth + 1):
            if (deadline is not None and time.monotonic() > deadline) or stop.requested():
                return None, k - 1
            s, t, p = states[-1], sym_state(self.n, f"k{k}"), sym_params(self.n, f"k{k}")
            solver.add(self.enc.well_formed(t), self.enc.transition(s, t, p))
            states.append(t)
            params.append(p)
            for seq in blocked:
                if len(seq) == k:
                    solver.add(z3.Not(z3.And(*(z3.And(q.action == ACTIONS.index(st.action), q.broker == st.broker,
                                                      q.members == st.members)
                                               for q, st in zip(params, seq)))))
            model = self._model_with(solver, z3.Not(self._goal(invariants, s, p, t)))
            if model is not None:
                return self._broken(model, invariants, s, p, t), self._trace(model, states, params)
            # the invariants hold up to depth k: assume them there (shortens later queries)
            solver.add(self._goal(invariants, s, p, t))
        return None, depth

    @staticmethod
    def _model_with(solver: z3.Solver, extra) -> Optional[z3.ModelRef]:
        """A model of the solver's formulas and `extra`, or None; `extra` is not kept."""
        solver.push()
        solver.add(extra)
        r = solver.check()
        model = solver.model() if r == z3.sat else None
        solver.pop()
        if r == z3.unknown:
            raise TimeoutError("bounded model checking query")
        return model

    def _trace(self, model, states, params) -> list[tuple[Optional[Step], Abstract]]:
        out: list[tuple[Optional[Step], Abstract]] = [(None, evaluate(model, states[0]))]
        for p, s in zip(params, states[1:]):
            out.append((_step(model, p), evaluate(model, s)))
        return out


def check_size(cfg: Config, n: int, min_isr: int, depth: int,
               invariants=(), lemmas=(), deadline: Optional[float] = None,
               config_changes: bool = True, realize: Optional[Callable] = None, attempts: int = 6) -> SizeResult:
    """Induction, strengthening and BMC for one size. `realize(cfg, trace, names)` turns a BMC
    trace into a concrete run (or None); an unrealizable trace is blocked and BMC asked again."""
    start = time.monotonic()
    prob = Problem(cfg, n, min_isr, config_changes)
    out = prob.induction(invariants, invariants)
    result = SizeResult(n, min_isr, PROVED, inductive_alone=out is None, cfg=prob.cfg)
    if out is not None:
        model, s, p, t = out
        result.cti = Cti(evaluate(model, s), _step(model, p), evaluate(model, t),
                         prob._broken(model, invariants, s, p, t))
        kept, dropped = prob.houdini(invariants, lemmas)
        result.dropped = dropped
        if dropped:
            result.verdict = UNKNOWN
        else:
            names = {inv.name for inv in invariants}
            needed = prob.minimal_strengthening(invariants, [k for k in kept if k.name not in names])
            result.strengthening = [inv.name for inv in needed]
            result.cti_breaks = prob.false_at(needed, result.cti.pre)
    result.induction_seconds = time.monotonic() - start
    t0 = time.monotonic()
    blocked: list = []
    names, trace = prob.bmc(invariants, depth, deadline)
    while names and realize is not None:
        result.witness = realize(prob.cfg, trace, names)
        if result.witness is not None or len(blocked) + 1 >= attempts:
            break
        blocked.append([st for st, _ in trace[1:]])
        result.unrealized += 1
        names, trace = prob.bmc(invariants, depth, deadline, blocked)
    result.bmc_seconds = time.monotonic() - t0
    if names:
        result.verdict = REFUTED
        result.violation = names
        result.trace = trace
        result.bmc_depth = len(trace) - 1
    else:
        result.bmc_depth = trace
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
    `bmc_max_brokers` (its cost grows fast with N; induction covers every N)."""
    deadline = time.monotonic() + time_budget if time_budget else None
    results = []
    for n, m in sizes(max_brokers, min_isrs):
        if (deadline is not None and time.monotonic() > deadline) or stop.requested():
            return results, False
        bmc_depth = depth if bmc_max_brokers is None or n <= bmc_max_brokers else 0
        r = check_size(cfg, n, m, bmc_depth, deadline=deadline, **kw)
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
    the sizes and depth are its `Knobs`; the time budget is `settings.limits.time_budget`."""
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
    refuted = [r for r in results if r.verdict == REFUTED]
    unknown = [r for r in results if r.verdict == UNKNOWN]
    code = EXIT_VIOLATION if refuted else (EXIT_STOPPED if unknown or not completed else EXIT_OK)
    per_n: dict[int, float] = {}
    for r in results:
        per_n[r.n] = per_n.get(r.n, 0.0) + r.seconds
    result = ProveResult(results, completed, seconds=seconds, exit_code=code, explored_all=completed,
                         status={EXIT_OK: COMPLETE, EXIT_VIOLATION: VIOLATION}.get(code, STOPPED),
                         stop_reason="" if code != EXIT_STOPPED else (
                             (stop.reason() if stop.requested() else "time budget spent") if not completed
                             else "an invariant is neither proved nor refuted"))
    result.verdicts = [_verdict(inv, results, completed) for inv in properties]
    result.counterexamples = {v.name: v.trace for v in result.verdicts if v.trace is not None}
    result.counterexample = next(iter(result.counterexamples.values()), None)
    result.counts = {"sizes": len(results), "seconds": round(seconds, 3),
                     "solver_seconds_per_n": {str(n): round(s, 3) for n, s in per_n.items()}}
    return result


def _verdict(inv, results: list, completed: bool) -> Verdict:
    """Violated at some size (with the first such size's concrete run), proved at every size,
    or neither."""
    quote = getattr(inv.concrete, "quote", "") if getattr(inv, "concrete", None) is not None else inv.why
    refuted = next((r for r in results if r.violation and inv.name in r.violation), None)
    if refuted is not None:
        trace = refuted.witness if refuted.witness is not None and inv.name in refuted.witness.violated else None
        return Verdict(inv.name, inv.kind, VIOLATED, quote=quote, trace=trace,
                       detail=f"refuted at N={refuted.n}, min ISR {refuted.min_isr}")
    if completed and all(r.verdict == PROVED for r in results):
        ns = sorted({r.n for r in results})
        return Verdict(inv.name, inv.kind, HOLDS, quote=quote,
                       detail=f"proved for N={ns[0]}..{ns[-1]}" if ns else "no size checked")
    if any(inv.name in r.dropped for r in results):
        return Verdict(inv.name, inv.kind, UNKNOWN_STATUS, quote=quote,
                       detail="not inductive and no violation within the BMC depth")
    return Verdict(inv.name, inv.kind, STOPPED_STATUS, quote=quote, detail="not every size was checked")
