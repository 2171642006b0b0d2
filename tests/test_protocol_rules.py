"""One or more tests for every rule of /work/shared/PROTOCOL.md.

Every test drives the model only through the public transition function
`specs.ops.apply_op(cfg, state, op)` from `specs.ops.initial_state(cfg, initial)`,
the same path `kraft-verify replay` takes. Where /work/notes/kafka-controller.md
refines PROTOCOL.md, the expected values follow Kafka (the notes are cited).
Each test quotes the rule it checks in its docstring.
"""
from __future__ import annotations

import pytest

from specs import actions as A
from specs import brokers as B
from specs.config import config_from_dict, make_config
from specs.scenario import NotEnabled, apply_op, initial_state
from specs.state import NO_EPOCH, NO_LEADER, RECOVERY_NAMES

# --------------------------------------------------------------------------- helpers


def conf(replicas=(1, 2, 3), min_isr=2, **extra):
    """A scenario `config` block -> Config."""
    return config_from_dict({"replicas": list(replicas), "min_isr": min_isr, **extra})


class Sim:
    """A partition driven step by step through apply_op."""

    def __init__(self, config, initial=None, universe=()):
        self.cfg, self.s = initial_state(config, initial or {}, tuple(universe))
        self.error = None

    def do(self, *ops):
        for op in ops:
            self.s, self.error, _ = apply_op(self.cfg, self.s, op)
        return self.error

    @property
    def p(self):
        return self.s.ctrl.partition

    def log(self, b):
        return B.replica_of(self.cfg, self.s, b).log

    def replica(self, b):
        return B.replica_of(self.cfg, self.s, b)

    def set_log(self, b, log):
        r = self.replica(b)
        self.s = B.set_replica(self.cfg, self.s, b, r._replace(log=tuple(log)))

    def hwm(self, b=None):
        return self.replica(self.p.leader if b is None else b).hwm

    def expect(self, **exp):
        expect(self.s, **exp)


def run(config, initial=None, *ops, universe=()):
    """Apply `ops` from `initial`; returns (state, error of the last op)."""
    sim = Sim(config, initial, universe)
    err = sim.do(*ops)
    return sim.s, err


_ALIASES = {"lke": "last_known_elr", "le": "leader_epoch", "pe": "partition_epoch",
            "rec": "leader_recovery_state", "adding": "adding_replicas", "removing": "removing_replicas"}


def expect(s, **exp):
    """Compare partition fields: ISR/ELR/last_known_elr as sets (sorted lists, so duplicates
    show), replica lists in order, recovery state by name, plus controller fields."""
    p = s.ctrl.partition
    for key, want in exp.items():
        name = _ALIASES.get(key, key)
        if name in ("isr", "elr", "last_known_elr"):
            actual, want = sorted(getattr(p, name)), sorted(want)
        elif name in ("replicas", "adding_replicas", "removing_replicas"):
            actual, want = list(getattr(p, name)), list(want)
        elif name == "leader_recovery_state":
            actual = RECOVERY_NAMES[p.leader_recovery_state]
        elif name == "fenced":
            actual, want = sorted(s.ctrl.fenced), sorted(want)
        elif name == "shutting_down":
            actual, want = sorted(s.ctrl.shutting_down), sorted(want)
        elif name == "effective_min_isr":
            actual = s.ctrl.effective_min_isr
        else:
            actual = getattr(p, name)
        assert actual == want, f"{key}: expected {want!r}, got {actual!r}"


def fence(b):
    return {"op": "fence", "broker": b}


def unfence(b):
    return {"op": "unfence", "broker": b}


def cshut(b):
    return {"op": "controlled_shutdown", "broker": b}


def register(b, **kw):
    return {"op": "register", "broker": b, **kw}


def alter(le, pe, isr, epochs=None, **kw):
    op = {"op": "alter_partition", "leader_epoch": le, "partition_epoch": pe, "isr": list(isr)}
    if epochs is not None:
        op["broker_epochs"] = {str(k): v for k, v in epochs.items()}
    op.update(kw)
    return op


def elect(kind, leader=None):
    op = {"op": "elect", "type": kind}
    if leader is not None:
        op["leader"] = leader
    return op


def set_min_isr(v):
    return {"op": "set_min_isr", "value": v}


def set_unclean(v):
    return {"op": "set_unclean", "value": v}


PERIODIC = {"op": "periodic_unclean_election"}


def reassign(rs):
    return {"op": "reassign", "replicas": list(rs)}


def recover(strategy):
    return {"op": "unclean_recovery", "strategy": strategy}


PRODUCE = {"op": "produce"}
ADVANCE = {"op": "advance_hwm"}
DELIVER = {"op": "deliver_alter_partition"}


def fetch(b):
    return {"op": "fetch", "broker": b}


def expand(b):
    return {"op": "expand_isr", "broker": b}


def shrink(b):
    return {"op": "shrink_isr", "broker": b}


def crash(b):
    return {"op": "crash", "broker": b}


def crash_lossy(b, keep):
    return {"op": "crash_lossy", "broker": b, "keep": keep}


def restart(b):
    return {"op": "restart", "broker": b}


def clean_shutdown(b):
    return {"op": "clean_shutdown", "broker": b}


# =========================================================================== epochs


def test_isr_shrink_bumps_partition_epoch_only():
    """PROTOCOL: "every change bumps partition_epoch by one ... ISR shrinks do not bump the
    leader epoch." """
    s, err = run(conf(), None, alter(0, 0, [1, 2]))
    assert err is None
    expect(s, isr=[1, 2], leader=1, le=0, pe=1)


def test_fence_of_follower_bumps_partition_epoch_only():
    """PROTOCOL: "ISR shrinks do not bump the leader epoch" (a fence of a follower is one)."""
    s, _ = run(conf(), None, fence(3))
    expect(s, isr=[1, 2], leader=1, le=0, pe=1)


def test_each_change_bumps_partition_epoch_by_exactly_one():
    """PROTOCOL: "every change bumps `partition_epoch` by one." """
    sim = Sim(conf(min_isr=1))
    for n, b in enumerate((3, 2), start=1):
        sim.do(fence(b))
        expect(sim.s, pe=n, le=0)


def test_leader_change_bumps_leader_epoch():
    """PROTOCOL: "`leader_epoch` is bumped only when the leader field is written" (new leader)."""
    s, _ = run(conf(), None, fence(1))
    expect(s, leader=2, isr=[2, 3], le=1, pe=1)


def test_leader_becoming_none_bumps_leader_epoch():
    """PROTOCOL: "`leader_epoch` is bumped only when the leader field is written (including a
    leader becoming -1)." """
    s, _ = run(conf(replicas=(1, 2), min_isr=1), None, fence(2), fence(1))
    expect(s, leader=NO_LEADER, le=1, pe=2)


def test_noop_alter_partition_bumps_nothing():
    """PROTOCOL: "A change that changes nothing writes nothing and bumps nothing." """
    sim = Sim(conf(), {"leader_epoch": 3, "partition_epoch": 7})
    before = sim.s
    assert sim.do(alter(3, 7, [1, 2, 3])) is None
    expect(sim.s, le=3, pe=7, isr=[1, 2, 3])
    assert sim.s.ctrl == before.ctrl


def test_noop_events_bump_nothing():
    """PROTOCOL: "A change that changes nothing writes nothing and bumps nothing": fencing an
    already fenced broker, unfencing when the partition has a leader."""
    sim = Sim(conf(), {"fenced": [3], "isr": [1, 2]})
    sim.do(fence(3))
    expect(sim.s, pe=0, le=0, isr=[1, 2])
    sim.do(unfence(3))
    expect(sim.s, pe=0, le=0, isr=[1, 2], fenced=[])


def test_isr_expansion_does_not_bump_leader_epoch():
    """PROTOCOL: "`leader_epoch` is bumped only when the leader field is written"; an ISR
    expansion writes only the ISR."""
    s, err = run(conf(), {"isr": [1, 2]}, alter(0, 0, [1, 2, 3]))
    assert err is None
    expect(s, isr=[1, 2, 3], le=0, pe=1)


def test_leader_epoch_bump_on_isr_shrink_flag():
    """SCENARIO_FORMAT: `leader_epoch_bump_on_isr_shrink` (metadata versions before 3.6): an
    ISR shrink bumps the leader epoch; an expansion still does not (notes §1 step 7)."""
    cfg = conf(leader_epoch_bump_on_isr_shrink=True)
    sim = Sim(cfg)
    assert sim.do(alter(0, 0, [1, 2])) is None
    expect(sim.s, isr=[1, 2], leader=1, le=1, pe=1)
    assert sim.do(alter(1, 1, [1, 2, 3])) is None
    expect(sim.s, isr=[1, 2, 3], le=1, pe=2)
    sim.do(fence(3))
    expect(sim.s, isr=[1, 2], leader=1, le=2, pe=3)


# =========================================================================== effective min ISR


def test_effective_min_isr_is_capped_by_replication_factor():
    """PROTOCOL: "Effective min ISR = min(min.insync.replicas, number of replicas)." With
    min.insync.replicas 5 and RF 3 a full ISR is at min ISR (no ELR), two members are below."""
    sim = Sim(conf(min_isr=5))
    expect(sim.s, effective_min_isr=3)
    sim.do(fence(3))
    expect(sim.s, isr=[1, 2], elr=[3])
    sim.do(unfence(3))
    assert sim.do(alter(0, 1, [1, 2, 3])) is None
    expect(sim.s, isr=[1, 2, 3], elr=[])


def test_effective_min_isr_below_rf_uses_config():
    """PROTOCOL: "Effective min ISR = min(min.insync.replicas, number of replicas)": with
    min 2 and RF 3, an ISR of 2 is at min ISR and nobody enters ELR."""
    sim = Sim(conf(min_isr=2))
    expect(sim.s, effective_min_isr=2)
    sim.do(fence(3))
    expect(sim.s, isr=[1, 2], elr=[])


# =========================================================================== ELR update


def test_elr_formula_adds_members_of_current_isr():
    """PROTOCOL step 1: "ELR = (old ELR ∪ CURRENT ISR) − target ISR − ...": members that leave
    while the ISR is below min ISR join ELR (KIP-966 RCMT _ShrinkAndExpandIsr)."""
    s, err = run(conf(replicas=(0, 1, 2), min_isr=2), None, alter(0, 0, [0]))
    assert err is None
    expect(s, isr=[0], elr=[1, 2], lke=[], leader=0, le=0, pe=1)


