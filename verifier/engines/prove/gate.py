"""The z3 mutation gate's rule of a kill: a violation the base model does not have within the
same bound.

Kafka itself breaks LeaderCandidateCompleteness within a few steps (its last-known-leader
election loses data after min ISR unclean shutdowns of which one lost data: FINDINGS.md F6),
so a mutant's refutation of that invariant at the same depth says nothing. `baseline` finds,
per invariant, the depth at which the base breaks it; `refute_beyond` checks a mutant on the
invariants the base keeps to the full depth, and on each one the base breaks only to one step
short of the base's own violation. A gate runs at several min ISRs: the base's violation needs
min ISR unclean shutdowns, so it lies deeper as min ISR grows.
"""
from __future__ import annotations

from verifier.engines.prove import REFUTED, SizeResult, check_size

# The gate's BMC depth. 7, not prove's 6: the z3 broker abstraction loses committed data only
# after a commit (a crash before any commit loses nothing acknowledged), so the recovery
# mutant's run (produce, commit, lossy crash, ... the round that elects the shortest log) needs
# 7 symbolic steps; at depth 7 kafka's own F6 shows at min ISR 2 and is checked one step short.
GATE_DEPTH = 7


def baseline(base, n: int, m: int, depth: int, invariants: list, lemmas) -> dict[str, int]:
    """Invariant name -> the BMC depth at which `base` breaks it (only those it breaks within `depth`)."""
    short: dict[str, int] = {}
    while True:
        rest = [i for i in invariants if i.name not in short]
        if not rest:
            return short
        r = check_size(base, n, m, depth, invariants=rest, lemmas=lemmas, config_changes=False)
        if r.verdict != REFUTED:
            return short
        short.update({name: len(r.trace) - 1 for name in r.violation})


def refute_beyond(cfg, n: int, m: int, depth: int, invariants: list, lemmas, short: dict[str, int],
                  realize) -> SizeResult:
    """`cfg` checked on the invariants the base keeps to `depth`, then on each one the base
    breaks to one step short of the base's depth; the first refutation a concrete run
    reproduces, else the last answer."""
    r = check_size(cfg, n, m, depth, invariants=[i for i in invariants if i.name not in short], lemmas=lemmas,
                   config_changes=False, realize=realize)
    for name, d in sorted(short.items()):
        if r.verdict == REFUTED and r.witness is not None:
            break
        if d - 1 >= 1:
            r = check_size(cfg, n, m, d - 1, invariants=[i for i in invariants if i.name == name], lemmas=lemmas,
                           config_changes=False, realize=realize)
    return r
