"""The properties' rules, once, over the kernel's rows: every engine's verdict comes from here.
invariants/structure.py, completeness.py and elections.py declare each property (its name,
group, the rule it quotes, its explanation and z3 twin); their `check` asks `holds` or
`step_holds` below, which pack the state and run these functions, and the compiled search
runs them on its rows directly. They live with the kernel, the model's compiled seam, so an
engine reaches them as it reaches the steps (never through invariants/). `STATE` and `STEP` map the registry's names
to their bit in the masks `state_violations` and `step_violations` return.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from specs.actions import ACTION_NAMES, OPERATOR_ELECTIONS
from specs.kernel import on_kernel
from specs.kernel.successors import DELIVER_ALTER_PARTITION, UNCLEAN_RECOVERY
from specs.kernel.symmetry import canonical_all
from specs.kernel.layout import FETCH_EPOCH, H_UNCLEAN_ELECTIONS, H_UNCLEAN_SHUTDOWNS, HWM, LEO, L_CTRL, L_HIST, L_NB
from specs.kernel.mechanics import (acceptable_leader, acked_mask, alive, at, broker_epoch, entry_epoch,
                                    entry_record, facts_of, has, holds_committed_log, least_min_isr, log_len,
                                    records_of, within_tolerance)
from specs.kernel.tables import (F_EFFECTIVE_MIN_ISR, F_ELR_MASK, F_FENCED, F_ISR_MASK, F_LEADER, F_LEADER_EPOCH,
                                 F_N_ISR, F_REGISTERED, F_REPLICA_MASK, F_UNCLEAN)

STATE = ("LeaderCandidateCompleteness", "LeaderCompleteness", "NoCommittedRecordLostGlobally",
         "ConsumerHwmNeverBackward", "NoLostReplicaInIsr", "FollowerLogMatchesLeader", "LogMatching",
         "IsrElrDisjoint", "ElrOnlyBelowMinIsr", "LeaderInIsr")
STEP = ("LeaderElectedRegisteredUnfenced", "ElectedLeaderWasCandidate",
        "UncleanElectionOnlyAfterMinIsrUncleanShutdowns", "OneLeaderPerEpoch",
        "RecoveryElectsAReplicaWithEveryAnsweredRecord")
ALL_STATE, ALL_STEP = (1 << len(STATE)) - 1, (1 << len(STEP)) - 1
# the steps OPERATOR_ELECTIONS names (specs/actions): their unclean choice is sanctioned
_OPERATOR = tuple(ACTION_NAMES.index(n) for n in sorted(OPERATOR_ELECTIONS))


@njit(cache=True, _nrt=False)
def running_leader(r, lay, f):
    leader = f[F_LEADER]
    return leader if leader >= 0 and alive(r, lay, leader) else -1


@njit(cache=True, _nrt=False)
def same_prefix(r, lay, a, b, n):
    """a's log[:n] == b's log[:n] (Python slices: a log shorter than n is its whole self)."""
    la, lb = min(n, log_len(r, lay, a)), min(n, log_len(r, lay, b))
    if la != lb:
        return False
    for k in range(la):
        if entry_epoch(r, lay, a, k) != entry_epoch(r, lay, b, k) or \
                entry_record(r, lay, a, k) != entry_record(r, lay, b, k):
            return False
    return True


@njit(cache=True, _nrt=False)
def state_violations(r, lay, facts, check):
    """The bits (STATE order) of the invariants in `check` (a mask) that r violates."""
    f = facts_of(r, lay, facts)
    nb = lay[L_NB]
    bad = 0
    tolerant = within_tolerance(r, lay, f)
    leader = running_leader(r, lay, f)
    acked = acked_mask(r, lay)
    if check & 1 and tolerant:                 # LeaderCandidateCompleteness
        candidates = f[F_ISR_MASK] | (f[F_ELR_MASK] & f[F_REGISTERED] & ~f[F_FENCED])
        for i in range(nb):
            if has(candidates, i) and alive(r, lay, i) and not holds_committed_log(r, lay, i):
                bad |= 1
                break
    if check & 2 and leader >= 0 and tolerant:     # LeaderCompleteness
        if acked & ~records_of(r, lay, leader):
            bad |= 2
    if check & 4 and tolerant:                 # NoCommittedRecordLostGlobally
        held = 0
        for i in range(nb):
            held |= records_of(r, lay, i)
        if acked & ~held:
            bad |= 4
    if check & 8 and leader >= 0 and tolerant and not holds_committed_log(r, lay, leader):
        bad |= 8                               # ConsumerHwmNeverBackward
    if check & 16 and leader >= 0:             # NoLostReplicaInIsr
        hwm = np.int64(r[at(lay, leader, HWM)])       # int64 at every call of same_prefix: one compile
        for i in range(nb):
            if has(f[F_ISR_MASK], i) and i != leader and alive(r, lay, i) and not same_prefix(r, lay, i, leader, hwm):
                bad |= 16
                break
    if check & 32 and leader >= 0:             # FollowerLogMatchesLeader
        for i in range(nb):
            leo = r[at(lay, i, LEO)]
            if leo < 0 or not alive(r, lay, i) or i == leader or r[at(lay, i, FETCH_EPOCH)] != broker_epoch(f, i):
                continue
            if leo > log_len(r, lay, leader) or not same_prefix(r, lay, i, leader, np.int64(leo)):
                bad |= 32
                break
    if check & 64 and not log_matching(r, lay):
        bad |= 64
    if check & 128 and f[F_ISR_MASK] & f[F_ELR_MASK]:
        bad |= 128                             # IsrElrDisjoint
    if check & 256 and f[F_ELR_MASK] and f[F_N_ISR] >= f[F_EFFECTIVE_MIN_ISR]:
        bad |= 256                             # ElrOnlyBelowMinIsr
    if check & 512 and f[F_LEADER] >= 0 and not has(f[F_ISR_MASK], f[F_LEADER]):
        bad |= 512                             # LeaderInIsr
    return bad


@njit(cache=True, _nrt=False)
def log_matching(r, lay):
    """Two logs with an entry of the same leader epoch at the same offset agree up to it."""
    nb = lay[L_NB]
    for a in range(nb):
        if log_len(r, lay, a) == 0:
            continue
        for b in range(a + 1, nb):
            if log_len(r, lay, b) == 0:
                continue
            for k in range(min(log_len(r, lay, a), log_len(r, lay, b)) - 1, -1, -1):
                if entry_epoch(r, lay, a, k) == entry_epoch(r, lay, b, k):
                    if not same_prefix(r, lay, a, b, np.int64(k + 1)):     # int64 at every call: one compile
                        return False
                    break
    return True


@njit(cache=True, _nrt=False)
def step_violations(prev, action, t, lay, facts, check):
    """The bits (STEP order) of the step invariants in `check` that prev -action-> t violates."""
    p, f = facts_of(prev, lay, facts), facts_of(t, lay, facts)
    h = lay[L_HIST]
    new = f[F_LEADER] if f[F_LEADER] >= 0 and f[F_LEADER] != p[F_LEADER] else -1
    more_unclean = t[h + H_UNCLEAN_ELECTIONS] > prev[h + H_UNCLEAN_ELECTIONS]
    bad = 0
    if check & 1 and new >= 0 and not acceptable_leader(f, new):
        bad |= 1                               # LeaderElectedRegisteredUnfenced
    if check & 2 and new >= 0 and not more_unclean:     # ElectedLeaderWasCandidate
        if action == DELIVER_ALTER_PARTITION:
            if not has(f[F_ISR_MASK], new):
                bad |= 2
        elif not has(p[F_ISR_MASK] | p[F_ELR_MASK], new):
            bad |= 2
    if check & 4 and more_unclean and not p[F_UNCLEAN]:  # UncleanElectionOnlyAfterMinIsrUncleanShutdowns
        operator = False
        for a in _OPERATOR:
            operator = operator or action == a
        if not operator and t[h + H_UNCLEAN_SHUTDOWNS] < least_min_isr(t, lay, f):
            bad |= 4                           # (held to the least min ISR of the run: docs/protocol.md)
    if check & 8 and f[F_LEADER] != p[F_LEADER] and f[F_LEADER_EPOCH] <= p[F_LEADER_EPOCH]:
        bad |= 8                               # OneLeaderPerEpoch
    if check & 16 and action == UNCLEAN_RECOVERY and new >= 0 and within_tolerance(prev, lay, p):
        chosen = records_of(t, lay, new)       # RecoveryElectsAReplicaWithEveryAnsweredRecord
        acked = acked_mask(prev, lay)
        for i in range(lay[L_NB]):
            if has(p[F_REPLICA_MASK], i) and alive(prev, lay, i) and acceptable_leader(p, i):
                if acked & records_of(prev, lay, i) & ~chosen:
                    bad |= 16
                    break
    return bad


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def step_verdict(prev, action, t, lay, facts, check):
    """step_violations(prev, action, t, ...), answered where it is called for the steps most
    are: every step property is about a change of the controller's value (a new leader, its
    epoch) or a new unclean election, so a step that leaves the controller's value id and the
    unclean-election count as they were violates none (their facts rows are one). Inlined,
    this spares most steps a call (about 45 ns passing the arrays: specs/kernel/successors.py)."""
    h = lay[L_HIST]
    if t[lay[L_CTRL]] == prev[lay[L_CTRL]] and t[h + H_UNCLEAN_ELECTIONS] == prev[h + H_UNCLEAN_ELECTIONS]:
        return 0
    return step_violations(prev, action, t, lay, facts, check)


@njit(cache=True, _nrt=False)
def steps_then_canonical(row, out, labels, n, lay, cv, tables, key, work, step_check, step_bad, at):
    """step_bad[at + k] := the step properties in `step_check` that row -labels[k]-> out[k]
    violates, then out[:n] rewritten as their orbits' canonical rows (canonical_all): n, or MISS.
    A step property compares a state with its successor under one naming of the brokers; the
    canonical row may rename them (b2 elected at b1's epoch reads as b1 again, and
    OneLeaderPerEpoch held on a model that breaks it), so a search that reduces by symmetry
    judges every step before it renames."""
    facts = tables[3]
    for k in range(n):
        step_bad[at + k] = step_verdict(row, labels[k, 0], out[k], lay, facts, step_check) if step_check else 0
    return canonical_all(out, n, lay, cv, tables, key, work)


# ---------------------------------------------------------------- the registry's checks
def holds(cfg, s, name: str) -> bool:
    """Whether state s satisfies the state invariant `name` (the registry's `check`)."""
    return on_kernel(cfg, lambda k: _holds(k, s, name))


def _holds(k, s, name: str) -> bool:
    memo = k.verdicts
    if memo[0] is not s:
        row = k.pack(s)
        memo[0], memo[1] = s, int(state_violations(row, k.layout.lay, k.tables.facts, ALL_STATE))
    return not memo[1] >> STATE.index(name) & 1


def step_holds(cfg, prev, label, s, name: str) -> bool:
    """Whether the step prev -label-> s satisfies the step invariant `name`."""
    return on_kernel(cfg, lambda k: _step_holds(k, prev, label, s, name))


def _step_holds(k, prev, label, s, name: str) -> bool:
    memo = k.step_verdicts
    if memo[0] is not prev or memo[1] is not s or memo[2] != label:
        name_of = "deliver_alter_partition" if label[0] == "alter_partition" else label[0]   # a raw request
        action = ACTION_NAMES.index(name_of) if name_of in ACTION_NAMES else -1
        bad = step_violations(k.pack(prev), action, k.pack(s), k.layout.lay, k.tables.facts, ALL_STEP)
        memo[:] = [prev, s, label, int(bad)]
    return not memo[3] >> STEP.index(name) & 1