def test_alter_partition_shrink_below_min_isr_kafka_example():
    """PROTOCOL step 1 (PCBT testEligibleLeaderReplicas_IsrShrinkBelowMinISR): ISR [1,2,3,4]
    -> [1,2] with min ISR 3 gives ELR [3,4], epochs LE100/PE201."""
    s, err = run(conf(replicas=(1, 2, 3, 4), min_isr=3), {"leader_epoch": 100, "partition_epoch": 200},
                 alter(100, 200, [1, 2]))
    assert err is None
    expect(s, isr=[1, 2], elr=[3, 4], lke=[], leader=1, le=100, pe=201)


def test_member_leaving_while_isr_at_min_is_not_in_elr():
    """PROTOCOL step 1: "if |target ISR| >= min ISR, ELR ... become[s] empty", so a member that
    left while the ISR stayed at min ISR never enters ELR later; the next one does."""
    sim = Sim(conf(min_isr=2))
    sim.do(fence(3))
    expect(sim.s, isr=[1, 2], elr=[])
    sim.do(fence(2))
    expect(sim.s, isr=[1], elr=[2], leader=1)


def test_fencing_does_not_remove_from_elr():
    """PROTOCOL step 1: "Fencing does not remove anyone from ELR." Fencing an ELR member that
    is not in the ISR changes nothing."""
    sim = Sim(conf(min_isr=3), {"isr": [1], "elr": [2, 3]})
    sim.do(fence(2))
    expect(sim.s, isr=[1], elr=[2, 3], pe=0, le=0, fenced=[2])


def test_fenced_elr_members_stay_when_isr_shrinks_again():
    """PROTOCOL step 1: ELR = (old ELR ∪ current ISR) − target ISR; fenced ELR members stay."""
    sim = Sim(conf(replicas=(1, 2, 3, 4), min_isr=3))
    sim.do(fence(4), fence(3))
    expect(sim.s, isr=[1, 2], elr=[3])   # 4 left while the ISR was at min ISR
    sim.do(fence(2))
    expect(sim.s, isr=[1], elr=[2, 3], fenced=[2, 3, 4])


def test_elr_cleared_when_isr_reaches_min_isr():
    """PROTOCOL step 1: "if |target ISR| >= min ISR, ELR and last_known_elr become empty"
    (RCMT _ShrinkAndExpandIsr step 2)."""
    sim = Sim(conf(replicas=(0, 1, 2), min_isr=2))
    sim.do(alter(0, 0, [0]))
    expect(sim.s, elr=[1, 2])
    assert sim.do(alter(0, 1, [0, 1])) is None
    expect(sim.s, isr=[0, 1], elr=[], lke=[], le=0, pe=2)


def test_default_mode_reaching_min_isr_keeps_last_known_elr():
    """Kafka refinement of PROTOCOL step 1 (notes §2 DIFFERS): in the default mode reaching min
    ISR clears ELR but not last_known_elr (only a leader >= 0 being written clears it)."""
    s, err = run(conf(replicas=(1, 2, 3, 4), min_isr=3),
                 {"isr": [1, 2], "elr": [3], "last_known_elr": [4], "fenced": [4]},
                 alter(0, 0, [1, 2, 3]))
    assert err is None
    expect(s, isr=[1, 2, 3], elr=[], lke=[4], pe=1, le=0)


def test_kip_mode_reaching_min_isr_clears_last_known_elr():
    """PROTOCOL step 1 / [KIP] (PCBT _IsrExpandAboveMinISR, use_last_known_leader=false): at
    min ISR both ELR and last_known_elr become empty."""
    s, err = run(conf(replicas=(1, 2, 3, 4), min_isr=3, use_last_known_leader=False),
                 {"isr": [1, 2], "elr": [3], "last_known_elr": [4], "leader_epoch": 100,
                  "partition_epoch": 200, "fenced": [4]},
                 alter(100, 200, [1, 2, 3]))
    assert err is None
    expect(s, isr=[1, 2, 3], elr=[], lke=[], le=100, pe=201)


def test_unclean_shutdown_removed_from_elr():
    """PROTOCOL step 1: ELR = ... "− replicas that had an unclean shutdown in this event"
    (PCBT _RemoveUncleanShutdownReplicasFromElr, default mode)."""
    s, _ = run(conf(replicas=(1, 2, 3, 4), min_isr=3), {"isr": [1], "elr": [2, 3]}, register(3))
    expect(s, isr=[1], elr=[2], lke=[], leader=1, le=0, pe=1, fenced=[3])


def test_unclean_shutdown_member_leaving_isr_not_added_to_elr():
    """PROTOCOL Register: "Unclean (ELR enabled): b is removed from the ISR ... and is not put in
    ELR"; a clean registration is processed like fencing, so b joins ELR."""
    unclean, _ = run(conf(min_isr=3), {"isr": [1, 2], "elr": [3]}, register(2))
    expect(unclean, isr=[1], elr=[3], leader=1, pe=1)
    clean, _ = run(conf(min_isr=3), {"isr": [1, 2], "elr": [3]}, register(2, previous_broker_epoch=102))
    expect(clean, isr=[1], elr=[2, 3], leader=1, pe=1)


def test_elr_disabled_never_populates_elr():
    """PROTOCOL step 1: "ELR update (only with ELR enabled)"."""
    s, _ = run(conf(min_isr=3, elr=False), None, alter(0, 0, [1]))
    expect(s, isr=[1], elr=[], lke=[], pe=1)


# =========================================================================== leader election


def test_election_in_replica_order_from_elr():
    """PROTOCOL step 2: "Candidates are tried in replica order" and "A leader taken from ELR is a
    clean election: ISR = [leader], it leaves ELR, the rest of ELR stays" (RCMT _CleanElection)."""
    sim = Sim(conf(replicas=(0, 1, 2, 3), min_isr=3))
    sim.do(fence(1), fence(2), fence(3))
    expect(sim.s, isr=[0], elr=[2, 3], leader=0, pe=3)
    sim.do(unfence(2), unfence(3))
    expect(sim.s, isr=[0], elr=[2, 3], leader=0, pe=3)
    sim.do(fence(0))
    expect(sim.s, leader=2, isr=[2], elr=[0, 3], lke=[], le=1, pe=4, rec="RECOVERED")
    assert sim.s.hist.unclean_elections == 0


def test_election_in_replica_order_from_isr():
    """PROTOCOL step 2: "Candidates are tried in replica order" (not ISR order)."""
    s, _ = run(conf(replicas=(1, 2, 3)), {"isr": [1, 3, 2]}, fence(1))
    expect(s, leader=2, le=1)


def test_current_leader_kept_while_valid():
    """PROTOCOL step 2: "the current leader is kept while valid" (even if not replicas[0])."""
    s, _ = run(conf(min_isr=1), {"leader": 3}, fence(2))
    expect(s, leader=3, isr=[1, 3], le=0, pe=1)


def test_elr_election_keeps_rest_of_elr_kafka_example():
    """PROTOCOL step 2: ELR election is clean, ISR = [leader], rest of ELR stays
    (PCBT _ElrCanBeElected: LE101/PE201, RECOVERED)."""
    s, _ = run(conf(replicas=(1, 2, 3, 4), min_isr=3),
               {"isr": [1], "elr": [3], "leader_epoch": 100, "partition_epoch": 200}, fence(1))
    expect(s, leader=3, isr=[3], elr=[1], lke=[], rec="RECOVERED", le=101, pe=201)


def test_elr_not_a_candidate_while_target_isr_nonempty():
    """PROTOCOL step 2: a valid leader is in the target ISR, "or (only when the target ISR is
    empty) in the ELR". An unfenced ELR member is not elected while a fenced member remains in
    the ISR; the partition becomes leaderless."""
    s, _ = run(conf(min_isr=3), {"isr": [1, 2], "elr": [3], "fenced": [2]}, fence(1))
    expect(s, leader=NO_LEADER, isr=[2], elr=[1, 3], lke=[1], le=1, pe=1)


def test_shutting_down_replica_not_acceptable_leader():
    """PROTOCOL step 2: acceptable = "registered, unfenced, not in controlled shutdown"."""
    s, _ = run(conf(min_isr=1), {"in_controlled_shutdown": [2]}, fence(1))
    expect(s, leader=3, isr=[2, 3], le=1)


def test_last_known_leader_elected_uncleanly():
    """PROTOCOL step 2: "If none and ISR and ELR are both empty, the last known leader
    (last_known_elr = [b]) is elected if acceptable, as an UNCLEAN election" -> ISR [b],
    RECOVERING, last_known_elr [] (PCBT _ElectLastKnownLeader)."""
    s, err = run(conf(replicas=(1, 2, 3, 4), min_isr=3),
                 {"isr": [], "elr": [], "last_known_elr": [1], "leader": -1, "leader_epoch": 100,
                  "partition_epoch": 200, "fenced": [1, 2, 3, 4]},
                 unfence(1))
    assert err is None
    expect(s, leader=1, isr=[1], elr=[], lke=[], rec="RECOVERING", le=101, pe=201)
    assert s.hist.unclean_elections == 1


def test_last_known_leader_not_elected_while_fenced():
    """PROTOCOL step 2: last known leader elected only "if acceptable" (PCBT
    _NotEligibleLastKnownLeader; the 4.0.x bug elected it)."""
    init = {"isr": [], "elr": [], "last_known_elr": [1], "leader": -1, "fenced": [1, 2, 3]}
    sim = Sim(conf(min_isr=3), init)
    before = sim.s.ctrl
    assert sim.do(elect("unclean")) == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    assert sim.s.ctrl == before


def test_last_known_leader_needs_empty_elr():
    """PROTOCOL step 2: the last known leader only "if none and ISR and ELR are both empty"
    (PCBT _ElectLastKnownLeaderShouldFail: a fenced ELR member blocks it)."""
    init = {"isr": [], "elr": [3], "last_known_elr": [1], "leader": -1, "fenced": [3]}
    sim = Sim(conf(min_isr=3), init)
    before = sim.s.ctrl
    assert sim.do(elect("preferred")) == "PREFERRED_LEADER_NOT_AVAILABLE"
    assert sim.s.ctrl == before


def test_unclean_topic_fallback_on_fence_with_elr():
    """PROTOCOL step 2: "If still none and the topic has unclean.leader.election.enable, the
    first acceptable replica in replica order is elected, UNCLEAN", which "sets ISR = [leader],
    ELR = [], last_known_elr = [], and leader_recovery_state = RECOVERING"."""
    s, _ = run(conf(min_isr=2, unclean_leader_election=True), {"isr": [1]}, fence(1))
    expect(s, leader=2, isr=[2], elr=[], lke=[], rec="RECOVERING", le=1, pe=1)
    assert s.hist.unclean_elections == 1


