"""One (config, N, min ISR) as z3 formulas: the induction query, Houdini's strengthening and
bounded model checking from the initial state (verifier/engines/prove/__init__.py asks them
per property). The checker knows the model only through the specs.symbolic seam."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Optional

import z3

from specs import Config
from specs.symbolic import ACTIONS, Abstract, Encoding, Params, Sym, evaluate, sized, sym_params, sym_state
from verifier.core import stop


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


def _step(model: z3.ModelRef, p: Params) -> Step:
    def val(x):
        return model.eval(x, model_completion=True)
    return Step(ACTIONS[val(p.action).as_long()], val(p.broker).as_long(), val(p.members).as_long(),
                val(p.pending).as_long(), val(p.value).as_long(), z3.is_true(val(p.flag)),
                val(p.pick).as_long(), z3.is_true(val(p.unclean)))


class Problem:
    """The formulas for one (config, N, min ISR)."""

    def __init__(self, cfg: Config, n: int, min_isr: int, config_changes: bool = True, initial_mins=None):
        self.cfg = sized(cfg, n, min_isr)
        self.n, self.min_isr = n, min_isr
        self.config_changes = config_changes
        # the min ISRs whose initial states an induction covers: with config changes min ISR is
        # state (a run may set any value), so induction pins nothing and must hold initially at
        # every min ISR the caller asks about; with fixed config it is this size's own
        self.initial_mins = tuple(initial_mins or (min_isr,))
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
        """None if `assumed` (on s) and T imply every goal; else (model, s, p, t, solver). The
        pre-state's min ISR is this size's only with fixed topic config: with config changes a
        proof at one min ISR must cover the states a change leads to as well, so it pins none."""
        s, t, p = sym_state(self.n, "s"), sym_state(self.n, "t"), sym_params(self.n, "p")
        solver = self._solver(timeout_ms)
        solver.add(self.enc.well_formed(s), self.enc.well_formed(t))
        if not self.config_changes:
            solver.add(s.min_isr == self.min_isr)
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
        """The state invariant holds in the initial state of every min ISR the proof covers."""
        if inv.kind != "state":
            return True
        s = sym_state(self.n, "i")
        solver = self._solver(None)
        solver.add(z3.Or(*(self.enc.initial(s, m) for m in self.initial_mins)), z3.Not(inv.formula(self.enc, s)))
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
