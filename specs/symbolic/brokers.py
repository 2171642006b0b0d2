"""The broker side, abstracted by hand for the z3 encoding.

Why by hand: the concrete broker side (specs/kernel/data.py) works on logs, offsets and the
leader's Fetch bookkeeping, which no finite formula over N brokers can hold for any N. The
ELR properties need much less: which replicas run, which wrote a clean-shutdown file, and
a ghost bit per replica, `complete`, "this replica's log holds every committed record". It
is cleared by a lossy crash and by an HWM advance (for replicas that lack the new record),
set again by a fetch from a complete leader, and unconstrained under a running leader that lacks
committed records (after an unclean election, or Kafka 3.9's last replica standing). The broker rules are
read from the same `Rules` fields as the concrete broker side; tests/symbolic/ check that
every concrete step is a step of this abstraction.
"""
from __future__ import annotations

import z3

from specs import controller as C
from specs.symbolic.algebra import one_hot

# Steps no concrete action declares: after an unclean election, logs may diverge anyhow.
SYMBOLIC_ONLY = ("diverge",)


def proposal_ok(enc, s, p) -> z3.BoolRef:
    """Which ISR a leader can propose: a new member caught up to the HWM before the leader
    proposed it, so it is complete unless it has stopped since; without KIP-903's epoch check
    the request may also be stale and name the member's previous incarnation."""
    rules = enc.rules
    if not rules.expand_requires_catch_up:
        return z3.BoolVal(True)
    checked = rules.broker_epoch_check and rules.controller_checks_member_epochs
    stale = enc.zero if checked else s.stale
    # under a leader that lacks committed records (elected uncleanly, or 3.9's last replica
    # standing), catching up to it makes no one complete
    leader_lacks = s.leader & s.alive & ~s.complete != 0
    return z3.Or(leader_lacks, p.members & ~s.isr & ~s.complete & s.alive & ~stale == 0)


def _hwm_gate(enc, s, pending):
    """(may the leader advance its HWM, who is sure to hold the new record)."""
    rules = enc.rules
    gate_set = s.isr | pending if rules.hwm_gate_counts_maximal_isr else s.isr
    keeps = s.isr if rules.hwm_waits_for_isr else s.leader
    if rules.hwm_requires_min_isr:
        return z3.UGE(enc.R.size(gate_set), s.min_isr), keeps
    return z3.BoolVal(True), keeps


def crash(enc, s, p):
    """A lossy crash (flag) loses the unflushed suffix: committed records too if `members` has b
    and a record was committed (before any commit every replica holds the committed log). If
    `pending` has b, the crash leaves b shorter than the leader saw it fetch (`lossy`): a lossy
    crash can, and so can any crash of a replica the leader knows from its previous incarnation;
    a crash that keeps its log leaves what it fetched."""
    b = p.broker
    keep_data = z3.If(z3.And(p.flag, s.committed), s.complete & ~(b & p.members), s.complete)
    counts = z3.And(p.flag, s.lossy_crashes != 255)      # every replica's loss counts (specs/actions/data.py)
    short = enc.R.member(b, p.pending)
    may_be_short = z3.And(enc.R.member(b, s.fetched), z3.Or(p.flag, enc.R.member(b, s.stale)))
    return enc._done(z3.And(one_hot(b), enc.R.member(b, s.alive), z3.Or(z3.Not(short), may_be_short)), s,
                     enc.unchanged(s), alive=s.alive & ~b, clean_file=s.clean_file & ~b, complete=keep_data,
                     lossy_crashes=z3.If(counts, s.lossy_crashes + 1, s.lossy_crashes),
                     lossy=z3.If(short, s.lossy | b, s.lossy & ~b))


def clean_shutdown(enc, s, p):
    """After controlled shutdown: flush, write the clean-shutdown file, stop; the controller
    fences the broker (a no-op if it is fenced already)."""
    b = p.broker
    out = C.fence(enc.R, enc.rules, s.ctrl, b, enc._pick(p))
    return enc._done(z3.And(one_hot(b), enc.R.member(b, s.alive & s.shutting_down)), s, out,
                     alive=s.alive & ~b, clean_file=s.clean_file | b)


def restart(enc, s, p):
    """A new incarnation registers; clean iff it left a clean-shutdown file."""
    b = p.broker
    out = C.register(enc.R, enc.rules, s.ctrl, b, None, None, clean=enc.R.member(b, s.clean_file),
                     prefer=enc._pick(p))
    counted = z3.If(z3.Or(z3.Not(_bool(out.unclean_shutdown)), s.unclean_shutdowns == 255),
                    s.unclean_shutdowns, s.unclean_shutdowns + 1)
    guard = z3.And(one_hot(b), z3.Not(enc.R.member(b, s.alive)))
    if not enc.rules.restart_before_fence:      # variant (Kafka 3.9 preset): only once fenced
        guard = z3.And(guard, enc.R.member(b, s.fenced))
    return enc._done(guard, s, out,
                     alive=s.alive | b, clean_file=s.clean_file & ~b, stale=s.stale | (s.fetched & b),
                     unclean_shutdowns=counted, lossy=s.lossy & ~b)


def advance_hwm(enc, s, p):
    """The HWM covers a new record; every replica not in `members` may lack it but the ISR
    members the gate counted that run, stopped cleanly (a clean stop flushes what was fetched)
    or crashed keeping what they fetched: a member that crashed since its last fetch still
    counts in the leader's view until it is fenced, and a lossy crash (`lossy`) lost what it
    fetched."""
    may_advance, keeps = _hwm_gate(enc, s, p.pending)
    guard = z3.And(s.leader != 0, enc.R.member(s.leader, s.alive), may_advance, p.pending & ~s.complete == 0)
    held = keeps & (s.alive | s.clean_file | ~s.lossy)
    return enc._done(guard, s, enc.unchanged(s), complete=s.complete & (held | p.members), committed=True)


def fetch(enc, s, p):
    """Followers copy the leader's log: complete if the leader is, else truncated like it."""
    copied = z3.If(enc.R.member(s.leader, s.complete), s.complete | p.members, s.complete & ~p.members)
    guard = z3.And(s.leader != 0, enc.R.member(s.leader, s.alive), p.members & (~s.alive | s.leader) == 0)
    return enc._done(guard, s, enc.unchanged(s), complete=copied, fetched=s.fetched | p.members,
                     stale=s.stale & ~p.members)


def diverge(enc, s, p):
    """Under a leader that lacks committed records (an unclean election, or Kafka 3.9's last
    replica standing), any replica may hold anything: the HWM such a leader advances rewrites
    what consumers are shown. Under a complete leader the rules above are exact, so this step
    is not enabled there: an unclean election of a replica that holds everything loses nothing."""
    running_incomplete = s.leader & s.alive & ~s.complete
    return enc._done(running_incomplete != 0, s, enc.unchanged(s), complete=p.members)


def stutter(enc, s, p):
    return enc._done(z3.BoolVal(True), s, enc.unchanged(s))


def _bool(x):
    return z3.BoolVal(x) if isinstance(x, bool) else x


STEPS = {"crash": crash, "clean_shutdown": clean_shutdown, "restart": restart, "advance_hwm": advance_hwm,
         "fetch": fetch, "diverge": diverge, "stutter": stutter}