def test_no_unclean_fallback_without_topic_config():
    """PROTOCOL step 2: "Otherwise leader = -1" (and the last leader joins ELR / lke)."""
    s, _ = run(conf(min_isr=2), {"isr": [1]}, fence(1))
    expect(s, leader=NO_LEADER, isr=[], elr=[1], lke=[1], rec="RECOVERED", le=1, pe=1)


def test_fence_all_leaves_partition_leaderless():
    """PROTOCOL Fence: "b joins ELR if the ISR falls below min ISR, even as the last member";
    step 2 "Otherwise leader = -1"; step 3 last_known_elr = [old leader]."""
    sim = Sim(conf(min_isr=2))
    sim.do(fence(3), fence(2))
    expect(sim.s, isr=[1], elr=[2], leader=1, le=0, pe=2)
    sim.do(fence(1))
    expect(sim.s, isr=[], elr=[1, 2], lke=[1], leader=NO_LEADER, le=1, pe=3)


def test_shrink_to_empty_isr_kafka_example():
    """PROTOCOL Fence/Register clean (RCMT _ShrinkToEmptyIsr): min ISR 3; every member leaving
    joins ELR; the last one leaves the partition leaderless with last_known_elr [0]."""
    sim = Sim(conf(replicas=(0, 1, 2), min_isr=3))
    sim.do(fence(1))
    expect(sim.s, isr=[0, 2], elr=[1])
    sim.do(fence(2))
    expect(sim.s, isr=[0], elr=[1, 2])
    sim.do(register(0, previous_broker_epoch=100))
    expect(sim.s, isr=[], elr=[0, 1, 2], lke=[0], leader=NO_LEADER, le=1, pe=3)


# =========================================================================== last_known_elr


def test_lke_set_when_leaderless_with_nonempty_isr():
    """PROTOCOL step 3: "last_known_elr: set to [old leader] when the partition becomes
    leaderless and it was empty" (also when the ISR stays non-empty)."""
    s, _ = run(conf(min_isr=2), {"isr": [1, 2], "fenced": [2]}, fence(1))
    expect(s, leader=NO_LEADER, isr=[2], elr=[1], lke=[1], le=1, pe=1)


def test_lke_not_overwritten_when_nonempty():
    """PROTOCOL step 3: set to [old leader] only when "it was empty"."""
    s, _ = run(conf(min_isr=2), {"leader": 2, "isr": [2], "last_known_elr": [3], "fenced": [1, 3]},
               fence(2))
    expect(s, leader=NO_LEADER, isr=[], elr=[2], lke=[3])


def test_lke_cleared_when_leader_elected():
    """PROTOCOL step 3: last_known_elr "cleared when a leader >= 0 is set" (QCT
    testUncleanShutdownBrokerElrEnabled: unfence b elects it from ELR)."""
    sim = Sim(conf(min_isr=2))
    sim.do(fence(1), fence(2), fence(3))
    expect(sim.s, isr=[], leader=NO_LEADER, elr=[2, 3], lke=[3])
    sim.do(register(3))
    expect(sim.s, elr=[2], lke=[3], leader=NO_LEADER)
    before = sim.s.ctrl.partition
    sim.do(register(2, previous_broker_epoch=102))
    assert sim.p == before
    sim.do(unfence(2))
    expect(sim.s, leader=2, isr=[2], elr=[], lke=[], rec="RECOVERED")


def test_unclean_registration_of_last_isr_leader_sets_lke():
    """Kafka refinement of PROTOCOL Register (notes §2/§5; RCMT _UncleanShutdown): an unclean
    registration of the leader that was the last ISR member makes the partition leaderless and
    sets last_known_elr = [it], although it is not put in ELR."""
    sim = Sim(conf(replicas=(0, 1, 2, 3), min_isr=3))
    sim.do(fence(1), fence(2), fence(3))
    expect(sim.s, isr=[0], elr=[2, 3], pe=3)
    sim.do(register(3))
    expect(sim.s, isr=[0], elr=[2], lke=[], pe=4, le=0)
    sim.do(register(0))
    expect(sim.s, isr=[], elr=[2], lke=[0], leader=NO_LEADER, le=1, pe=5, fenced=[0, 1, 2, 3])
    assert sim.s.ctrl.broker_epoch(0) == 1100


# =========================================================================== ELR disabled


def test_last_replica_standing_without_elr():
    """PROTOCOL step 4: "With ELR disabled the ISR is never written empty: the last ISR member
    stays in the ISR when it is fenced, and the leader becomes -1" (LE+1, PE+1)."""
    sim = Sim(conf(min_isr=2, elr=False))
    sim.do(fence(2), fence(3))
    expect(sim.s, isr=[1], leader=1, le=0, pe=2)
    sim.do(fence(1))
    expect(sim.s, isr=[1], leader=NO_LEADER, elr=[], lke=[], le=1, pe=3)


def test_last_replica_standing_controlled_shutdown_without_elr():
    """PROTOCOL step 4 with controlled shutdown (notes §5: "With ELR off, controlled shutdown of
    the last member leaves ISR [b] and sets leader -1")."""
    s, _ = run(conf(min_isr=2, elr=False), {"isr": [1]}, cshut(1))
    expect(s, isr=[1], leader=NO_LEADER, le=1, pe=1, elr=[], lke=[])


def test_last_replica_standing_reelected_cleanly_on_unfence():
    """PROTOCOL step 4 + Unfence: the standing member is in the ISR, so unfencing it re-elects
    it cleanly (RECOVERED, ISR unchanged)."""
    sim = Sim(conf(min_isr=2, elr=False))
    sim.do(fence(2), fence(3), fence(1))
    sim.do(unfence(2))
    expect(sim.s, leader=NO_LEADER, isr=[1], pe=3)
    sim.do(unfence(1))
    expect(sim.s, leader=1, isr=[1], rec="RECOVERED", le=2, pe=4)


def test_unclean_registration_without_elr_is_processed_like_fence():
    """PROTOCOL Register: "Clean, or ELR disabled: processed like fencing" (QCT
    testUncleanShutdownElrDisabled): each unclean registration of the leader moves leadership,
    bumps LE and removes it from the ISR; the last one leaves ISR [b], leader -1."""
    sim = Sim(conf(min_isr=2, elr=False))
    sim.do(register(1))
    expect(sim.s, leader=2, isr=[2, 3], le=1)
    sim.do(register(2))
    expect(sim.s, leader=3, isr=[3], le=2)
    sim.do(register(3))
    expect(sim.s, leader=NO_LEADER, isr=[3], le=3, elr=[], lke=[])


# =========================================================================== events


def test_fence_last_member_joins_elr():
    """PROTOCOL Fence: "b joins ELR if the ISR falls below min ISR, even as the last member"."""
    s, _ = run(conf(min_isr=2), {"isr": [1], "elr": [2], "fenced": [2]}, fence(1))
    expect(s, isr=[], elr=[1, 2], leader=NO_LEADER, lke=[1], fenced=[1, 2])


def test_fence_of_broker_outside_isr_changes_no_partition():
    """PROTOCOL Fence: "for partitions with b in the ISR, target ISR = ISR − {b}"; otherwise
    nothing is written."""
    s, _ = run(conf(min_isr=2), {"isr": [1, 2]}, fence(3))
    expect(s, isr=[1, 2], elr=[], pe=0, le=0, fenced=[3])


def test_unfence_never_adds_to_isr():
    """PROTOCOL Unfence: "The ISR is not changed; unfencing never adds b back to an ISR"."""
    sim = Sim(conf(min_isr=3))
    sim.do(fence(3))
    expect(sim.s, isr=[1, 2], elr=[3], pe=1)
    sim.do(unfence(3))
    expect(sim.s, isr=[1, 2], elr=[3], pe=1, le=0, fenced=[])


def test_unfence_elects_only_on_leaderless_partition():
    """PROTOCOL Unfence: "for every leaderless partition, re-run the election with b acceptable";
    a partition with a leader is left alone even if b is replicas[0] in the ISR."""
    s, _ = run(conf(min_isr=1), {"leader": 2, "fenced": [1]}, unfence(1))
    expect(s, leader=2, le=0, pe=0, fenced=[])


def test_unfence_elects_isr_member_on_leaderless_partition():
    """PROTOCOL Unfence: the election re-runs with b acceptable; b in the ISR is a clean leader."""
    s, _ = run(conf(min_isr=1), {"leader": -1, "isr": [2, 3], "fenced": [1, 2, 3]}, unfence(3))
    expect(s, leader=3, isr=[2, 3], rec="RECOVERED", le=1, pe=1)


def test_controlled_shutdown_of_leader_moves_leadership():
    """PROTOCOL Controlled shutdown: "b stops being an acceptable leader and cannot be in an ISR;
    partitions with b in the ISR are processed as for fencing" (RCMT
    testProcessBrokerHeartbeatInControlledShutdown: isr [1,2], leader 1, LE1, PE1)."""
    s, _ = run(conf(replicas=(0, 1, 2), min_isr=2), None, cshut(0))
    expect(s, isr=[1, 2], leader=1, le=1, pe=1, shutting_down=[0], fenced=[])


def test_controlled_shutdown_last_member_with_elr():
    """PROTOCOL Controlled shutdown as fencing (notes §5): the last member leaves the ISR,
    joins ELR below min ISR, leader -1, last_known_elr [b]."""
    s, _ = run(conf(min_isr=2), {"isr": [1]}, cshut(1))
    expect(s, isr=[], elr=[1], leader=NO_LEADER, lke=[1], le=1, pe=1)


def test_controlled_shutdown_then_shutdown_now_fences():
    """PROTOCOL Controlled shutdown: "A later shutdown-now fences it." Fencing writes nothing
    more for the partition (b already left the ISR)."""
    sim = Sim(conf(min_isr=1))
    sim.do(cshut(2))
    expect(sim.s, isr=[1, 3], pe=1, shutting_down=[2], fenced=[])
    sim.do(fence(2))
    expect(sim.s, isr=[1, 3], pe=1, fenced=[2])


def test_register_gets_new_larger_epoch_and_starts_fenced():
    """PROTOCOL Register: "The new registration gets a new, larger broker epoch and starts
    fenced" (format: default new epoch = old + 1000; not shutting down)."""
    sim = Sim(conf(min_isr=1), {"in_controlled_shutdown": [3], "isr": [1, 2]})
    sim.do(register(3))
    expect(sim.s, fenced=[3], shutting_down=[])
    assert sim.s.ctrl.broker_epoch(3) == 1103
    sim.do(register(2, new_broker_epoch=5000))
    assert sim.s.ctrl.broker_epoch(2) == 5000
    expect(sim.s, fenced=[2, 3], isr=[1])


