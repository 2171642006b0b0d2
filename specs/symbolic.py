"""The controller's partition rules as z3 formulas, for a cluster of any size N.

A set of brokers is an N-bit vector (bit i = replicas[i], so the lowest set bit is the
first broker in replica order, which is whom Kafka elects). The encoding mirrors
specs/pipeline.py's `build` and specs/controller.py's events line by line, with the
same flags and mutant switches; tests/test_symbolic.py checks on random concrete states
that every controller event gives the successor the concrete functions give.

The broker side is abstracted to what the ELR properties need: which replicas run,
which wrote a clean-shutdown file, and a ghost bit per replica, `complete`, that says
"this replica's log holds every committed record". It is cleared by a lossy crash and
by an HWM advance (for replicas that lack the new record), set again by a fetch from a
complete leader, and, once an unclean election has happened (`lost`), unconstrained:
from there on KIP-966 promises no durability.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import z3

from specs.config import Config
from specs.pipeline import DESIGNATED, ONLINE, PREFERRED, UNCLEAN

COUNT_BITS = 8     # width of counts and min ISR (N <= 64 fits; N is at most a few dozen)

# Set-valued fields of a symbolic state (each an N-bit vector).
SET_FIELDS = ("isr", "elr", "last_known_elr", "last_known_leader", "leader", "fenced",
              "shutting_down", "alive", "clean_file", "complete", "fetched", "stale")
PARTITION_FIELDS = ("isr", "elr", "last_known_elr", "last_known_leader", "leader")


class Sym(NamedTuple):
    """One symbolic state. `leader` and `last_known_leader` are one-hot (0 = none)."""
    isr: z3.BitVecRef
    elr: z3.BitVecRef
    last_known_elr: z3.BitVecRef
    last_known_leader: z3.BitVecRef
    leader: z3.BitVecRef
    fenced: z3.BitVecRef
    shutting_down: z3.BitVecRef
    alive: z3.BitVecRef
    clean_file: z3.BitVecRef      # wrote a clean-shutdown file with its current broker epoch
    complete: z3.BitVecRef        # ghost: holds every committed record
    fetched: z3.BitVecRef         # the leader has seen a Fetch from it in this leader epoch
    stale: z3.BitVecRef           # ... but from its previous incarnation (KAFKA-14139's window)
    min_isr: z3.BitVecRef         # effective min ISR, 1..N
    unclean_leader_election: z3.BoolRef   # the topic's unclean.leader.election.enable
    lost: z3.BoolRef              # ghost: an unclean election happened
    unclean_shutdowns: z3.BitVecRef   # ghost: registrations judged unclean (saturating count)
    lossy_crashes: z3.BitVecRef   # ghost: lossy crashes of ISR/ELR members (saturating count)


class Built(NamedTuple):
    """What `build` writes: the partition fields and whether the election was unclean."""
    isr: z3.BitVecRef
    elr: z3.BitVecRef
    last_known_elr: z3.BitVecRef
    last_known_leader: z3.BitVecRef
    leader: z3.BitVecRef
    unclean: z3.BoolRef


class Params(NamedTuple):
    """The choices of one step: which action, on which broker, with which sets."""
    action: z3.BitVecRef          # index into ACTIONS
    broker: z3.BitVecRef          # one-hot
    members: z3.BitVecRef         # AlterPartition's proposed ISR / HWM survivors / fetchers
    pending: z3.BitVecRef         # the leader's pending ISR additions (maximal ISR)
    value: z3.BitVecRef           # set_min_isr's new value
    flag: z3.BoolRef              # crash: loses the unflushed suffix
    pick: z3.BitVecRef            # any_candidate_elections: the candidate chosen
    unclean: z3.BoolRef           # out: this step elected uncleanly


# Every transition of the symbolic model. Controller events first, then the broker
# abstraction. Each has an enabling condition and an effect, as in specs/actions.py.
CONTROLLER_ACTIONS = ("alter_partition", "fence", "unfence", "controlled_shutdown",
                      "elect_preferred", "elect_unclean", "elect_designated", "periodic_unclean_election",
                      "set_min_isr", "set_unclean")
# `restart` is a new incarnation's registration (specs.controller.register).
BROKER_ACTIONS = ("crash", "clean_shutdown", "restart", "advance_hwm", "fetch", "diverge", "stutter")
ACTIONS = CONTROLLER_ACTIONS + BROKER_ACTIONS
ACTION_ID = {name: i for i, name in enumerate(ACTIONS)}
# Mutants of specs/mutants.py whose rule lives where this encoding does not look.
NOT_ENCODED = {
    "follower-no-truncate": "log truncation: the encoding keeps one completeness bit per replica, not logs",
    "leader-epoch-not-bumped": "leader epochs: the encoding keeps no epochs",
}
ACTION_BITS = 5


def sym_state(n: int, tag: str) -> Sym:
    return Sym(*(z3.BitVec(f"{name}_{tag}", n) for name in SET_FIELDS),
               min_isr=z3.BitVec(f"min_isr_{tag}", COUNT_BITS),
               unclean_leader_election=z3.Bool(f"unclean_leader_election_{tag}"), lost=z3.Bool(f"lost_{tag}"),
               unclean_shutdowns=z3.BitVec(f"unclean_shutdowns_{tag}", COUNT_BITS),
               lossy_crashes=z3.BitVec(f"lossy_crashes_{tag}", COUNT_BITS))


def sym_params(n: int, tag: str) -> Params:
    return Params(z3.BitVec(f"action_{tag}", ACTION_BITS), z3.BitVec(f"broker_{tag}", n), z3.BitVec(f"members_{tag}", n),
                  z3.BitVec(f"pending_{tag}", n), z3.BitVec(f"value_{tag}", COUNT_BITS),
                  z3.Bool(f"flag_{tag}"), z3.BitVec(f"pick_{tag}", n), z3.Bool(f"unclean_{tag}"))


def popcount(x: z3.BitVecRef) -> z3.BitVecRef:
    n = x.size()
    return z3.Sum([z3.ZeroExt(COUNT_BITS - 1, z3.Extract(i, i, x)) for i in range(n)])


def one_hot(x: z3.BitVecRef) -> z3.BoolRef:
    return z3.And(x != 0, x & (x - 1) == 0)


def one_hot_or_zero(x: z3.BitVecRef) -> z3.BoolRef:
    return x & (x - 1) == 0


def lowest(x: z3.BitVecRef) -> z3.BitVecRef:
    """The first broker in replica order among x (0 if x is empty)."""
    return x & -x


def meets(x: z3.BitVecRef, y: z3.BitVecRef) -> z3.BoolRef:
    return x & y != 0


class Encoding:
    """The rules for one config (flags, mutant, unclean.leader.election.enable) and size N."""

    def __init__(self, cfg: Config, n: int, config_changes: bool = True):
        self.cfg, self.n = cfg, n
        self.config_changes = config_changes     # False: min ISR and unclean.leader.election fixed
        self.flags, self.mutant = cfg.flags, cfg.mutant
        self.zero = z3.BitVecVal(0, n)
        self.all = z3.BitVecVal((1 << n) - 1, n)
        self.first_replica = z3.BitVecVal(1, n)

    # ------------------------------------------------------------ domain and init

    def well_formed(self, s: Sym) -> z3.BoolRef:
        """Type constraints every state meets (not invariants: they say what a value is)."""
        return z3.And(one_hot_or_zero(s.leader), one_hot_or_zero(s.last_known_leader),
                      z3.UGE(s.min_isr, 1), z3.ULE(s.min_isr, self.n))

    def initial(self, s: Sym, min_isr: int) -> z3.BoolRef:
        """specs.actions.init_state: every replica running, unfenced, in the ISR; replicas[0]
        leads; nothing committed yet, so every replica is complete."""
        return z3.And(s.isr == self.all, s.elr == 0, s.last_known_elr == 0, s.last_known_leader == 0,
                      s.leader == self.first_replica, s.fenced == 0, s.shutting_down == 0,
                      s.alive == self.all, s.clean_file == 0, s.complete == self.all, s.fetched == 0, s.stale == 0,
                      s.min_isr == min(min_isr, self.n),
                      s.unclean_leader_election == z3.BoolVal(self.cfg.unclean_leader_election), z3.Not(s.lost),
                      s.unclean_shutdowns == 0, s.lossy_crashes == 0)

    # ------------------------------------------------------------ the pipeline

    def acceptable(self, s: Sym) -> z3.BitVecRef:
        """Registered (always, here), unfenced, not in controlled shutdown."""
        return ~s.fenced & ~s.shutting_down

    def build(self, s: Sym, target, *, election: str = ONLINE, designated=None,
              unclean_shutdown=None, pick=None) -> Built:
        """specs.pipeline.build without reassignment: ELR update, election, last_known_elr."""
        f, m, Z = self.flags, self.mutant, self.zero
        acc = self.acceptable(s)
        elr, lke, lkl = s.elr, s.last_known_elr, s.last_known_leader
        # 1. ELR update.
        if f.elr:
            enough = z3.UGE(popcount(target), s.min_isr)
            if m == "elr-not-cleared":
                enough = z3.BoolVal(False)
            before = s.elr | s.isr
            candidates = s.elr if m == "fenced-not-into-elr" else before
            if m != "elr-includes-target-isr":
                candidates = candidates & ~target
            if m != "unclean-shutdown-kept-in-elr" and unclean_shutdown is not None:
                candidates = candidates & ~unclean_shutdown
            elr = z3.If(enough, Z, candidates)
            if not f.use_last_known_leader:
                lke = z3.If(enough, Z, (before | s.last_known_elr) & ~target & ~candidates)
        else:
            elr, lke = Z, Z

        # 2. Leader election.
        from_elr = z3.If(target == 0, elr, Z) if f.elr else Z
        if m == "fenced-elr-elected":
            valid = (target & acc) | (from_elr & ~s.shutting_down)
        else:
            valid = (target | from_elr) & acc

        def first(candidates):
            if f.any_candidate_elections and pick is not None:
                return z3.If(meets(pick, candidates), pick, lowest(candidates))
            return lowest(candidates)

        if f.elr:
            if f.use_last_known_leader:
                known = z3.If(one_hot(s.last_known_elr), s.last_known_elr, Z)
            else:
                known = s.last_known_leader
            last_known = z3.If(z3.And(target == 0, elr == 0, meets(known, acc)), known, Z)
        else:
            last_known = Z
        unclean_allowed = z3.BoolVal(election == UNCLEAN) if election != ONLINE else s.unclean_leader_election

        if election == DESIGNATED:
            leader = designated
            unclean = z3.Not(meets(designated, valid))
        else:
            chosen = first(valid)
            fallback = z3.If(chosen != 0, chosen, last_known)
            unclean = z3.And(chosen == 0, last_known != 0)
            any_live = z3.If(unclean_allowed, first(acc), Z)
            unclean = z3.Or(unclean, z3.And(fallback == 0, any_live != 0))
            fallback = z3.If(fallback == 0, any_live, fallback)
            if m == "unclean-election-marked-clean":
                live = lowest(acc)
                marked = z3.And(fallback == 0, live != 0)
                target = z3.If(marked, live, target)
                fallback = z3.If(fallback == 0, live, fallback)
            keep = meets(s.leader, valid)
            leader = z3.If(keep, s.leader, fallback)
            unclean = z3.And(z3.Not(keep), unclean)
            if election == PREFERRED:
                preferred_ok = meets(self.first_replica, valid)
                leader = z3.If(preferred_ok, self.first_replica, leader)
                unclean = z3.And(z3.Not(preferred_ok), unclean)

        changed = z3.And(leader != s.leader, leader != 0)
        raw_unclean = unclean
        unclean = z3.And(changed, unclean)
        new_isr = target
        from_elr_leader = z3.And(changed, z3.Not(unclean), z3.Not(meets(leader, target)), meets(leader, elr))
        if m == "elr-leader-not-added-to-isr":
            from_elr_leader = z3.BoolVal(False)
        new_isr = z3.If(unclean, leader, z3.If(from_elr_leader, leader, new_isr))
        elr = z3.If(unclean, Z, z3.If(from_elr_leader, elr & ~leader, elr))
        lke = z3.If(unclean, Z, lke)
        if not f.elr:
            new_isr = z3.If(new_isr == 0, s.isr, new_isr)   # last replica standing: never empty

        # 3. last_known_elr (Kafka: the last known leader) / the KIP's last known leader.
        if f.elr:
            went_leaderless = z3.And(leader == 0, s.leader != 0)
            if f.use_last_known_leader:
                lke = z3.If(went_leaderless, z3.If(s.last_known_elr == 0, s.leader, lke),
                            z3.If(changed, Z, lke))
            else:
                lkl = z3.If(went_leaderless, s.leader, lkl)
            lkl = z3.If(z3.And(z3.Not(went_leaderless), changed), Z, lkl)
        # Kafka's builder reports the election unclean whenever it wrote a record, even if the
        # unclean pick was the sitting leader (only possible when the leader had left the ISR)
        wrote = z3.Or(leader != s.leader, new_isr != s.isr, elr != s.elr, lke != s.last_known_elr,
                      lkl != s.last_known_leader)
        return Built(new_isr, elr, lke, lkl, leader, z3.And(raw_unclean, wrote))

    def unchanged(self, s: Sym) -> Built:
        return Built(s.isr, s.elr, s.last_known_elr, s.last_known_leader, s.leader, z3.BoolVal(False))

    @staticmethod
    def pick_if(cond, then: Built, other: Built) -> Built:
        return Built(*(z3.If(cond, a, b) for a, b in zip(then, other)))

    # ------------------------------------------------------------ controller events

    def remove_from_isr(self, s: Sym, b, pick=None) -> Built:
        return self.pick_if(meets(b, s.isr), self.build(s, s.isr & ~b, pick=pick), self.unchanged(s))

    def fence(self, s: Sym, b, pick=None) -> tuple[Sym, Built]:
        """specs.controller.fence (the caller checks b is not fenced yet)."""
        s = s._replace(fenced=s.fenced | b)
        return s, self.remove_from_isr(s, b, pick)

    def unfence(self, s: Sym, b, pick=None) -> tuple[Sym, Built]:
        s = s._replace(fenced=s.fenced & ~b)
        if self.mutant == "unfence-adds-to-isr":
            return s, self.pick_if(z3.Not(meets(b, s.isr)), self.build(s, s.isr | b, pick=pick),
                                   self.pick_if(s.leader != 0, self.unchanged(s), self.build(s, s.isr, pick=pick)))
        return s, self.pick_if(s.leader != 0, self.unchanged(s), self.build(s, s.isr, pick=pick))

    def controlled_shutdown(self, s: Sym, b, pick=None) -> tuple[Sym, Built]:
        s = s._replace(shutting_down=s.shutting_down | b)
        return s, self.remove_from_isr(s, b, pick)

    def register(self, s: Sym, b, clean, pick=None) -> tuple[Sym, Built]:
        """A new incarnation of b registers, fenced; an unclean one leaves ISR and ELR."""
        if self.mutant == "unclean-registration-treated-clean":
            clean = z3.BoolVal(True)
        s = s._replace(fenced=s.fenced | b, shutting_down=s.shutting_down & ~b)
        removed = self.remove_from_isr(s, b, pick)
        if not self.flags.elr:
            return s, removed
        target = s.isr if self.mutant == "register-keeps-isr" else s.isr & ~b
        unclean_path = self.pick_if(meets(b, s.isr | s.elr),
                                    self.build(s, target, unclean_shutdown=b, pick=pick), self.unchanged(s))
        return s, self.pick_if(clean, removed, unclean_path)

    def alter_partition(self, s: Sym, proposed, pick=None) -> tuple[z3.BoolRef, Built]:
        """An AlterPartition from the current leader in the current epochs that passes every
        check of validate_alter_partition: (accepted?, result)."""
        accepted = z3.And(s.leader != 0, meets(s.leader, proposed), proposed & ~self.acceptable(s) == 0)
        return accepted, self.build(s, proposed, pick=pick)

    def elect(self, s: Sym, kind: str, designated=None, pick=None) -> Built:
        """specs.controller.elect; a refused election leaves the partition as it was."""
        if kind == PREFERRED:
            return self.pick_if(s.leader == self.first_replica, self.unchanged(s),
                                self.build(s, s.isr, election=PREFERRED))
        if kind == UNCLEAN:
            return self.pick_if(s.leader != 0, self.unchanged(s), self.build(s, s.isr, election=UNCLEAN, pick=pick))
        ok = z3.And(s.leader == 0, meets(designated, self.acceptable(s)))
        return self.pick_if(ok, self.build(s, s.isr, election=DESIGNATED, designated=designated), self.unchanged(s))

    def periodic_unclean_election(self, s: Sym, pick=None) -> Built:
        return self.pick_if(z3.Or(z3.Not(s.unclean_leader_election), s.leader != 0), self.unchanged(s),
                            self.build(s, s.isr, election=UNCLEAN, pick=pick))

    def set_min_isr(self, s: Sym, value) -> tuple[Sym, Built]:
        s2 = s._replace(min_isr=value)
        clears = z3.Or(s.elr != 0, s.last_known_elr != 0)
        if not self.flags.min_isr_change_always_clears_elr:
            clears = z3.And(clears, z3.ULE(value, popcount(s.isr)))
        cleared = Built(s.isr, self.zero, self.zero, s.last_known_leader, s.leader, z3.BoolVal(False))
        return s2, self.pick_if(clears, cleared, self.unchanged(s))

    # ------------------------------------------------------------ the transition relation

    def _hwm_gate(self, s: Sym, pending) -> tuple[z3.BoolRef, z3.BitVecRef]:
        """(may the leader advance its HWM, who is sure to hold the new record)."""
        gate_set = s.isr | pending if self.mutant == "hwm-maximal-isr" else s.isr
        keeps = s.isr
        if self.mutant == "hwm-uses-leader-leo":
            keeps = s.leader
        if self.flags.hwm_requires_min_isr and self.mutant != "hwm-ignores-min-isr":
            return z3.UGE(popcount(gate_set), s.min_isr), keeps
        return z3.BoolVal(True), keeps

    def _next(self, s: Sym, t: Sym, ctrl: Sym, built: Built, **broker) -> z3.BoolRef:
        """t is ctrl's registry with built's partition fields and the given broker fields."""
        eqs = [t.isr == built.isr, t.elr == built.elr, t.last_known_elr == built.last_known_elr,
               t.last_known_leader == built.last_known_leader, t.leader == built.leader,
               t.fenced == ctrl.fenced, t.shutting_down == ctrl.shutting_down, t.min_isr == ctrl.min_isr,
               t.unclean_leader_election == ctrl.unclean_leader_election,
               t.lost == z3.Or(s.lost, built.unclean),
               t.unclean_shutdowns == broker.pop("unclean_shutdowns", s.unclean_shutdowns),
               t.lossy_crashes == broker.pop("lossy_crashes", s.lossy_crashes)]
        for name in ("alive", "clean_file", "complete"):
            eqs.append(getattr(t, name) == broker.get(name, getattr(s, name)))
        # a new leader learns its followers again from Fetch
        new_leader = built.leader != s.leader
        for name in ("fetched", "stale"):
            eqs.append(getattr(t, name) == z3.If(new_leader, self.zero, broker.get(name, getattr(s, name))))
        return z3.And(*eqs)

    def transition(self, s: Sym, t: Sym, p: Params) -> z3.BoolRef:
        """T(s, t) under the choices p: a disjunction over ACTIONS of guard and effect."""
        f, m = self.flags, self.mutant
        b, pick = p.broker, p.pick
        choices = []

        def case(name, guard, formula, unclean):
            choices.append(z3.And(p.action == ACTION_ID[name], guard, formula, p.unclean == unclean))

        accepted, built = self.alter_partition(s, p.members, pick)
        # A new member caught up to the HWM before the leader proposed it, so it is complete
        # unless it has stopped since; without KIP-903's epoch check the request may also
        # be stale and name the member's previous incarnation.
        fresh_ok = z3.BoolVal(True)
        if m != "expand-without-catch-up":
            stale = s.stale if not f.broker_epoch_check or m == "no-broker-epoch-check" else self.zero
            fresh_ok = p.members & ~s.isr & ~s.complete & s.alive & ~stale == 0
        case("alter_partition", z3.And(accepted, fresh_ok), self._next(s, t, s, built), built.unclean)

        fenced_s, built = self.fence(s, b, pick)
        case("fence", z3.And(one_hot(b), z3.Not(meets(b, s.fenced))), self._next(s, t, fenced_s, built),
             built.unclean)
        unf_s, built = self.unfence(s, b, pick)
        case("unfence", z3.And(one_hot(b), meets(b, s.fenced & s.alive & ~s.shutting_down)),
             self._next(s, t, unf_s, built), built.unclean)
        cs_s, built = self.controlled_shutdown(s, b, pick)
        case("controlled_shutdown", z3.And(one_hot(b), meets(b, s.alive & ~s.fenced & ~s.shutting_down)),
             self._next(s, t, cs_s, built), built.unclean)
        for kind, name in ((PREFERRED, "elect_preferred"), (UNCLEAN, "elect_unclean")):
            built = self.elect(s, kind, pick=pick)
            case(name, z3.BoolVal(True), self._next(s, t, s, built), built.unclean)
        built = self.elect(s, DESIGNATED, designated=b)
        case("elect_designated", one_hot(b), self._next(s, t, s, built), built.unclean)
        built = self.periodic_unclean_election(s, pick)
        case("periodic_unclean_election", z3.BoolVal(True), self._next(s, t, s, built), built.unclean)
        min_s, built = self.set_min_isr(s, p.value)
        case("set_min_isr", z3.And(z3.BoolVal(self.config_changes), z3.UGE(p.value, 1), z3.ULE(p.value, self.n)),
             self._next(s, t, min_s, built), z3.BoolVal(False))

        case("set_unclean", z3.BoolVal(self.config_changes),
             self._next(s, t, s._replace(unclean_leader_election=p.flag), self.unchanged(s)), z3.BoolVal(False))

        # Broker side.
        none = self.unchanged(s)
        # a lossy crash (flag) loses the unflushed suffix: committed records too if `members` has b
        keep_data = z3.If(p.flag, s.complete & ~(b & p.members), s.complete)
        counts = z3.And(p.flag, meets(b, s.isr | s.elr), s.lossy_crashes != 255)
        case("crash", z3.And(one_hot(b), meets(b, s.alive)),
             self._next(s, t, s, none, alive=s.alive & ~b, clean_file=s.clean_file & ~b, complete=keep_data,
                        lossy_crashes=z3.If(counts, s.lossy_crashes + 1, s.lossy_crashes)),
             z3.BoolVal(False))
        stop_s, built = self.fence(s, b, pick)
        built = self.pick_if(meets(b, s.fenced), none, built)    # the fence is a no-op if fenced already
        case("clean_shutdown", z3.And(one_hot(b), meets(b, s.alive & s.shutting_down)),
             self._next(s, t, stop_s, built, alive=s.alive & ~b, clean_file=s.clean_file | b), built.unclean)
        judged_clean = meets(b, s.clean_file)
        if m == "unclean-registration-treated-clean":
            judged_clean = z3.BoolVal(True)
        reg_s, built = self.register(s, b, meets(b, s.clean_file), pick)
        counted = z3.If(z3.Or(judged_clean, s.unclean_shutdowns == 255), s.unclean_shutdowns, s.unclean_shutdowns + 1)
        case("restart", z3.And(one_hot(b), z3.Not(meets(b, s.alive))),
             self._next(s, t, reg_s, built, alive=s.alive | b, clean_file=s.clean_file & ~b,
                        stale=s.stale | (s.fetched & b), unclean_shutdowns=counted), built.unclean)
        may_advance, keeps = self._hwm_gate(s, p.pending)
        case("advance_hwm", z3.And(s.leader != 0, meets(s.leader, s.alive), may_advance,
                                   p.pending & ~s.complete == 0),
             self._next(s, t, s, none, complete=s.complete & (keeps | p.members)), z3.BoolVal(False))
        # followers copy the leader's log: complete if the leader is, else truncated like it
        copied = z3.If(meets(s.leader, s.complete), s.complete | p.members, s.complete & ~p.members)
        case("fetch", z3.And(s.leader != 0, meets(s.leader, s.alive), p.members & (~s.alive | s.leader) == 0),
             self._next(s, t, s, none, complete=copied, fetched=s.fetched | p.members,
                        stale=s.stale & ~p.members), z3.BoolVal(False))
        case("diverge", s.lost, self._next(s, t, s, none, complete=p.members), z3.BoolVal(False))
        case("stutter", z3.BoolVal(True), self._next(s, t, s, none), z3.BoolVal(False))
        return z3.Or(*choices)


def encoding(cfg: Config, n: Optional[int] = None) -> Encoding:
    return Encoding(cfg, len(cfg.replicas) if n is None else n)
