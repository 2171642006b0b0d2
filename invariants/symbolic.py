"""The properties the z3 engine proves, as the command line hands them to it: the z3 twin of
each concrete invariant that has one (declared with the invariant, `symbolic=`; the formulas
are in invariants/twins.py), and the LEMMAS.

LEMMAS are facts the proof may need to make the invariants inductive. They are not
claims of their own: the prover uses one only after proving it inductive together with
the invariants, and names it in the report.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import z3

from invariants import ELR_INVARIANTS, REGISTRY
from specs.symbolic import one_hot_or_zero, popcount


class SymbolicInvariant(NamedTuple):
    name: str
    kind: str                   # "state" or "step"
    formula: Callable           # (enc, s) -> BoolRef, or (enc, s, params, t) -> BoolRef
    why: str = ""
    concrete: Optional[Any] = None     # the concrete Invariant it restates (None: a lemma)
    proved: bool = False               # `prove` checks it by default (declared with its invariant)


def twin(inv) -> SymbolicInvariant:
    """The z3 form of a concrete invariant that carries one."""
    return SymbolicInvariant(inv.name, inv.kind, inv.symbolic, concrete=inv, proved=inv.proved)


_TWINS = {inv.name: twin(inv) for inv in REGISTRY if inv.symbolic is not None}
# The order the prover reports them in: the four ELR invariants, then the other properties the
# same encoding can state. Which of them `prove` checks by default is each invariant's own
# `proved=` (invariants/registry.py), not a place in this order.
_ORDER = ELR_INVARIANTS + ("LeaderInIsr", "LeaderElectedRegisteredUnfenced",
                           "UncleanElectionOnlyAfterMinIsrUncleanShutdowns",
                           "RecoveryElectsAReplicaWithEveryAnsweredRecord")
assert sorted(_ORDER) == sorted(_TWINS), "every z3 twin has its place in the report order"
INVARIANTS = tuple(_TWINS[name] for name in ELR_INVARIANTS)
MORE_INVARIANTS = tuple(_TWINS[name] for name in _ORDER if name not in ELR_INVARIANTS)
DEFAULT = tuple(t for t in INVARIANTS + MORE_INVARIANTS if t.proved)

LEMMAS = (
    SymbolicInvariant(
        "CandidatesCompleteOnReturn", "state",
        lambda enc, s: z3.Or(s.lost, (s.isr | s.elr) & (s.alive | s.clean_file) & ~s.complete == 0),
        "every ISR or ELR member that is running, or stopped cleanly and so will register "
        "cleanly, holds the committed log, fenced or not: unfencing or a clean registration "
        "makes it a candidate again without any check of its log"),
    SymbolicInvariant(
        "CleanlyStoppedIsFenced", "state",
        lambda enc, s: s.clean_file & (s.alive | ~s.fenced) == 0,
        "a clean shutdown ends with the controller fencing the broker, and only a new "
        "incarnation, which removes the file, can be unfenced: so no AlterPartition can add "
        "a cleanly stopped broker that missed records"),
    SymbolicInvariant(
        "CandidatesCoverMinIsr", "state",
        lambda enc, s: z3.Or(s.lost, z3.ULE(z3.ZeroExt(8, s.least_min_isr),
                                            z3.ZeroExt(8, popcount(s.isr | s.elr)) + z3.ZeroExt(8, s.unclean_shutdowns))),
        "ISR and ELR together shrink below the least min ISR of the run only by unclean shutdowns "
        "(KIP-966: \"ELR + ISR size will not be dropped below the min ISR unless the controller "
        "discovers an ELR member has an unclean shutdown\"); needs fixed topic config, since Kafka "
        "clears ELR on a min ISR change (FINDINGS.md F1)"),
    SymbolicInvariant(
        "EveryUncleanElectionChosen", "state",
        lambda enc, s: z3.Or(z3.Not(s.lost), s.operator_unclean),
        "every unclean election so far was one an operator chose: true where the controller never "
        "elects uncleanly on its own (recovery rounds replace the last-known-leader election, or "
        "there is no ELR), so a proof there may treat `lost` and `operator_unclean` as one"),
    SymbolicInvariant(
        "OneElrMemberAtMinIsrOne", "state",
        lambda enc, s: z3.Or(s.min_isr != 1, one_hot_or_zero(s.elr)),
        "with min ISR 1 the ELR only ever takes the last ISR member, so electing it from ELR "
        "cannot leave others behind in ELR beside a full ISR"),
)

BY_NAME = {inv.name: inv for inv in INVARIANTS + MORE_INVARIANTS + LEMMAS}