def test_register_clean_iff_previous_epoch_matches():
    """PROTOCOL Register: "Clean iff the previous broker epoch read from its clean-shutdown file
    equals the epoch the controller has registered". Clean = like fencing (3 joins ELR);
    mismatched or absent (-1) = unclean (3 is not put in ELR)."""
    init = {"isr": [1, 2, 3]}
    clean, _ = run(conf(min_isr=3), init, register(3, previous_broker_epoch=103))
    expect(clean, isr=[1, 2], elr=[3])
    assert clean.hist.unclean_shutdowns == 0
    stale, _ = run(conf(min_isr=3), init, register(3, previous_broker_epoch=102))
    expect(stale, isr=[1, 2], elr=[])
    assert stale.hist.unclean_shutdowns == 1
    absent, _ = run(conf(min_isr=3), init, register(3))
    expect(absent, isr=[1, 2], elr=[])
    assert absent.hist.unclean_shutdowns == 1
    flag, _ = run(conf(min_isr=3), init, register(3, clean_shutdown=True))
    expect(flag, isr=[1, 2], elr=[3])


def test_first_registration_is_unclean():
    """PROTOCOL Register: "(-1 when the file is absent; a first registration is unclean)"."""
    sim = Sim(conf(min_isr=1))
    sim.do(register(4, previous_broker_epoch=NO_EPOCH, new_broker_epoch=900))
    assert sim.s.hist.unclean_shutdowns == 1
    assert 4 in sim.s.ctrl.registered and sim.s.ctrl.broker_epoch(4) == 900
    expect(sim.s, fenced=[4], pe=0)


def test_register_unclean_removes_from_isr_and_elr_of_partition():
    """PROTOCOL Register unclean: "b is removed from the ISR and from the ELR of every partition,
    and is not put in ELR even if it was the last ISR member. last_known_elr is not changed"."""
    sim = Sim(conf(min_isr=3), {"isr": [3], "elr": [1, 2], "leader": 3, "fenced": [1, 2]})
    sim.do(register(3))
    expect(sim.s, isr=[], elr=[1, 2], leader=NO_LEADER, lke=[3], le=1, pe=1)
    sim.do(register(2))
    expect(sim.s, isr=[], elr=[1], lke=[3], leader=NO_LEADER, le=1, pe=2)


# =========================================================================== AlterPartition checks

# Base: replicas [1,2,3], leader 1, LE5, PE10; broker 4 registered but not a replica.
AP_INIT = {"leader_epoch": 5, "partition_epoch": 10, "brokers": [4]}


def ap(*ops, initial=None, config=None):
    sim = Sim(config or conf(min_isr=1), {**AP_INIT, **(initial or {})})
    before = sim.s.ctrl
    err = sim.do(*ops)
    return sim, before, err


def test_alter_partition_accepted():
    """PROTOCOL AlterPartition: "Otherwise target ISR = new ISR and the pipeline runs"."""
    sim, _, err = ap(alter(5, 10, [1, 2], {1: 101, 2: 102}))
    assert err is None
    expect(sim.s, isr=[1, 2], le=5, pe=11)


def test_ap_check1_stale_broker_epoch():
    """PROTOCOL AlterPartition check 1: "sender's broker epoch ≠ registered: STALE_BROKER_EPOCH"."""
    sim, before, err = ap(alter(5, 10, [1, 2], request_broker_epoch=100))
    assert err == "STALE_BROKER_EPOCH"
    assert sim.s.ctrl == before


def test_ap_check1_unregistered_sender():
    """PROTOCOL AlterPartition check 1 (notes §4: an unregistered sender is stale)."""
    _, _, err = ap(alter(5, 10, [1, 2], broker=9, request_broker_epoch=109))
    assert err == "STALE_BROKER_EPOCH"


def test_ap_check1_precedes_check2():
    """PROTOCOL AlterPartition: "first match wins": STALE_BROKER_EPOCH before NOT_CONTROLLER."""
    _, _, err = ap(alter(99, 99, [1, 2], request_broker_epoch=100))
    assert err == "STALE_BROKER_EPOCH"


@pytest.mark.parametrize("le,pe", [(6, 10), (5, 11), (6, 11)])
def test_ap_check2_not_controller(le, pe):
    """PROTOCOL AlterPartition check 2: "leader_epoch or partition_epoch newer than the
    controller's: NOT_CONTROLLER"."""
    sim, before, err = ap(alter(le, pe, [1, 2]))
    assert err == "NOT_CONTROLLER"
    assert sim.s.ctrl == before


def test_ap_check2_precedes_check3():
    """PROTOCOL AlterPartition first match wins: older leader_epoch but newer partition_epoch is
    NOT_CONTROLLER, not FENCED_LEADER_EPOCH."""
    _, _, err = ap(alter(4, 11, [1, 2]))
    assert err == "NOT_CONTROLLER"


def test_ap_check2_precedes_check4():
    """PROTOCOL AlterPartition first match wins: a non-leader sender with a newer epoch gets
    NOT_CONTROLLER."""
    _, _, err = ap(alter(6, 10, [1, 2], broker=2))
    assert err == "NOT_CONTROLLER"


def test_ap_check3_fenced_leader_epoch():
    """PROTOCOL AlterPartition check 3: "leader_epoch older: FENCED_LEADER_EPOCH"."""
    sim, before, err = ap(alter(4, 10, [1, 2]))
    assert err == "FENCED_LEADER_EPOCH"
    assert sim.s.ctrl == before


def test_ap_check3_precedes_check4_and_5():
    """PROTOCOL AlterPartition first match wins: an old leader_epoch from a non-leader with an
    old partition_epoch is FENCED_LEADER_EPOCH."""
    _, _, err = ap(alter(4, 9, [2, 3], broker=2))
    assert err == "FENCED_LEADER_EPOCH"


def test_ap_check4_sender_not_leader():
    """PROTOCOL AlterPartition check 4: "sender is not the leader: INVALID_REQUEST"."""
    sim, before, err = ap(alter(5, 10, [1, 2], broker=2))
    assert err == "INVALID_REQUEST"
    assert sim.s.ctrl == before


def test_ap_check4_precedes_check5():
    """PROTOCOL AlterPartition first match wins: non-leader with an old partition_epoch is
    INVALID_REQUEST, not INVALID_UPDATE_VERSION."""
    _, _, err = ap(alter(5, 9, [1, 2], broker=2))
    assert err == "INVALID_REQUEST"


def test_ap_check4_on_leaderless_partition():
    """PROTOCOL AlterPartition check 4 (notes §4: "This includes a leaderless partition")."""
    _, _, err = ap(alter(5, 10, [1], broker=1), initial={"leader": -1, "isr": [], "elr": [1], "fenced": [2, 3]})
    assert err == "INVALID_REQUEST"


def test_ap_check5_invalid_update_version():
    """PROTOCOL AlterPartition check 5: "partition_epoch older: INVALID_UPDATE_VERSION"."""
    sim, before, err = ap(alter(5, 9, [1, 2]))
    assert err == "INVALID_UPDATE_VERSION"
    assert sim.s.ctrl == before


def test_ap_check5_precedes_check6():
    """PROTOCOL AlterPartition first match wins: an old partition_epoch with a malformed ISR is
    INVALID_UPDATE_VERSION."""
    _, _, err = ap(alter(5, 9, [1, 4]))
    assert err == "INVALID_UPDATE_VERSION"


@pytest.mark.parametrize("isr", [[1, 2, 4], [1, 2, 2], [2, 3], []],
                         ids=["non-replica", "duplicate", "lacks-leader", "empty"])
def test_ap_check6_malformed_isr(isr):
    """PROTOCOL AlterPartition check 6: "ISR has a non-replica, a duplicate, or lacks the leader
    ...: INVALID_REQUEST"."""
    sim, before, err = ap(alter(5, 10, isr))
    assert err == "INVALID_REQUEST"
    assert sim.s.ctrl == before


def test_ap_check6_recovering_with_more_than_one_member():
    """PROTOCOL AlterPartition check 6: "asks RECOVERING with more than one member":
    INVALID_REQUEST."""
    _, _, err = ap(alter(5, 10, [1, 2], leader_recovery_state="RECOVERING"),
                   initial={"leader_recovery_state": "RECOVERING", "isr": [1]})
    assert err == "INVALID_REQUEST"


def test_ap_check6_recovering_from_recovered():
    """PROTOCOL AlterPartition check 6: asks RECOVERING "from RECOVERED": INVALID_REQUEST."""
    _, _, err = ap(alter(5, 10, [1], leader_recovery_state="RECOVERING"), initial={"isr": [1]})
    assert err == "INVALID_REQUEST"


def test_ap_recovering_leader_reports_recovered():
    """PROTOCOL AlterPartition: a valid request from a RECOVERING partition moving to RECOVERED is
    applied (PE+1, LE unchanged)."""
    sim, _, err = ap(alter(5, 10, [1]), initial={"leader_recovery_state": "RECOVERING", "isr": [1]})
    assert err is None
    expect(sim.s, rec="RECOVERED", isr=[1], le=5, pe=11)


def test_ap_check6_precedes_check7():
    """PROTOCOL AlterPartition first match wins: a malformed ISR listing a fenced broker is
    INVALID_REQUEST, not INELIGIBLE_REPLICA."""
    _, _, err = ap(alter(5, 10, [1, 2, 2]), initial={"fenced": [2], "isr": [1, 3]})
    assert err == "INVALID_REQUEST"
    _, _, err = ap(alter(5, 10, [2, 3]), initial={"fenced": [2], "isr": [1, 3]})
    assert err == "INVALID_REQUEST"


def test_ap_check7_fenced_member_then_unfenced_accepted():
    """PROTOCOL AlterPartition check 7: "any proposed member ... fenced ...: INELIGIBLE_REPLICA"
    (RCMT testAlterPartitionShouldRejectFencedBrokers)."""
    sim = Sim(conf(replicas=(1, 2, 3, 4), min_isr=1))
    sim.do(fence(3))
    expect(sim.s, isr=[1, 2, 4], le=0, pe=1)
    full = alter(0, 1, [1, 2, 3, 4], {1: 101, 2: 102, 3: 103, 4: 104})
    before = sim.s.ctrl
    assert sim.do(full) == "INELIGIBLE_REPLICA"
    assert sim.s.ctrl == before
    sim.do(unfence(3))
    assert sim.do(full) is None
    expect(sim.s, isr=[1, 2, 3, 4], pe=2, le=0)


