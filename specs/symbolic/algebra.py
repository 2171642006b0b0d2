"""The z3 meaning of the algebra the controller rules are written in (specs/algebra.py).

A set of brokers is an N-bit vector, bit i standing for replicas[i], so the lowest set bit
is the first broker in replica order, the one Kafka elects; a broker is a one-hot vector
(0 = none); a condition is a z3 Bool; a count is an 8-bit vector. Python constants stay
Python constants where both sides of an operation are constants, so the checks that only
the concrete model can fail (epochs, duplicates) fold away instead of becoming formulas.
What the encoding forgets: epochs, registration (every replica is registered), the order
of the ISR, and the reason a request was refused (only whether it was).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple

import z3

COUNT_BITS = 8     # width of counts and min ISR (N is at most a few dozen)


def popcount(x: z3.BitVecRef) -> z3.BitVecRef:
    return z3.Sum([z3.ZeroExt(COUNT_BITS - 1, z3.Extract(i, i, x)) for i in range(x.size())])


def one_hot(x: z3.BitVecRef) -> z3.BoolRef:
    return z3.And(x != 0, x & (x - 1) == 0)


def one_hot_or_zero(x: z3.BitVecRef) -> z3.BoolRef:
    return x & (x - 1) == 0


def lowest(x: z3.BitVecRef) -> z3.BitVecRef:
    """The first broker in replica order among x (0 if x is empty)."""
    return x & -x


def meets(x: z3.BitVecRef, y: z3.BitVecRef) -> z3.BoolRef:
    return x & y != 0


def _static(x: Any) -> bool:
    return not isinstance(x, z3.ExprRef)


def _is_record(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


class Answers(NamedTuple):
    """A recovery round's GetReplicaLogInfo replies as z3 sees them: who answered, and the
    replica the round chooses. z3 keeps no logs, so "highest last leader epoch, then longest
    log" cannot be computed here; the encoding constrains `chosen` instead (Encoding.unclean_recovery)."""
    answered: z3.BitVecRef
    chosen: z3.BitVecRef


class Symbolic:
    """The algebra over z3 terms for a cluster of n replicas."""

    epochs = False
    true, false = True, False

    def __init__(self, n: int):
        self.n = n
        self.empty = z3.BitVecVal(0, n)
        self.none = self.empty
        self.everyone = z3.BitVecVal((1 << n) - 1, n)

    # ---------------------------------------------------------------- sets
    def single(self, x):
        return x

    def add_entries(self, entries, members):
        """Index entries as z3 keeps them: who has one (no counts; z3 keeps no epochs)."""
        return entries | members

    def entry(self, x):
        """[x]; z3 has no NONE member, so [NONE] is the empty set (docs/protocol.md says why
        that loses nothing)."""
        return x

    def union(self, a, b):
        return a | b

    def minus(self, a, b):
        return a & ~b

    def inter(self, a, b):
        return a & b

    def as_set(self, a):
        return a

    def member(self, x, a):
        return meets(x, a)

    def subset(self, a, b):
        return a & ~b == 0

    def is_empty(self, a):
        return a == 0

    def size(self, a):
        return popcount(a)

    def first(self, a, order):
        return lowest(a)

    def only(self, a):
        return z3.If(one_hot(a), a, self.empty)

    # ---------------------------------------------------------------- brokers and conditions
    def is_none(self, x):
        return x == 0

    def eq(self, x, y):
        if x is y:
            return True
        if _is_record(x) and _is_record(y):
            return self.all_(*(self.eq(a, b) for a, b in zip(x, y)))
        if _static(x) and _static(y):
            return x == y
        return x == y

    def ne(self, x, y):
        return self.not_(self.eq(x, y))

    @staticmethod
    def _fold(cs, unit: bool, join):
        """`join` of the conditions, with Python's own True and False folded away: `unit` (True
        for a conjunction) is dropped, its opposite decides at once."""
        rest = [c for c in cs if c is not unit]
        if any(c is (not unit) for c in rest):
            return not unit
        return rest[0] if len(rest) == 1 else (join(*rest) if rest else unit)

    def all_(self, *cs):
        return self._fold(cs, True, z3.And)

    all = all_    # the algebra's name (shadows the set `all` only as a method)

    def any(self, *cs):
        return self._fold(cs, False, z3.Or)

    def not_(self, c):
        return (not c) if isinstance(c, bool) else z3.Not(c)

    def ge(self, i, j):
        return i >= j if _static(i) and _static(j) else z3.UGE(i, j)

    def gt(self, i, j):
        return i > j if _static(i) and _static(j) else z3.UGT(i, j)

    def ite(self, c, a, b):
        if isinstance(c, bool):
            return a if c else b
        return self.merge(c, a, b)

    def branch(self, c, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        if isinstance(c, bool):
            return then() if c else other()
        return self.merge(c, then(), other())

    def merge(self, c, a, b):
        """The value that is `a` where c holds and `b` elsewhere, field by field for records."""
        if a is b:
            return a
        if _is_record(a) and _is_record(b):
            return type(a)(*(self.merge(c, x, y) for x, y in zip(a, b)))
        if a is None and b is None:
            return None
        if a is None or b is None:       # an error field: None is "not refused"
            a, b = (False if a is None else a), (False if b is None else b)
        if _static(a) and _static(b) and a == b:
            return a
        return z3.If(c, a, b)

    # ---------------------------------------------------------------- errors
    def first_error(self, checks: Iterable[tuple[Any, str]]):
        return self.any(*(failed for failed, _ in checks))

    def accepted(self, error):
        return True if error is None else self.not_(error)

    def refusal(self, name: str):
        return True

    def notice(self, name: str):
        return None

    # ---------------------------------------------------------------- recovery rounds
    def answered(self, answers: Answers, replicas):
        return answers.answered

    def most_data(self, answers: Answers, candidates, replicas, most):
        return answers.chosen

    # ---------------------------------------------------------------- what z3 does not keep
    def next_epoch(self, epoch):
        return epoch

    def broker_epoch(self, ctrl, b):
        return 0

    def stale_members(self, ctrl, req):
        return False      # stale Fetch knowledge is in the broker abstraction (specs/symbolic/brokers.py)

    def register(self, ctrl, b, epoch):
        return ctrl

    def has_duplicates(self, a):
        return False

    def effective_min_isr(self, ctrl):
        return ctrl.min_isr

    def cap_min_isr(self, value, replicas):
        return value
