"""The transition relation for a cluster of any size N, as z3 formulas.

Controller steps run the controller's own rules (specs/controller.py, specs/pipeline.py) in
the z3 algebra (specs/symbolic/algebra.py): there is no second copy of them. The broker side
is abstracted by hand in specs/symbolic/brokers.py. Each step is a guard, a successor and
whether it elected uncleanly; the relation is their disjunction, and the self-check
(specs/symbolic/selfcheck.py) evaluates the same steps on constants.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import z3

from specs import controller as C
from specs.actions import symbolic_steps
from specs.config import Config
from specs.pipeline import DESIGNATED, PREFERRED, UNCLEAN
from specs.state import AlterPartitionRequest
from specs.symbolic import brokers as BR
from specs.symbolic.algebra import Answers, Symbolic, one_hot, one_hot_or_zero
from specs.symbolic.state import ACTION_BITS, RECOVERY_OFF, Params, Sym, is_recovering, make_sym


class StepFormula(NamedTuple):
    """One symbolic action under given choices: when it may run, where it leads."""
    guard: object            # z3 Bool (or a Python bool)
    succ: Sym
    unclean: object          # the step elected a leader from outside ISR/ELR


class Encoding:
    """The rules for one config (its Rules, unclean.leader.election.enable) and size N."""

    def __init__(self, cfg: Config, n: int, config_changes: bool = True):
        self.cfg, self.n, self.rules = cfg, n, cfg.rules
        self.config_changes = config_changes     # False: min ISR and unclean.leader.election fixed
        self.R = Symbolic(n)
        self.zero, self.all = self.R.empty, self.R.everyone
        self.first_replica = z3.BitVecVal(1, n)
        self.steps: dict[str, Callable[[Sym, Params], StepFormula]] = {
            "alter_partition": self.alter_partition, "fence": self.fence, "unfence": self.unfence,
            "controlled_shutdown": self.controlled_shutdown, "elect_preferred": self.elect_preferred,
            "elect_unclean": self.elect_unclean, "elect_designated": self.elect_designated,
            "periodic_unclean_election": self.periodic_unclean_election, "set_min_isr": self.set_min_isr,
            "set_unclean": self.set_unclean, "unclean_recovery": self.unclean_recovery,
            **{name: (lambda s, p, f=fn: f(self, s, p)) for name, fn in BR.STEPS.items()}}
        missing = set(ACTIONS) ^ set(self.steps)
        assert not missing, f"symbolic actions without a step (or steps without an action): {missing}"

    # ------------------------------------------------------------ domain and init

    def well_formed(self, s: Sym) -> z3.BoolRef:
        """Type constraints every state meets (not invariants: they say what a value is). The
        min ISR ghosts are a least of values 1..N; until a commit the promise is the current min
        ISR and every replica holds the committed log (the steps keep each so:
        tests/specs/symbolic/test_encoding.py proves that every step keeps this well formed)."""
        return z3.And(one_hot_or_zero(s.leader), one_hot_or_zero(s.last_known_leader),
                      z3.UGE(s.min_isr, 1), z3.ULE(s.min_isr, self.n),
                      z3.UGE(s.least_min_isr, 1), z3.ULE(s.least_min_isr, s.promised_min_isr),
                      z3.ULE(s.promised_min_isr, s.min_isr),
                      z3.Or(s.committed, z3.And(s.promised_min_isr == s.min_isr, s.complete == self.all)),
                      s.lossy & ~(s.fetched & ~s.alive & ~s.clean_file) == 0)

    def initial(self, s: Sym, min_isr: int) -> z3.BoolRef:
        """The concrete initial state: every replica running, unfenced, in the ISR; replicas[0]
        leads; nothing committed yet, so every replica is complete."""
        return z3.And(s.isr == self.all, s.elr == 0, s.cleared_elr == 0, s.last_known_elr == 0, s.last_known_leader == 0,
                      s.leader == self.first_replica, s.fenced == 0, s.shutting_down == 0,
                      s.alive == self.all, s.clean_file == 0, s.complete == self.all, s.fetched == 0, s.stale == 0,
                      s.lossy == 0,
                      s.min_isr == min(min_isr, self.n),
                      s.unclean_leader_election == z3.BoolVal(self.cfg.unclean_leader_election), z3.Not(s.lost),
                      z3.Not(s.operator_unclean),
                      s.unclean_shutdowns == 0, s.lossy_crashes == 0, z3.Not(s.recovering), z3.Not(s.committed),
                      s.promised_min_isr == s.min_isr, s.least_min_isr == s.min_isr)

    def acceptable(self, s: Sym) -> z3.BitVecRef:
        """Registered (always, here), unfenced, not in controlled shutdown."""
        return ~s.fenced & ~s.shutting_down

    def after(self, s: Sym, out: C.Outcome, **broker) -> Sym:
        """The state after a controller outcome, with the broker fields in `broker` changed.
        A new leader learns its followers again from Fetch. The min ISR ghosts follow the
        concrete rule (specs/kernel/mechanics.py, keep_promises): a raise leaves them, a
        lowering lowers them, and before a commit the promise is the current min ISR."""
        c, p = out.ctrl, out.ctrl.partition
        moved = p.leader != s.leader
        current = c.min_isr
        least = lambda a, b: z3.If(z3.ULE(a, b), a, b)  # noqa: E731
        promised = z3.If(s.committed, least(s.promised_min_isr, current), current)
        return make_sym(
            self.n, p.isr, p.elr, p.cleared_elr, p.last_known_elr, p.last_known_leader, p.leader, c.fenced, c.shutting_down,
            broker.get("alive", s.alive), broker.get("clean_file", s.clean_file), broker.get("complete", s.complete),
            z3.If(moved, self.zero, broker.get("fetched", s.fetched)),
            z3.If(moved, self.zero, broker.get("stale", s.stale)),
            c.min_isr, c.unclean_leader_election, self.R.any(s.lost, out.unclean_election),
            broker.get("unclean_shutdowns", s.unclean_shutdowns), broker.get("lossy_crashes", s.lossy_crashes),
            is_recovering(p.leader_recovery_state), self.R.any(s.operator_unclean, out.operator_unclean),
            committed=broker.get("committed", s.committed), promised_min_isr=promised,
            least_min_isr=least(s.least_min_isr, current),
            lossy=z3.If(moved, self.zero, broker.get("lossy", s.lossy)))

    def unchanged(self, s: Sym) -> C.Outcome:
        return C.Outcome(s.ctrl)

    def _done(self, guard, s: Sym, out: C.Outcome, **broker) -> StepFormula:
        return StepFormula(guard, self.after(s, out, **broker), out.unclean_election)

    # ------------------------------------------------------------ controller steps (Kafka's rules)

    def alter_partition(self, s: Sym, p: Params) -> StepFormula:
        """An AlterPartition from the current leader in the current epochs, proposing any ISR;
        the broker abstraction says which proposals a leader can make."""
        req = AlterPartitionRequest(broker=s.leader, broker_epoch=0, leader_epoch=0, partition_epoch=0,
                                    isr=p.members, member_epochs=(), leader_recovery_state=RECOVERY_OFF)
        out = C.alter_partition(self.R, self.rules, s.ctrl, req, prefer=self._pick(p))
        return self._done(self.R.all(self.R.accepted(out.error), BR.proposal_ok(self, s, p)), s, out)

    def fence(self, s: Sym, p: Params) -> StepFormula:
        out = C.fence(self.R, self.rules, s.ctrl, p.broker, self._pick(p))
        return self._done(z3.And(one_hot(p.broker), z3.Not(self.R.member(p.broker, s.fenced))), s, out)

    def unfence(self, s: Sym, p: Params) -> StepFormula:
        """A heartbeat: only a running broker that is not shutting down sends one."""
        out = C.unfence(self.R, self.rules, s.ctrl, p.broker, self._pick(p))
        return self._done(z3.And(one_hot(p.broker), self.R.member(p.broker, s.fenced & s.alive & ~s.shutting_down)),
                          s, out)

    def controlled_shutdown(self, s: Sym, p: Params) -> StepFormula:
        """A broker that leads nothing is fenced at once (SHUTDOWN_NOW) and stops cleanly."""
        out = C.controlled_shutdown(self.R, self.rules, s.ctrl, p.broker, self._pick(p))
        now = s.leader != p.broker
        return self._done(z3.And(one_hot(p.broker), self.R.member(p.broker, s.alive & ~s.fenced & ~s.shutting_down)),
                          s, out, alive=z3.If(now, s.alive & ~p.broker, s.alive),
                          clean_file=z3.If(now, s.clean_file | p.broker, s.clean_file))

    def elect_preferred(self, s: Sym, p: Params) -> StepFormula:
        return self._done(True, s, C.elect(self.R, self.rules, s.ctrl, PREFERRED))

    def elect_unclean(self, s: Sym, p: Params) -> StepFormula:
        return self._done(True, s, C.elect(self.R, self.rules, s.ctrl, UNCLEAN, prefer=self._pick(p)))

    def elect_designated(self, s: Sym, p: Params) -> StepFormula:
        return self._done(one_hot(p.broker), s, C.elect(self.R, self.rules, s.ctrl, DESIGNATED, leader=p.broker))

    def periodic_unclean_election(self, s: Sym, p: Params) -> StepFormula:
        return self._done(True, s, C.periodic_unclean_election(self.R, self.rules, s.ctrl, self._pick(p)))

    def set_min_isr(self, s: Sym, p: Params) -> StepFormula:
        guard = z3.And(z3.BoolVal(self.config_changes), z3.UGE(p.value, 1), z3.ULE(p.value, self.n))
        return self._done(guard, s, C.set_min_isr(self.R, self.rules, s.ctrl, p.value))

    def set_unclean(self, s: Sym, p: Params) -> StepFormula:
        return self._done(z3.BoolVal(self.config_changes), s, C.set_unclean(self.R, self.rules, s.ctrl, p.flag))

    def unclean_recovery(self, s: Sym, p: Params) -> StepFormula:
        """A KIP-966 recovery round (the controller's own rule), answered by every running
        acceptable replica, electing `p.pick`. z3 keeps no logs, so the choice "highest last
        leader epoch, then longest log" is abstracted to what it implies while durability
        holds (no unclean election yet, fewer lossy crashes than the promised min ISR):
        every committed record is in the log of each leader elected so far, and a replica's
        log is a prefix of the log of the leader of its last epoch, so a replica whose last
        epoch is the highest holds every committed record whenever any answerer does; among
        equal epochs the longest log does. So: a complete answerer if there is one. The
        fault rule (least data) picks an incomplete answerer if there is one, by the same
        argument. Outside that tolerance the choice is any answerer."""
        strategy = self.rules.unclean_recovery_strategy
        if strategy is None:
            return StepFormula(z3.BoolVal(False), s, False)
        answered = s.alive & self.acceptable(s)
        out = C.unclean_recovery(self.R, self.rules, s.ctrl, strategy, Answers(answered, p.pick))
        within = z3.And(z3.Not(s.lost), z3.ULT(s.lossy_crashes, s.promised_min_isr))
        wanted = s.complete if self.rules.recovery_prefers_most_data else ~s.complete
        choice = z3.Or(z3.Not(within), answered & wanted == 0, self.R.member(p.pick, wanted))
        guard = z3.And(one_hot(p.pick), self.R.member(p.pick, answered), choice)
        return self._done(self.R.all(self.R.accepted(out.error), guard), s, out)

    def _pick(self, p: Params) -> Optional[z3.BitVecRef]:
        return p.pick if self.rules.any_candidate_elections else None

    # ------------------------------------------------------------ the relation

    def step(self, name: str, s: Sym, p: Params) -> StepFormula:
        return self.steps[name](s, p)

    def transition(self, s: Sym, t: Sym, p: Params) -> z3.BoolRef:
        """T(s, t) under the choices p: a disjunction over ACTIONS of guard and effect."""
        choices = []
        for i, name in enumerate(ACTIONS):
            st = self.step(name, s, p)
            same = [a == b for a, b in zip(t.variables(), st.succ.variables())]
            choices.append(z3.And(p.action == i, st.guard, *same, p.unclean == st.unclean))
        return z3.Or(*choices)


# Every transition of the symbolic model: the z3 steps the action declarations name
# (specs/actions/), in their order, then the steps only the abstraction has.
ACTIONS = symbolic_steps() + BR.SYMBOLIC_ONLY
ACTION_ID = {name: i for i, name in enumerate(ACTIONS)}
assert len(ACTIONS) <= 1 << ACTION_BITS


def encoding(cfg: Config, n: Optional[int] = None) -> Encoding:
    return Encoding(cfg, len(cfg.replicas) if n is None else n)