def test_ap_check7_shutting_down_member():
    """PROTOCOL AlterPartition check 7: "in controlled shutdown: INELIGIBLE_REPLICA"."""
    sim = Sim(conf(min_isr=1))
    sim.do(cshut(3))
    expect(sim.s, isr=[1, 2], pe=1)
    assert sim.do(alter(0, 1, [1, 2, 3])) == "INELIGIBLE_REPLICA"
    expect(sim.s, isr=[1, 2], pe=1)


def test_ap_check7_stale_member_epoch_and_minus_one_skips():
    """PROTOCOL AlterPartition check 7: "whose broker epoch is not -1 and differs from its
    registered epoch: INELIGIBLE_REPLICA" (RCMT testAlterPartitionShouldRejectBrokersWithStaleEpoch)."""
    sim = Sim(conf(replicas=(1, 2, 3, 4), min_isr=2))
    sim.do(register(4), unfence(4))
    expect(sim.s, isr=[1, 2, 3], pe=1)
    assert sim.s.ctrl.broker_epoch(4) == 1104
    assert sim.do(alter(0, 1, [1, 2, 3, 4], {1: 101, 2: 102, 3: 103, 4: 104})) == "INELIGIBLE_REPLICA"
    expect(sim.s, isr=[1, 2, 3], pe=1)
    assert sim.do(alter(0, 1, [1, 2, 3, 4], {1: 101, 2: 102, 3: 103, 4: -1})) is None
    expect(sim.s, isr=[1, 2, 3, 4], pe=2)


def test_ap_check7_member_without_epoch_is_not_checked():
    """SCENARIO_FORMAT: "A proposed member without an entry in broker_epochs is sent as -1 (no
    epoch check)"; with the registered epoch it is accepted too."""
    sim = Sim(conf(min_isr=2))
    sim.do(register(3), unfence(3))
    assert sim.do(alter(0, 1, [1, 2, 3], {3: 1103})) is None
    expect(sim.s, isr=[1, 2, 3], pe=2)


def test_ap_check7_applies_to_old_members():
    """PROTOCOL AlterPartition check 7: "This applies to every member, old ones ... included":
    a shrink that keeps a stale-epoch old member is refused."""
    _, _, err = ap(alter(5, 10, [1, 2], {1: 101, 2: 42}))
    assert err == "INELIGIBLE_REPLICA"


@pytest.mark.parametrize("initial,epochs", [
    ({}, {1: 99}),                                 # the leader's own member epoch is stale
    ({"fenced": [1]}, {1: 101}),                   # the leader itself is fenced
    ({"in_controlled_shutdown": [1]}, {1: 101}),   # the leader itself is shutting down
], ids=["stale-epoch", "fenced", "shutting-down"])
def test_ap_check7_applies_to_the_leader_itself(initial, epochs):
    """PROTOCOL AlterPartition check 7: "This applies to every member, old ones and the leader
    included" (the sender's own request epoch is correct, so check 1 passes)."""
    sim, before, err = ap(alter(5, 10, [1, 2], epochs), initial=initial)
    assert err == "INELIGIBLE_REPLICA"
    assert sim.s.ctrl == before


def test_ap_check7_unregistered_replica():
    """PROTOCOL AlterPartition check 7: "any proposed member unregistered": INELIGIBLE_REPLICA
    (a reassignment target that has never registered)."""
    sim = Sim(conf(min_isr=1), None, universe=(4,))
    assert 4 not in sim.s.ctrl.registered
    sim.do(reassign([1, 2, 3, 4]))
    expect(sim.s, replicas=[1, 2, 3, 4], adding=[4], pe=1)
    assert sim.do(alter(0, 1, [1, 2, 3, 4])) == "INELIGIBLE_REPLICA"
    expect(sim.s, isr=[1, 2, 3], pe=1)


def test_pre_kip_903_skips_only_the_epoch_check():
    """SCENARIO_FORMAT/docs: `pre-kip-903` = "no per-member broker epoch check in AlterPartition";
    fenced members are still INELIGIBLE_REPLICA."""
    cfg = conf(min_isr=2, preset="pre-kip-903")
    sim = Sim(cfg)
    sim.do(register(3), unfence(3))
    assert sim.do(alter(0, 1, [1, 2, 3], {1: 101, 2: 102, 3: 103})) is None
    expect(sim.s, isr=[1, 2, 3], pe=2)
    sim2 = Sim(cfg)
    sim2.do(fence(3))
    assert sim2.do(alter(0, 1, [1, 2, 3])) == "INELIGIBLE_REPLICA"
    # check 1 (the sender's own epoch) still applies
    assert sim2.do(alter(0, 1, [1, 2], request_broker_epoch=7)) == "STALE_BROKER_EPOCH"


# =========================================================================== min.insync.replicas change


def test_min_isr_change_clears_elr_kafka_example():
    """PROTOCOL min.insync.replicas change: "ELR and last_known_elr are cleared for the topic on
    ANY change ... partition epoch +1" (RCMT testElrsRemovedOnMinIsrUpdate)."""
    sim = Sim(conf(replicas=(1, 2, 4), min_isr=2))
    sim.do(fence(4))
    expect(sim.s, isr=[1, 2])
    sim.do(fence(1))
    expect(sim.s, leader=2, isr=[2], elr=[1], le=1, pe=2)
    assert sim.do(set_min_isr(1)) is None
    expect(sim.s, elr=[], lke=[], pe=3, le=1, leader=2, effective_min_isr=1)


def test_min_isr_change_to_same_value_clears():
    """PROTOCOL min.insync.replicas change: cleared "on ANY change, even to the same value"."""
    sim = Sim(conf(min_isr=2), {"isr": [1], "elr": [2]})
    sim.do(set_min_isr(2))
    expect(sim.s, elr=[], pe=1, le=0, isr=[1])


def test_min_isr_change_clears_last_known_elr_without_election():
    """PROTOCOL min.insync.replicas change clears ELR and last_known_elr; notes §6: "No leader
    election follows" - the leaderless partition stays leaderless."""
    init = {"isr": [], "elr": [2], "last_known_elr": [1], "leader": -1, "fenced": [1, 2],
            "leader_epoch": 4, "partition_epoch": 9}
    sim = Sim(conf(min_isr=2), init)
    sim.do(set_min_isr(3))
    expect(sim.s, elr=[], lke=[], leader=NO_LEADER, le=4, pe=10)
    sim.do(unfence(2), unfence(1))
    expect(sim.s, leader=NO_LEADER, isr=[], pe=10)


def test_min_isr_change_with_nothing_to_clear_bumps_nothing():
    """PROTOCOL min.insync.replicas change: "partition epoch +1 only if something was non-empty"
    (RCMT testElrsRemovedShouldNotBumpPartitionEpochIfNoChange); the new value takes effect."""
    sim = Sim(conf(min_isr=2))
    sim.do(set_min_isr(3))
    expect(sim.s, pe=0, le=0, effective_min_isr=3)
    sim.do(fence(3))
    expect(sim.s, isr=[1, 2], elr=[3])


def test_kip966_min_isr_change_clears_only_when_new_min_fits_isr():
    """PROTOCOL min.insync.replicas change **[KIP]**: "clears ELR only when the new min ISR <=
    |ISR|" (preset kip-966)."""
    cfg = conf(min_isr=3, preset="kip-966")
    sim = Sim(cfg, {"isr": [1, 2], "elr": [3]})
    sim.do(set_min_isr(3))
    expect(sim.s, elr=[3], pe=0)
    sim.do(set_min_isr(2))
    expect(sim.s, elr=[], pe=1)


# =========================================================================== admin elections


def test_preferred_election_not_needed():
    """PROTOCOL Admin elections: ELECTION_NOT_NEEDED when replicas[0] already leads."""
    sim = Sim(conf())
    assert sim.do(elect("preferred")) == "ELECTION_NOT_NEEDED"
    expect(sim.s, leader=1, le=0, pe=0)


def test_preferred_election_moves_to_replicas0():
    """PROTOCOL Admin elections: "PREFERRED (replicas[0] if valid ...)"."""
    s, err = run(conf(), {"leader": 2}, elect("preferred"))
    assert err is None
    expect(s, leader=1, isr=[1, 2, 3], le=1, pe=1, rec="RECOVERED")


def test_preferred_leader_not_available():
    """PROTOCOL Admin elections: PREFERRED falls back to "the current leader" when replicas[0] is
    not valid -> nothing changes: PREFERRED_LEADER_NOT_AVAILABLE."""
    sim = Sim(conf(), {"leader": 2, "isr": [2, 3]})
    before = sim.s.ctrl
    assert sim.do(elect("preferred")) == "PREFERRED_LEADER_NOT_AVAILABLE"
    assert sim.s.ctrl == before


def test_preferred_election_first_valid_replica_on_leaderless():
    """PROTOCOL Admin elections: PREFERRED "... else the first valid replica"."""
    s, err = run(conf(), {"leader": -1, "isr": [2, 3], "fenced": [1]}, elect("preferred"))
    assert err is None
    expect(s, leader=2, isr=[2, 3], rec="RECOVERED", le=1, pe=1)


def test_preferred_election_acceptable_last_known_leader():
    """PROTOCOL Admin elections: PREFERRED "... else the acceptable last known leader"
    (an unclean election: ISR [b], RECOVERING)."""
    s, err = run(conf(min_isr=2), {"leader": -1, "isr": [], "elr": [], "last_known_elr": [2],
                                   "fenced": [1]}, elect("preferred"))
    assert err is None
    expect(s, leader=2, isr=[2], rec="RECOVERING", lke=[], le=1, pe=1)


def test_preferred_election_never_unclean():
    """PROTOCOL Admin elections: PREFERRED has no unclean fallback even with the topic config
    (RCMT testPreferredElectionDoesNotTriggerUncleanElection, ELR off)."""
    sim = Sim(conf(elr=False))
    sim.do(fence(2), fence(3), fence(1))
    expect(sim.s, isr=[1], leader=NO_LEADER)
    sim.do(unfence(2), set_unclean(True))
    before = sim.s.ctrl
    assert sim.do(elect("preferred")) == "PREFERRED_LEADER_NOT_AVAILABLE"
    assert sim.s.ctrl == before


def test_unclean_admin_election():
    """PROTOCOL Admin elections: "UNCLEAN (only on a leaderless partition)",
    ELIGIBLE_LEADERS_NOT_AVAILABLE when nobody is acceptable; it does not need the topic config
    (RCMT testElectUncleanLeaders_WithoutElr)."""
    sim = Sim(conf(elr=False))
    assert sim.do(elect("unclean")) == "ELECTION_NOT_NEEDED"
    sim.do(fence(2), fence(3), fence(1))
    expect(sim.s, isr=[1], leader=NO_LEADER, le=1, pe=3)
    assert sim.do(elect("unclean")) == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    expect(sim.s, leader=NO_LEADER, pe=3)
    sim.do(unfence(2))
    expect(sim.s, leader=NO_LEADER, pe=3)
    assert sim.do(elect("unclean")) is None
    expect(sim.s, leader=2, isr=[2], rec="RECOVERING", le=2, pe=4)


