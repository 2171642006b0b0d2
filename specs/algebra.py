"""The small algebra the controller rules are written in, and its concrete meaning.

specs/pipeline.py and specs/controller.py never touch a broker set, a boolean or a count
directly: they call the operations of an algebra `R`, passed in. Two algebras implement
them. `CONCRETE` (here) computes on the model's values: sets are tuples of broker ids,
a broker is an int (`NONE` = no broker), conditions are bools, counts are ints. The z3
algebra (specs/symbolic/algebra.py) builds formulas: sets are N-bit vectors in replica
order, a broker a one-hot vector. So the rules are written once, and the BFS, fuzz, Spark
and z3 engines all check the same ones.

The operations, and what the rules may assume of them:
- sets: `empty`, `single(x)`, `union(a, b)` (a's order, then b's new members), `minus(a, b)`
  and `inter(a, b)` (a's order kept), `as_set(a)` (id order; where Kafka keeps a set),
  `member(x, a)`, `subset(a, b)`, `is_empty(a)`, `size(a)`, `first(a, order)` (the first
  member of `a` in `order`, or NONE), `only(a)` (the member of a one-member set, else NONE);
- brokers: `none`, `is_none(x)`, `eq(x, y)`, `ne(x, y)` (also on sets and counts);
- conditions: `true`, `false`, `all(*cs)`, `any(*cs)`, `not_(c)`, `ge(i, j)`, `gt(i, j)`;
- choice: `ite(c, a, b)` for one value, `branch(c, then, other)` for records built by the
  thunks `then()` / `other()` (the concrete algebra runs only the one it needs);
- errors: `first_error(checks)` over (condition, error name) pairs in Kafka's order,
  `refusal(name)` (the request changed nothing), `notice(name)` (returned with a change that
  was made) and `accepted(error)`; z3 keeps only whether a request was refused;
- what only the concrete model keeps: `epochs` (False in z3: no leader or partition
  epochs), `next_epoch(e)`, `broker_epoch(ctrl, b)`, `stale_members(ctrl, req)`, `register(ctrl, b, epoch)`,
  `has_duplicates(a)`, `effective_min_isr(ctrl)` (z3 stores min ISR already capped);
- a recovery round's GetReplicaLogInfo replies: `answered(answers, replicas)` (who replied)
  and `most_data(answers, candidates, replicas, most)` (the candidate with the highest last
  leader epoch, then the longest log; `most=False`: the least). z3 keeps no logs: there the
  choice is a variable that the encoding constrains (specs/symbolic/encoding.py).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from specs.state import NO_EPOCH, NO_LEADER, Controller


class Concrete:
    """The algebra on the model's own values."""

    epochs = True
    empty: tuple = ()
    none = NO_LEADER
    true, false = True, False

    # ---------------------------------------------------------------- sets
    @staticmethod
    def single(x: int) -> tuple:
        return () if x == NO_LEADER else (x,)

    @staticmethod
    def union(a: tuple, b: tuple) -> tuple:
        return tuple(a) + tuple([x for x in b if x not in a])

    @staticmethod
    def minus(a: tuple, b: tuple) -> tuple:
        return tuple([x for x in a if x not in b])

    @staticmethod
    def inter(a: tuple, b: tuple) -> tuple:
        return tuple([x for x in a if x in b])

    @staticmethod
    def as_set(a: tuple) -> tuple:
        return tuple(sorted(set(a)))

    @staticmethod
    def member(x: int, a: tuple) -> bool:
        return x in a

    @staticmethod
    def subset(a: tuple, b: tuple) -> bool:
        for x in a:
            if x not in b:
                return False
        return True

    @staticmethod
    def size(a: tuple) -> int:
        return len(a)

    @staticmethod
    def first(a: tuple, order: tuple) -> int:
        for r in order:
            if r in a:
                return r
        return NO_LEADER

    @staticmethod
    def entry(x: int) -> tuple:
        """A one-member list holding x even when x is NONE (Kafka 4.0 can write [-1])."""
        return (x,)

    @staticmethod
    def only(a: tuple) -> int:
        return a[0] if len(a) == 1 else NO_LEADER

    # ---------------------------------------------------------------- brokers and conditions
    @staticmethod
    def is_none(x: int) -> bool:
        return x == NO_LEADER

    @staticmethod
    def eq(x: Any, y: Any) -> bool:
        return x == y

    @staticmethod
    def ne(x: Any, y: Any) -> bool:
        return x != y

    @staticmethod
    def all(*cs: bool) -> bool:
        return all(cs)

    @staticmethod
    def any(*cs: bool) -> bool:
        return any(cs)

    @staticmethod
    def not_(c: bool) -> bool:
        return not c

    is_empty = not_               # a set of no members is falsy, as a false condition is

    @staticmethod
    def ge(i: int, j: int) -> bool:
        return i >= j

    @staticmethod
    def gt(i: int, j: int) -> bool:
        return i > j

    @staticmethod
    def ite(c: bool, a: Any, b: Any) -> Any:
        return a if c else b

    @staticmethod
    def branch(c: bool, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        return then() if c else other()

    # ---------------------------------------------------------------- errors
    @staticmethod
    def first_error(checks: Iterable[tuple[bool, str]]) -> Optional[str]:
        return next((name for failed, name in checks if failed), None)

    @staticmethod
    def accepted(error: Optional[str]) -> bool:
        return error is None

    @staticmethod
    def refusal(name: str) -> str:
        """An error that refuses the request (the state is left as it was)."""
        return name

    @staticmethod
    def notice(name: str) -> str:
        """An error name returned with a change that was made (NEW_LEADER_ELECTED)."""
        return name

    # ---------------------------------------------------------------- recovery rounds
    @staticmethod
    def answered(answers, replicas: tuple) -> tuple:
        """`answers`: broker -> (last leader epoch, log end offset), as a mapping or its items."""
        got = dict(answers)
        return tuple(b for b in replicas if b in got)

    @staticmethod
    def most_data(answers, candidates: tuple, replicas: tuple, most: bool) -> int:
        """Highest (last leader epoch, log end offset), ties to the first in replica order;
        `most=False` (a fault rule) the lowest."""
        if not candidates:
            return NO_LEADER
        got, sign = dict(answers), 1 if most else -1
        return max(candidates, key=lambda b: (sign * got[b][0], sign * got[b][1], -replicas.index(b)))

    # ---------------------------------------------------------------- only the concrete model
    @staticmethod
    def next_epoch(epoch: int) -> int:
        return epoch + 1

    @staticmethod
    def broker_epoch(ctrl: Controller, b: int) -> Optional[int]:
        return ctrl.broker_epoch(b)

    @staticmethod
    def stale_members(ctrl: Controller, req) -> bool:
        """Some proposed member's broker epoch is given (not -1) and is not the registered one."""
        return any(e != NO_EPOCH and e != ctrl.broker_epoch(m) for m, e in zip(req.isr, req.member_epochs))

    @staticmethod
    def register(ctrl: Controller, b: int, epoch: int) -> Controller:
        """b is registered with broker epoch `epoch` (the registry is kept sorted by id)."""
        if b in ctrl.registered:
            i = ctrl.registered.index(b)
            return ctrl._replace(broker_epochs=ctrl.broker_epochs[:i] + (epoch,) + ctrl.broker_epochs[i + 1:])
        registered = tuple(sorted(ctrl.registered + (b,)))
        i = registered.index(b)
        return ctrl._replace(registered=registered,
                             broker_epochs=ctrl.broker_epochs[:i] + (epoch,) + ctrl.broker_epochs[i:])

    @staticmethod
    def add_entries(entries: tuple, members: tuple) -> tuple:
        """Index entries: one more for each member (a multiset, sorted)."""
        return tuple(sorted(entries + tuple(members)))

    @staticmethod
    def has_duplicates(a: tuple) -> bool:
        return len(set(a)) != len(a)

    @staticmethod
    def effective_min_isr(ctrl: Controller) -> int:
        return ctrl.effective_min_isr

    @staticmethod
    def cap_min_isr(value: int, replicas: tuple) -> int:
        return min(value, len(replicas))


CONCRETE = Concrete()