def test_unclean_admin_election_prefers_clean_candidate():
    """PROTOCOL step 2 / Admin UNCLEAN: the candidate order applies (clean first): an acceptable
    ELR member with an empty ISR is a clean election, RECOVERED."""
    s, err = run(conf(min_isr=2), {"leader": -1, "isr": [], "elr": [3], "fenced": [1]}, elect("unclean"))
    assert err is None
    expect(s, leader=3, isr=[3], elr=[], rec="RECOVERED")


def test_designated_election_rules():
    """PROTOCOL Designated leader election: "only on a leaderless partition, only a replica that
    is in the replica set, registered and unfenced"."""
    init = {"leader": -1, "isr": [], "elr": [], "fenced": [1, 2], "brokers": [4]}
    assert run(conf(), None, elect("designated", 2))[1] == "ELECTION_NOT_NEEDED"
    assert run(conf(), init, elect("designated", 4))[1] == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    assert run(conf(), init, elect("designated", 2))[1] == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    s, err = run(conf(), init, elect("designated", 3))
    assert err is None
    expect(s, leader=3, isr=[3], rec="RECOVERING", le=1, pe=1)


def test_periodic_unclean_election_requires_topic_config():
    """PROTOCOL: "A periodic task runs UNCLEAN elections on leaderless partitions of topics with
    unclean election enabled" (RCMT testMaybeTriggerUncleanLeaderElectionForLeaderlessPartitions)."""
    sim = Sim(conf(replicas=(1, 2, 4), elr=False))
    sim.do(fence(1), fence(2), fence(4))
    expect(sim.s, isr=[4], leader=NO_LEADER)
    sim.do(unfence(2))
    sim.do(PERIODIC)
    expect(sim.s, leader=NO_LEADER, isr=[4])
    sim.do(set_unclean(True))
    expect(sim.s, leader=NO_LEADER)
    sim.do(PERIODIC)
    expect(sim.s, leader=2, isr=[2], rec="RECOVERING")


def test_unclean_topic_elects_at_unfence():
    """PROTOCOL step 2 fallback inside events (notes §3: topics with the config run UNCLEAN
    elections inside unfence, no need to wait for the periodic task)."""
    sim = Sim(conf(replicas=(1, 2, 4), elr=False, unclean_leader_election=True))
    sim.do(fence(1), fence(2), fence(4))
    expect(sim.s, isr=[4], leader=NO_LEADER)
    sim.do(unfence(2))
    expect(sim.s, leader=2, isr=[2], rec="RECOVERING")


# =========================================================================== reassignment


def test_reassignment_adding_replica():
    """PROTOCOL Reassignment (notes §8): replicas = target + removing, adding listed, no leader
    bump; completes once the ISR covers the target."""
    sim = Sim(conf(min_isr=2, brokers=[4]))
    assert sim.do(reassign([1, 2, 3, 4])) is None
    expect(sim.s, replicas=[1, 2, 3, 4], adding=[4], removing=[], isr=[1, 2, 3], leader=1, le=0, pe=1)
    assert sim.do(alter(0, 1, [1, 2, 3, 4])) is None
    expect(sim.s, replicas=[1, 2, 3, 4], adding=[], removing=[], isr=[1, 2, 3, 4], le=0, pe=2)


def test_reassignment_not_complete_until_isr_covers_target():
    """PROTOCOL Reassignment: completion requires the ISR (without removing) to cover the target."""
    sim = Sim(conf(min_isr=1, brokers=[4]))
    sim.do(reassign([1, 2, 4]))
    expect(sim.s, replicas=[1, 2, 4, 3], adding=[4], removing=[3], le=0, pe=1)
    assert sim.do(alter(0, 1, [1, 2])) is None
    expect(sim.s, replicas=[1, 2, 4, 3], adding=[4], removing=[3], isr=[1, 2], le=0, pe=2)
    assert sim.do(alter(0, 2, [1, 2, 4])) is None
    expect(sim.s, replicas=[1, 2, 4], adding=[], removing=[], isr=[1, 2, 4], leader=1, le=1, pe=3)


def test_reassignment_removing_replica_completes_at_once_with_leader_bump():
    """PROTOCOL Reassignment (notes §1 NUANCE, §8): a pure shrink whose ISR covers the target
    completes at once, and removing replicas rewrites the leader: leader_epoch +1."""
    s, err = run(conf(min_isr=1), None, reassign([1, 2]))
    assert err is None
    expect(s, replicas=[1, 2], adding=[], removing=[], isr=[1, 2], leader=1, le=1, pe=1)


def test_reassignment_removing_the_leader_new_leader_elected():
    """PROTOCOL Reassignment / AlterPartition: NEW_LEADER_ELECTED when completion removes the
    leader (RCMT testReassignPartitions: [3,2,1] -> [0,2,1])."""
    sim = Sim(conf(replicas=(3, 2, 1), min_isr=2, brokers=[0]))
    sim.do(reassign([0, 2, 1]))
    expect(sim.s, replicas=[0, 2, 1, 3], adding=[0], removing=[3], isr=[3, 2, 1], leader=3, le=0, pe=1)
    err = sim.do(alter(0, 1, [3, 0, 2, 1]))
    assert err == "NEW_LEADER_ELECTED"
    expect(sim.s, replicas=[0, 2, 1], isr=[0, 2, 1], leader=0, adding=[], removing=[], le=1, pe=2)


def test_reassignment_kafka_keeps_removed_replica_in_elr():
    """PROTOCOL Reassignment: "(Kafka enforces neither: a removed replica can stay in ELR)"."""
    s, _ = run(conf(min_isr=3), {"isr": [1, 2], "elr": [3], "fenced": [3]}, reassign([1, 2]))
    expect(s, replicas=[1, 2], isr=[1, 2], elr=[3], le=1, pe=1)


def test_reassignment_kip_elr_keeps_only_final_replicas():
    """PROTOCOL Reassignment **[KIP]**: "ELR keeps only final replicas" (preset kip-966)."""
    s, _ = run(conf(min_isr=3, preset="kip-966"), {"isr": [1, 2], "elr": [3], "fenced": [3]},
               reassign([1, 2]))
    expect(s, replicas=[1, 2], isr=[1, 2], elr=[], le=1, pe=1)


# =========================================================================== KIP-966 unclean recovery


LEADERLESS = {"leader": -1, "isr": [], "elr": [], "leader_epoch": 3, "partition_epoch": 6}


def recovery_sim(initial, logs, preset="kafka", strategy="balanced"):
    sim = Sim(conf(min_isr=2, preset=preset, unclean_recovery_strategy=strategy), initial)
    for b, log in logs.items():
        sim.set_log(b, log)
    return sim


def test_unclean_recovery_not_needed_with_leader():
    """PROTOCOL KIP-966 unclean recovery: only for a leaderless partition."""
    sim = recovery_sim({}, {})
    assert sim.do(recover("aggressive")) == "ELECTION_NOT_NEEDED"
    expect(sim.s, leader=1, le=0, pe=0)


def test_balanced_recovery_waits_for_last_known_elr_unfenced():
    """PROTOCOL KIP-966: "Balanced waits until all last_known_elr members are unfenced and have
    replied; Aggressive takes any replies" and chooses "the highest last leader epoch"."""
    logs = {1: [(0, 1)], 2: [(0, 1), (2, 2)], 3: [(0, 1)]}
    sim = recovery_sim({**LEADERLESS, "last_known_elr": [1], "fenced": [1]}, logs)
    before = sim.s.ctrl
    assert sim.do(recover("balanced")) == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    assert sim.s.ctrl == before
    assert sim.do(recover("aggressive")) is None
    expect(sim.s, leader=2, isr=[2], elr=[], lke=[], rec="RECOVERING", le=4, pe=7)


def test_balanced_recovery_elects_once_last_known_elr_replied():
    """PROTOCOL KIP-966 Balanced: with every last_known_elr member unfenced and replying, the
    replica with the highest last leader epoch is chosen."""
    logs = {1: [(0, 1)], 2: [(0, 1), (2, 2)], 3: [(0, 1)]}
    sim = recovery_sim({**LEADERLESS, "last_known_elr": [1]}, logs)
    assert sim.do(recover("balanced")) is None
    expect(sim.s, leader=2, isr=[2], rec="RECOVERING", le=4, pe=7)


def test_none_recovery_waits_for_operator():
    """PROTOCOL KIP-966: "None waits for an operator" (then a designated election works)."""
    logs = {1: [(0, 1)], 2: [(0, 1), (2, 2)], 3: [(0, 1)]}
    sim = recovery_sim({**LEADERLESS, "last_known_elr": [1], "fenced": [1]}, logs, strategy="none")
    before = sim.s.ctrl
    assert sim.do(recover("none")) == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    assert sim.s.ctrl == before
    assert sim.do(elect("designated", 3)) is None
    expect(sim.s, leader=3, isr=[3], rec="RECOVERING")


def test_recovery_highest_leader_epoch_beats_longer_log():
    """PROTOCOL KIP-966: "choose the replica with the highest last leader epoch, then the longest
    log" - epoch first."""
    logs = {1: [(0, 1)], 2: [(0, 1), (3, 2)], 3: [(0, 1), (2, 2), (2, 3)]}
    sim = recovery_sim({**LEADERLESS, "fenced": [1]}, logs)
    assert sim.do(recover("aggressive")) is None
    expect(sim.s, leader=2)


def test_recovery_longest_log_breaks_epoch_tie():
    """PROTOCOL KIP-966: "... then the longest log"."""
    logs = {1: [(0, 1)], 2: [(0, 1), (2, 2)], 3: [(0, 1), (2, 2), (2, 3)]}
    sim = recovery_sim({**LEADERLESS, "fenced": [1]}, logs)
    assert sim.do(recover("aggressive")) is None
    expect(sim.s, leader=3, isr=[3], rec="RECOVERING")


def test_kip_mode_balanced_recovery_waits_for_all_last_known_elr():
    """PROTOCOL KIP-966 Balanced with the KIP meaning of last_known_elr (preset kip-966): waits for
    every member of last_known_elr; unfencing one does not elect it in KIP mode."""
    logs = {1: [(0, 1), (0, 2), (0, 3)], 2: [(0, 1)], 3: [(0, 1), (1, 2)]}
    sim = recovery_sim({**LEADERLESS, "last_known_elr": [2, 3], "fenced": [3]}, logs, preset="kip-966")
    assert sim.do(recover("balanced")) == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    sim.do(unfence(3))
    expect(sim.s, leader=NO_LEADER, lke=[2, 3], pe=6)
    assert sim.do(recover("balanced")) is None
    expect(sim.s, leader=3, isr=[3], rec="RECOVERING", le=4, pe=7)


def test_unclean_recovery_with_logs_from_data_plane():
    """PROTOCOL KIP-966 with logs built by produce/fetch: after every replica restarted uncleanly,
    Aggressive picks the longest log (same leader epoch); Balanced waits for the last known
    leader; unfencing it elects it (Kafka's last-known-leader election, RECOVERING)."""
    def build(strategy):
        sim = Sim(conf(min_isr=2, unclean_recovery_strategy=strategy))
        sim.do(PRODUCE, fetch(2), fetch(3), PRODUCE, fetch(2))
        assert [len(sim.log(b)) for b in (1, 2, 3)] == [2, 2, 1]
        sim.do(crash(3), restart(3), crash(2), restart(2), crash(1), restart(1))
        expect(sim.s, leader=NO_LEADER, isr=[], elr=[], lke=[1], fenced=[1, 2, 3], le=1, pe=3)
        sim.do(unfence(2), unfence(3))
        expect(sim.s, leader=NO_LEADER, pe=3)
        return sim

    sim = build("aggressive")
    assert sim.do(recover("aggressive")) is None
    expect(sim.s, leader=2, isr=[2], rec="RECOVERING", le=2, pe=4)

    sim = build("balanced")
    assert sim.do(recover("balanced")) == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    sim.do(unfence(1))
    expect(sim.s, leader=1, isr=[1], lke=[], rec="RECOVERING", le=2, pe=4)


# =========================================================================== broker side


def test_produce_refused_below_min_isr():
    """PROTOCOL Broker side: "acks=all produce is refused (NOT_ENOUGH_REPLICAS) while |ISR| < min
    ISR"."""
    sim = Sim(conf(min_isr=2), {"isr": [1], "elr": [2, 3]})
    with pytest.raises(NotEnabled):
        sim.do(PRODUCE)
    s, err = A.step(sim.cfg, sim.s, ("produce",))
    assert err == "NOT_ENOUGH_REPLICAS"
    assert B.replica_of(sim.cfg, s, 1).log == ()


def test_produce_allowed_at_min_isr_appends_at_leader_epoch():
    """PROTOCOL Broker side: produce accepted at |ISR| >= min ISR; the record carries the leader
    epoch (also with min.insync.replicas > RF: effective min ISR = RF)."""
    sim = Sim(conf(min_isr=5), {"leader_epoch": 4})
    assert sim.do(PRODUCE) is None
    assert sim.log(1) == ((4, 1),)


def test_hwm_advances_to_min_leo_over_isr():
    """PROTOCOL HWM: "to the minimum log end offset over the maximal ISR"; acked records are those
    below the HWM."""
    sim = Sim(conf(min_isr=2))
    sim.do(PRODUCE, fetch(2))
    with pytest.raises(NotEnabled):          # follower 3's log end offset is unknown
        sim.do(ADVANCE)
    sim.do(fetch(3), PRODUCE, fetch(2))
    sim.do(ADVANCE)
    assert sim.hwm() == 1
    assert sim.s.hist.acked == (1,)
    sim.do(fetch(3), ADVANCE)
    assert sim.hwm() == 2
    assert sim.s.hist.acked == (1, 2)


def test_hwm_does_not_advance_below_min_isr():
    """PROTOCOL HWM: "the leader advances the high watermark only while |committed ISR| >= min
    ISR"."""
    sim = Sim(conf(min_isr=2))
    sim.do(PRODUCE, fetch(2), fetch(3), alter(0, 0, [1]))
    expect(sim.s, isr=[1], elr=[2, 3])
    with pytest.raises(NotEnabled):
        sim.do(ADVANCE)
    assert sim.hwm() == 0


def test_pre_kip_966_hwm_advances_below_min_isr():
    """docs/SCENARIOS: `hwm_requires_min_isr` is false in `pre-kip-966`: the HWM advances below
    min ISR, over the (maximal) ISR alone."""
    sim = Sim(make_config("pre-kip-966", replicas=[1, 2, 3], min_isr=2))
    sim.do(PRODUCE, alter(0, 0, [1]))
    expect(sim.s, isr=[1], elr=[])
    sim.do(ADVANCE)
    assert sim.hwm() == 1


def test_hwm_waits_for_pending_isr_addition():
    """PROTOCOL HWM: the minimum is over "the maximal ISR (committed ISR plus pending
    additions)"."""
    sim = Sim(conf(min_isr=2), {"isr": [1, 2]})
    sim.do(PRODUCE, fetch(2), fetch(3), ADVANCE)
    assert sim.hwm() == 1
    sim.do(PRODUCE, fetch(2), expand(3))
    expect(sim.s, isr=[1, 2])
    with pytest.raises(NotEnabled):          # 3 (pending) has only 1 record
        sim.do(ADVANCE)
    sim.do(fetch(3), ADVANCE)
    assert sim.hwm() == 2
    assert sim.do(DELIVER) is None
    expect(sim.s, isr=[1, 2, 3], pe=1)


def test_hwm_gate_uses_committed_not_pending_isr():
    """PROTOCOL HWM: "The committed ISR is the one the controller accepted, not the pending one"."""
    sim = Sim(conf(min_isr=2))
    sim.do(PRODUCE, fetch(2), alter(0, 0, [1]), expand(2))
    expect(sim.s, isr=[1], elr=[2, 3])
    with pytest.raises(NotEnabled):          # maximal ISR [1,2] but committed ISR [1] < 2
        sim.do(ADVANCE)
    assert sim.do(DELIVER) is None
    expect(sim.s, isr=[1, 2], elr=[])
    sim.do(ADVANCE)
    assert sim.hwm() == 1


def _new_leader_with_shorter_log():
    """1 leads with records 1,2; 2 has both; 3 has none. 1 and 2 crash and are fenced, 3 leads;
    2 restarts (unclean) and is unfenced."""
    sim = Sim(conf(min_isr=1))
    sim.do(PRODUCE, fetch(2), PRODUCE, fetch(2))
    assert sim.log(2) == ((0, 1), (0, 2)) and sim.log(3) == ()
    sim.do(crash(1), crash(2), fence(1), fence(2))
    expect(sim.s, leader=3, isr=[3], le=2)
    sim.do(restart(2), unfence(2))
    return sim


def test_follower_truncates_to_shorter_leader_log():
    """PROTOCOL Broker side: "A follower truncates to the leader's log (by leader epoch) before it
    appends; a new leader with a shorter log therefore removes records from every follower"."""
    sim = _new_leader_with_shorter_log()
    sim.do(fetch(2))
    assert sim.log(2) == ()


def test_follower_replaces_divergent_suffix():
    """PROTOCOL Broker side: the follower truncates its divergent suffix, then appends the new
    leader's records."""
    sim = _new_leader_with_shorter_log()
    sim.do(PRODUCE)
    assert sim.log(3) == ((2, 3),)
    sim.do(fetch(2))
    assert sim.log(2) == ((2, 3),)


def test_crash_lossy_loses_unflushed_suffix():
    """PROTOCOL Broker side: "Unclean shutdown = crash without flushing: the broker may lose the
    unflushed suffix of its log"; `keep` must lie between the flushed prefix and the log end."""
    sim = Sim(conf(min_isr=1))
    sim.do(PRODUCE, PRODUCE, PRODUCE)
    assert len(sim.log(1)) == 3 and sim.replica(1).flushed == 0
    with pytest.raises(NotEnabled):
        sim.do(crash_lossy(1, 3))
    sim.do(crash_lossy(1, 1))
    assert sim.log(1) == ((0, 1),)
    assert not sim.replica(1).alive
    assert sim.s.hist.lossy_crashes == 1


def test_restart_makes_log_durable():
    """PROTOCOL Broker side / docs: "A restart or clean shutdown makes the whole log durable", so
    a later lossy crash cannot go below it."""
    sim = Sim(conf(min_isr=1))
    sim.do(PRODUCE, PRODUCE, crash(1), restart(1))
    assert sim.replica(1).flushed == 2
    assert sim.log(1) == ((0, 1), (0, 2))
    with pytest.raises(NotEnabled):
        sim.do(crash_lossy(1, 1))


def test_restart_after_crash_registers_unclean():
    """PROTOCOL Register/Broker side: a crash leaves no clean-shutdown file, so the restart
    registers uncleanly: removed from ISR and ELR, new epoch, fenced."""
    sim = Sim(conf(min_isr=3))
    sim.do(crash(3), restart(3))
    expect(sim.s, isr=[1, 2], elr=[], fenced=[3], pe=1)
    assert sim.s.ctrl.broker_epoch(3) == 1103
    assert sim.s.hist.unclean_shutdowns == 1


def test_restart_after_clean_shutdown_registers_clean():
    """PROTOCOL Broker side: "Clean shutdown flushes and writes the clean-shutdown file with the
    current broker epoch"; the restart is then a clean registration (processed like fencing:
    3 stays in ELR). The file is deleted on restart, so a crash after it is unclean again."""
    sim = Sim(conf(min_isr=3))
    sim.do(PRODUCE, fetch(3), cshut(3))
    expect(sim.s, isr=[1, 2], elr=[3], shutting_down=[3])
    sim.do(clean_shutdown(3))
    assert sim.replica(3).clean_file == 103 and sim.replica(3).flushed == 1
    expect(sim.s, fenced=[3], elr=[3])
    sim.do(restart(3))
    expect(sim.s, isr=[1, 2], elr=[3], fenced=[3], shutting_down=[], pe=1)
    assert sim.s.hist.unclean_shutdowns == 0
    assert sim.s.ctrl.broker_epoch(3) == 1103
    sim.do(crash(3), restart(3))
    expect(sim.s, elr=[], fenced=[3], pe=2)
    assert sim.s.hist.unclean_shutdowns == 1


def test_expand_isr_needs_fetch_with_registered_broker_epoch():
    """PROTOCOL AlterPartition: "The leader learns follower epochs from Fetch requests and proposes
    a follower only if that epoch matches its metadata" (KIP-903)."""
    sim = Sim(conf(min_isr=2), {"isr": [1, 2]})
    with pytest.raises(NotEnabled):          # no fetch seen yet
        sim.do(expand(3))
    sim.do(fetch(3), register(3), unfence(3))
    assert sim.s.ctrl.broker_epoch(3) == 1103
    with pytest.raises(NotEnabled):          # its Fetch carried the old epoch 103
        sim.do(expand(3))
    sim.do(fetch(3), expand(3))
    assert sim.do(DELIVER) is None
    expect(sim.s, isr=[1, 2, 3], pe=1)


def test_expand_isr_pre_kip_903_without_epoch():
    """pre-kip-903: the leader does not compare Fetch epochs, and sends -1 member epochs that the
    controller does not check."""
    sim = Sim(conf(min_isr=2, preset="pre-kip-903"), {"isr": [1, 2]})
    sim.do(fetch(3), register(3), unfence(3), expand(3))
    assert sim.do(DELIVER) is None
    expect(sim.s, isr=[1, 2, 3], pe=1)


def test_expand_isr_refused_for_fenced_follower():
    """PROTOCOL AlterPartition check 7 seen from the leader: a fenced follower is not proposed."""
    sim = Sim(conf(min_isr=2), {"isr": [1, 2], "fenced": [3]})
    sim.do(fetch(3))
    with pytest.raises(NotEnabled):
        sim.do(expand(3))


def test_stale_expand_delivered_after_follower_reregistered_is_ineligible():
    """PROTOCOL AlterPartition check 7 (KIP-903): a proposal carrying a follower's old broker
    epoch, delivered after the follower re-registered, is INELIGIBLE_REPLICA."""
    sim = Sim(conf(min_isr=2), {"isr": [1, 2]})
    sim.do(fetch(3), expand(3), register(3), unfence(3))
    assert sim.do(DELIVER) == "INELIGIBLE_REPLICA"
    expect(sim.s, isr=[1, 2], pe=0)


def test_shrink_isr_then_deliver():
    """PROTOCOL AlterPartition from the leader: a lagging follower is dropped; below min ISR it
    joins ELR (pipeline step 1); no leader epoch bump."""
    sim = Sim(conf(min_isr=3))
    sim.do(PRODUCE, fetch(2), shrink(3))
    expect(sim.s, isr=[1, 2, 3])
    assert sim.do(DELIVER) is None
    expect(sim.s, isr=[1, 2], elr=[3], le=0, pe=1)


# =========================================================================== additional cases


def test_kip_mode_last_known_elr_keeps_unclean_shutdown_elr_members():
    """PROTOCOL step 3 **[KIP]**: "The KIP instead keeps in last_known_elr the ELR members removed
    by an unclean shutdown" (PCBT _RemoveUncleanShutdownReplicasFromElr, KIP mode: lke [3])."""
    s, _ = run(conf(replicas=(1, 2, 3, 4), min_isr=3, use_last_known_leader=False),
               {"isr": [1], "elr": [2, 3]}, register(3))
    expect(s, isr=[1], elr=[2], lke=[3], leader=1, le=0, pe=1)


def test_kip_mode_last_known_elr_survives_isr_change_below_min():
    """PROTOCOL step 3 **[KIP]** (PCBT _IsrAddNewMemberNotInELR): below min ISR, last_known_elr
    keeps earlier members not back in the ISR or ELR."""
    s, err = run(conf(replicas=(1, 2, 3, 4), min_isr=3, use_last_known_leader=False),
                 {"isr": [1], "elr": [3], "last_known_elr": [2], "fenced": [2, 3]},
                 alter(0, 0, [1, 4]))
    assert err is None
    expect(s, isr=[1, 4], elr=[3], lke=[2], pe=1, le=0)


def test_kip_mode_tracks_separate_last_known_leader():
    """PROTOCOL step 3 **[KIP]**: "it tracks a separate last known leader" (seed 000: with
    unclean.leader.election.enable false, "elect the LastKnownLeader once it is unfenced")."""
    sim = Sim(conf(min_isr=2, use_last_known_leader=False))
    sim.do(fence(3), fence(2), fence(1))
    expect(sim.s, leader=NO_LEADER, isr=[], elr=[1, 2])
    assert sim.p.last_known_leader == 1
    sim.do(register(1), register(2))        # unclean: both leave ELR
    expect(sim.s, leader=NO_LEADER, isr=[], elr=[], lke=[1, 2])
    sim.do(unfence(1))
    expect(sim.s, leader=1, isr=[1], rec="RECOVERING", elr=[], lke=[])


def test_last_known_leader_before_unclean_topic_fallback():
    """PROTOCOL step 2 order: the last known leader is tried before "If still none and the topic
    has unclean.leader.election.enable, the first acceptable replica in replica order"."""
    s, _ = run(conf(min_isr=2, unclean_leader_election=True),
               {"leader": -1, "isr": [], "elr": [], "last_known_elr": [3], "fenced": [3]}, unfence(3))
    expect(s, leader=3, isr=[3], rec="RECOVERING", lke=[])


def test_elr_election_keeps_recovery_state_and_leaderless_keeps_recovering():
    """PROTOCOL step 2: a leader from ELR is "a clean election" - it does not set RECOVERING nor
    clear it (notes §3: "the state stays RECOVERED or RECOVERING as it was"); a leader moving to
    -1 leaves RECOVERING as it is (testChangeInLeadershipDoesNotChangeRecoveryState)."""
    sim = Sim(conf(min_isr=3), {"isr": [1], "elr": [2], "leader_recovery_state": "RECOVERING", "fenced": [3]})
    sim.do(fence(1))
    expect(sim.s, leader=2, isr=[2], elr=[1], rec="RECOVERING", le=1)
    sim2 = Sim(conf(min_isr=3), {"isr": [1], "leader_recovery_state": "RECOVERING", "fenced": [2, 3]})
    sim2.do(fence(1))
    expect(sim2.s, leader=NO_LEADER, rec="RECOVERING", le=1)


def test_elr_member_in_controlled_shutdown_not_elected():
    """PROTOCOL step 2: a valid ELR leader must be acceptable: "registered, unfenced, not in
    controlled shutdown"."""
    s, _ = run(conf(replicas=(1, 2, 3), min_isr=3), {"isr": [1], "elr": [2, 3], "in_controlled_shutdown": [2]},
               fence(1))
    expect(s, leader=3, isr=[3], elr=[1, 2])


def test_balanced_recovery_waits_for_fenced_elr_aggressive_does_not():
    """PROTOCOL KIP-966 (seed 000): "If there are fenced ELR members: if Aggressive, an unclean
    recovery will happen. Otherwise, we will wait for the fenced ELR members"."""
    logs = {1: [(0, 1)], 2: [(0, 1), (1, 2)], 3: [(0, 1)]}
    sim = recovery_sim({**LEADERLESS, "elr": [1], "fenced": [1]}, logs)
    assert sim.do(recover("balanced")) == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    expect(sim.s, leader=NO_LEADER, elr=[1], pe=6)
    assert sim.do(recover("aggressive")) is None
    expect(sim.s, leader=2, isr=[2], elr=[], rec="RECOVERING")


def test_new_reassignment_during_ongoing_one_removes_previously_adding_replicas():
    """PROTOCOL Reassignment / Kafka (RCMT
    testReassignPartitionsHandlesNewReassignmentThatRemovesPreviouslyAddingReplicas): [0,1] ->
    [2,3] (2 joins the ISR and is elected preferred leader) -> [4,5] gives replicas
    [4,5,0,1,2,3], removing [0,1,2,3], adding [4,5], leader 2 still a replica; completing it
    answers NEW_LEADER_ELECTED with leader 4."""
    sim = Sim(conf(replicas=(0, 1), min_isr=1, brokers=[2, 3, 4, 5]))
    sim.do(reassign([2, 3]))
    expect(sim.s, replicas=[2, 3, 0, 1], adding=[2, 3], removing=[0, 1])
    assert sim.do(alter(0, 1, [0, 1, 2])) is None
    assert sim.do(elect("preferred")) is None
    expect(sim.s, leader=2, le=1, pe=3)
    sim.do(reassign([4, 5]))
    expect(sim.s, replicas=[4, 5, 0, 1, 2, 3], adding=[4, 5], removing=[0, 1, 2, 3], leader=2,
           isr=[0, 1, 2])
    assert sim.do(alter(1, 4, [0, 1, 2, 3, 4, 5])) == "NEW_LEADER_ELECTED"
    expect(sim.s, leader=4, replicas=[4, 5], isr=[4, 5], adding=[], removing=[])


def test_unclean_admin_election_error_depends_on_record_not_leader():
    """PROTOCOL Admin elections error names; Kafka (notes §3 'Admin electLeaders' step 4): "If the
    builder returns no record: ... UNCLEAN -> ELIGIBLE_LEADERS_NOT_AVAILABLE. Otherwise NONE and the
    record is applied." Here the build clears a stale ELR (|ISR| >= min ISR) without a leader."""
    s, err = run(conf(min_isr=2), {"leader": -1, "isr": [2, 3], "elr": [1], "fenced": [1, 2, 3]},
                 elect("unclean"))
    assert err is None
    expect(s, leader=NO_LEADER, isr=[2, 3], elr=[], pe=1, le=0)


def test_recovering_leader_cannot_expand_until_recovered():
    """PROTOCOL AlterPartition check 6: RECOVERING allows only a one-member ISR, so after an
    unclean election the leader first reports RECOVERED (complete_recovery), then expands."""
    sim = Sim(conf(min_isr=2, unclean_leader_election=True), {"isr": [1]})
    sim.do(fence(1))
    expect(sim.s, leader=2, isr=[2], rec="RECOVERING", le=1, pe=1)
    sim.do(fetch(3))
    with pytest.raises(NotEnabled):
        sim.do(expand(3))
    sim.do({"op": "complete_recovery"})
    assert sim.do(DELIVER) is None
    expect(sim.s, rec="RECOVERED", isr=[2], le=1, pe=2)
    sim.do(expand(3))
    assert sim.do(DELIVER) is None
    expect(sim.s, isr=[2, 3], rec="RECOVERED", pe=3)


def test_expand_isr_requires_follower_caught_up_to_hwm():
    """docs/SCENARIOS expand_isr: enabled only when the "follower caught up to the HWM in this
    epoch" (the maximal ISR must not include a follower missing committed records)."""
    sim = Sim(conf(min_isr=2), {"isr": [1, 2]})
    sim.do(PRODUCE, fetch(2), fetch(3), PRODUCE, fetch(2), ADVANCE)
    assert sim.hwm() == 2 and len(sim.log(3)) == 1
    with pytest.raises(NotEnabled):
        sim.do(expand(3))
    sim.do(fetch(3), expand(3))
    assert sim.do(DELIVER) is None
    expect(sim.s, isr=[1, 2, 3])
