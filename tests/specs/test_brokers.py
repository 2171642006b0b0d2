"""The broker side (specs/kernel/data.py, specs/actions/data.py).

Produce, the high watermark, fetch and truncation, crash and restart, the leader's ISR expansion
and shrink, leader recovery, and KIP-966 unclean recovery, which picks a leader by the replicas'
logs: docs/protocol.md, "Broker side" (and "Controller events" for unclean recovery). Each test
quotes the rule it checks in its docstring.
"""
from __future__ import annotations

import pytest

from specs import actions as A
from specs import brokers as B
from specs.config import make_config
from specs.scenario import NotEnabled
from specs.state import NO_LEADER

from .helpers import (ADVANCE, DELIVER, PRODUCE, Sim, alter, clean_shutdown, conf, crash, crash_lossy, cshut, elect,
                      expand, expect, fence, fetch, recover, register, restart, shrink, unfence)

# =========================================================================== produce, HWM


def test_produce_refused_below_min_isr():
    """docs/protocol.md, "Broker side": "acks=all produce is refused (NOT_ENOUGH_REPLICAS) while
    |ISR| < min ISR"."""
    sim = Sim(conf(min_isr=2), {"isr": [1], "elr": [2, 3]})
    with pytest.raises(NotEnabled):
        sim.do(PRODUCE)
    s, err = A.step(sim.cfg, sim.s, ("produce",))
    assert err == "NOT_ENOUGH_REPLICAS"
    assert B.replica_of(sim.cfg, s, 1).log == ()


def test_produce_allowed_at_min_isr_appends_at_leader_epoch():
    """docs/protocol.md, "Broker side": produce accepted at |ISR| >= min ISR; the record carries
    the leader epoch (also with min.insync.replicas > RF: effective min ISR = RF)."""
    sim = Sim(conf(min_isr=5), {"leader_epoch": 4})
    assert sim.do(PRODUCE) is None
    assert sim.log(1) == ((4, 1),)


def test_hwm_advances_to_min_leo_over_isr():
    """docs/protocol.md, "Broker side" (HWM): "to the minimum log end offset over the maximal
    ISR"; acked records are those below the HWM."""
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
    """docs/protocol.md, "Broker side" (HWM): "the leader advances the high watermark only while
    |committed ISR| >= min ISR"."""
    sim = Sim(conf(min_isr=2))
    sim.do(PRODUCE, fetch(2), fetch(3), alter(0, 0, [1]))
    expect(sim.s, isr=[1], elr=[2, 3])
    with pytest.raises(NotEnabled):
        sim.do(ADVANCE)
    assert sim.hwm() == 0


def test_pre_kip_966_hwm_advances_below_min_isr():
    """docs/protocol.md, "Rule switches": `hwm_requires_min_isr` is false in `pre-kip-966`: the HWM
    advances below min ISR, over the (maximal) ISR alone."""
    sim = Sim(make_config("pre-kip-966", replicas=[1, 2, 3], min_isr=2))
    sim.do(PRODUCE, alter(0, 0, [1]))
    expect(sim.s, isr=[1], elr=[])
    sim.do(ADVANCE)
    assert sim.hwm() == 1


def test_hwm_waits_for_pending_isr_addition():
    """docs/protocol.md, "Broker side" (HWM): the minimum is over "the maximal ISR (committed ISR
    plus pending additions)"."""
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
    """docs/protocol.md, "Broker side" (HWM): "The committed ISR is the one the controller
    accepted, not the pending one"."""
    sim = Sim(conf(min_isr=2))
    sim.do(PRODUCE, fetch(2), alter(0, 0, [1]), expand(2))
    expect(sim.s, isr=[1], elr=[2, 3])
    with pytest.raises(NotEnabled):          # maximal ISR [1,2] but committed ISR [1] < 2
        sim.do(ADVANCE)
    assert sim.do(DELIVER) is None
    expect(sim.s, isr=[1, 2], elr=[])
    sim.do(ADVANCE)
    assert sim.hwm() == 1


# =========================================================================== fetch, truncation


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
    """docs/protocol.md, "Broker side": "A follower truncates to the leader's log (by leader epoch)
    before it appends; a new leader with a shorter log therefore removes records from every
    follower"."""
    sim = _new_leader_with_shorter_log()
    sim.do(fetch(2))
    assert sim.log(2) == ()


def test_follower_replaces_divergent_suffix():
    """docs/protocol.md, "Broker side": the follower truncates its divergent suffix, then appends
    the new leader's records."""
    sim = _new_leader_with_shorter_log()
    sim.do(PRODUCE)
    assert sim.log(3) == ((2, 3),)
    sim.do(fetch(2))
    assert sim.log(2) == ((2, 3),)


# =========================================================================== crash, restart


def test_crash_lossy_loses_unflushed_suffix():
    """docs/protocol.md, "Broker side": "Unclean shutdown = crash without flushing: the broker may
    lose the unflushed suffix of its log"; `keep` must lie between the flushed prefix and the log
    end."""
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
    """docs/protocol.md, "Broker side": "A restart or clean shutdown makes the whole log durable",
    so a later lossy crash cannot go below it."""
    sim = Sim(conf(min_isr=1))
    sim.do(PRODUCE, PRODUCE, crash(1), restart(1))
    assert sim.replica(1).flushed == 2
    assert sim.log(1) == ((0, 1), (0, 2))
    with pytest.raises(NotEnabled):
        sim.do(crash_lossy(1, 1))


def test_restart_after_crash_registers_unclean():
    """docs/protocol.md, "Broker side" and "Controller events" (Register): a crash leaves no
    clean-shutdown file, so the restart registers uncleanly: removed from ISR and ELR, new epoch,
    fenced."""
    sim = Sim(conf(min_isr=3))
    sim.do(crash(3), restart(3))
    expect(sim.s, isr=[1, 2], elr=[], fenced=[3], pe=1)
    assert sim.s.ctrl.broker_epoch(3) == 1103
    assert sim.s.hist.unclean_shutdowns == 1


def test_restart_after_clean_shutdown_registers_clean():
    """docs/protocol.md, "Broker side": "Clean shutdown flushes and writes the clean-shutdown file
    with the current broker epoch"; the restart is then a clean registration (processed like
    fencing: 3 stays in ELR). The file is deleted on restart, so a crash after it is unclean
    again."""
    sim = Sim(conf(min_isr=3))
    sim.do(PRODUCE, fetch(3), cshut(3))        # 3 leads nothing: told to shut down at once
    assert sim.replica(3).clean_file == 103 and sim.replica(3).flushed == 1 and not sim.replica(3).alive
    expect(sim.s, isr=[1, 2], elr=[3], fenced=[3], shutting_down=[])
    sim.do(restart(3))
    expect(sim.s, isr=[1, 2], elr=[3], fenced=[3], shutting_down=[], pe=1)
    assert sim.s.hist.unclean_shutdowns == 0
    sim.do(unfence(3), cshut(1))               # the leader enters controlled shutdown, then stops
    expect(sim.s, isr=[2], elr=[1, 3], leader=2, shutting_down=[1], fenced=[])
    sim.do(clean_shutdown(1))
    assert sim.replica(1).clean_file == 101 and not sim.replica(1).alive
    expect(sim.s, fenced=[1], shutting_down=[1])
    assert sim.s.ctrl.broker_epoch(3) == 1103
    sim.do(crash(3), restart(3))
    expect(sim.s, elr=[1], fenced=[1, 3])
    assert sim.s.hist.unclean_shutdowns == 1


# =========================================================================== expand, shrink ISR


def test_expand_isr_needs_fetch_with_registered_broker_epoch():
    """docs/protocol.md, "AlterPartition": "The leader learns follower epochs from Fetch requests
    and proposes a follower only if that epoch matches its metadata" (KIP-903)."""
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
    """docs/protocol.md, "Rule switches" (preset pre-kip-903): the leader does not compare Fetch
    epochs, and sends -1 member epochs that the controller does not check."""
    sim = Sim(conf(min_isr=2, preset="pre-kip-903"), {"isr": [1, 2]})
    sim.do(fetch(3), register(3), unfence(3), expand(3))
    assert sim.do(DELIVER) is None
    expect(sim.s, isr=[1, 2, 3], pe=1)


def test_expand_isr_refused_for_fenced_follower():
    """docs/protocol.md, "AlterPartition" check 7 seen from the leader: a fenced follower is not
    proposed."""
    sim = Sim(conf(min_isr=2), {"isr": [1, 2], "fenced": [3]})
    sim.do(fetch(3))
    with pytest.raises(NotEnabled):
        sim.do(expand(3))


def test_expand_isr_requires_follower_caught_up_to_hwm():
    """docs/protocol.md, "Broker side", and docs/SCENARIOS.md (expand_isr): enabled only when the
    "follower caught up to the HWM in this epoch" (the maximal ISR must not include a follower
    missing committed records)."""
    sim = Sim(conf(min_isr=2), {"isr": [1, 2]})
    sim.do(PRODUCE, fetch(2), fetch(3), PRODUCE, fetch(2), ADVANCE)
    assert sim.hwm() == 2 and len(sim.log(3)) == 1
    with pytest.raises(NotEnabled):
        sim.do(expand(3))
    sim.do(fetch(3), expand(3))
    assert sim.do(DELIVER) is None
    expect(sim.s, isr=[1, 2, 3])


def test_stale_expand_delivered_after_follower_reregistered_is_ineligible():
    """docs/protocol.md, "AlterPartition" check 7 (KIP-903): a proposal carrying a follower's old
    broker epoch, delivered after the follower re-registered, is INELIGIBLE_REPLICA."""
    sim = Sim(conf(min_isr=2), {"isr": [1, 2]})
    sim.do(fetch(3), expand(3), register(3), unfence(3))
    assert sim.do(DELIVER) == "INELIGIBLE_REPLICA"
    expect(sim.s, isr=[1, 2], pe=0)


def test_shrink_isr_then_deliver():
    """docs/protocol.md, "AlterPartition" from the leader: a lagging follower is dropped; below min
    ISR it joins ELR ("The pipeline", ELR update); no leader epoch bump."""
    sim = Sim(conf(min_isr=3))
    sim.do(PRODUCE, fetch(2), shrink(3))
    expect(sim.s, isr=[1, 2, 3])
    assert sim.do(DELIVER) is None
    expect(sim.s, isr=[1, 2], elr=[3], le=0, pe=1)


# =========================================================================== leader recovery


def test_recovering_leader_reports_recovered_with_its_first_isr_change():
    """Kafka's Partition.makeLeader: a leader elected uncleanly marks itself RECOVERED and sends no
    AlterPartition for that alone; its first ISR change carries RECOVERED, so ISR [2,3] and
    RECOVERED come in one record (what a real 4.4.0 cluster wrote, docs/cluster.md). Check 6 of
    docs/protocol.md, "AlterPartition", still refuses a RECOVERING request with more members."""
    sim = Sim(conf(min_isr=2, unclean_leader_election=True), {"isr": [1]})
    sim.do(fence(1))
    expect(sim.s, leader=2, isr=[2], rec="RECOVERING", le=1, pe=1)
    sim.do(fetch(3))
    sim.do(expand(3))
    assert sim.do(DELIVER) is None
    expect(sim.s, isr=[2, 3], rec="RECOVERED", le=1, pe=2)


# =========================================================================== KIP-966 unclean recovery


LEADERLESS = {"leader": -1, "isr": [], "elr": [], "leader_epoch": 3, "partition_epoch": 6}


def recovery_sim(initial, logs, preset="kafka", strategy="balanced"):
    sim = Sim(conf(min_isr=2, preset=preset, unclean_recovery_strategy=strategy, designated_elections=True), initial)
    for b, log in logs.items():
        sim.set_log(b, log)
    return sim


def test_unclean_recovery_not_needed_with_leader():
    """docs/protocol.md, "Controller events" (KIP-966 unclean recovery): only for a leaderless
    partition."""
    sim = recovery_sim({}, {})
    assert sim.do(recover("aggressive")) == "ELECTION_NOT_NEEDED"
    expect(sim.s, leader=1, le=0, pe=0)


def test_balanced_recovery_waits_for_last_known_elr_unfenced():
    """docs/protocol.md, "Controller events" (KIP-966 unclean recovery): "Balanced waits until all
    last_known_elr members are unfenced and have replied; Aggressive takes any replies" and
    chooses "the highest last leader epoch"."""
    logs = {1: [(0, 1)], 2: [(0, 1), (2, 2)], 3: [(0, 1)]}
    sim = recovery_sim({**LEADERLESS, "last_known_elr": [1], "fenced": [1]}, logs)
    before = sim.s.ctrl
    assert sim.do(recover("balanced")) == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    assert sim.s.ctrl == before
    assert sim.do(recover("aggressive")) is None
    expect(sim.s, leader=2, isr=[2], elr=[], lke=[], rec="RECOVERING", le=4, pe=7)


def test_balanced_recovery_elects_once_last_known_elr_replied():
    """docs/protocol.md, "Controller events" (KIP-966 unclean recovery, Balanced): with every
    last_known_elr member unfenced and replying, the replica with the highest last leader epoch
    is chosen."""
    logs = {1: [(0, 1)], 2: [(0, 1), (2, 2)], 3: [(0, 1)]}
    sim = recovery_sim({**LEADERLESS, "last_known_elr": [1]}, logs)
    assert sim.do(recover("balanced")) is None
    expect(sim.s, leader=2, isr=[2], rec="RECOVERING", le=4, pe=7)


def test_balanced_recovery_waits_for_fenced_elr_aggressive_does_not():
    """KIP-966 unclean recovery (docs/protocol.md, "Controller events"): "If there are fenced ELR
    members: if Aggressive, an unclean recovery will happen. Otherwise, we will wait for the
    fenced ELR members"."""
    logs = {1: [(0, 1)], 2: [(0, 1), (1, 2)], 3: [(0, 1)]}
    sim = recovery_sim({**LEADERLESS, "elr": [1], "fenced": [1]}, logs)
    assert sim.do(recover("balanced")) == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    expect(sim.s, leader=NO_LEADER, elr=[1], pe=6)
    assert sim.do(recover("aggressive")) is None
    expect(sim.s, leader=2, isr=[2], elr=[], rec="RECOVERING")


def test_none_recovery_waits_for_operator():
    """docs/protocol.md, "Controller events" (KIP-966 unclean recovery): "None waits for an
    operator" (then a designated election works)."""
    logs = {1: [(0, 1)], 2: [(0, 1), (2, 2)], 3: [(0, 1)]}
    sim = recovery_sim({**LEADERLESS, "last_known_elr": [1], "fenced": [1]}, logs, strategy="none")
    before = sim.s.ctrl
    assert sim.do(recover("none")) == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    assert sim.s.ctrl == before
    assert sim.do(elect("designated", 3)) is None
    expect(sim.s, leader=3, isr=[3], rec="RECOVERING")


def test_recovery_highest_leader_epoch_beats_longer_log():
    """docs/protocol.md, "Controller events" (KIP-966 unclean recovery): "choose the replica with
    the highest last leader epoch, then the longest log" - epoch first."""
    logs = {1: [(0, 1)], 2: [(0, 1), (3, 2)], 3: [(0, 1), (2, 2), (2, 3)]}
    sim = recovery_sim({**LEADERLESS, "fenced": [1]}, logs)
    assert sim.do(recover("aggressive")) is None
    expect(sim.s, leader=2)


def test_recovery_longest_log_breaks_epoch_tie():
    """docs/protocol.md, "Controller events" (KIP-966 unclean recovery): "... then the longest
    log"."""
    logs = {1: [(0, 1)], 2: [(0, 1), (2, 2)], 3: [(0, 1), (2, 2), (2, 3)]}
    sim = recovery_sim({**LEADERLESS, "fenced": [1]}, logs)
    assert sim.do(recover("aggressive")) is None
    expect(sim.s, leader=3, isr=[3], rec="RECOVERING")


def test_kip_mode_balanced_recovery_waits_for_all_last_known_elr():
    """docs/protocol.md, "Where Kafka and the KIP texts differ": KIP-966 Balanced with the KIP
    meaning of last_known_elr (preset kip-966) waits for every member of last_known_elr;
    unfencing one does not elect it in KIP mode."""
    logs = {1: [(0, 1), (0, 2), (0, 3)], 2: [(0, 1)], 3: [(0, 1), (1, 2)]}
    sim = recovery_sim({**LEADERLESS, "last_known_elr": [2, 3], "fenced": [3]}, logs, preset="kip-966")
    assert sim.do(recover("balanced")) == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    sim.do(unfence(3))
    expect(sim.s, leader=NO_LEADER, lke=[2, 3], pe=6)
    assert sim.do(recover("balanced")) is None
    expect(sim.s, leader=3, isr=[3], rec="RECOVERING", le=4, pe=7)


def test_unclean_recovery_with_logs_from_data_plane():
    """docs/protocol.md, "Controller events" (KIP-966 unclean recovery) with logs built by
    produce/fetch: after every replica restarted uncleanly, Aggressive picks the longest log (same
    leader epoch); Balanced waits for the last known leader; unfencing it does NOT elect it (with
    a strategy, rounds replace Kafka's last-known-leader election); the next round does."""
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
    expect(sim.s, leader=NO_LEADER, lke=[1], pe=3)
    assert sim.do(recover("balanced")) is None
    expect(sim.s, leader=1, isr=[1], lke=[], rec="RECOVERING", le=2, pe=4)


def test_recovery_strategy_replaces_the_unclean_fallbacks():
    """docs/protocol.md, "Unclean recovery round": with a strategy, neither the last known
    leader nor unclean.leader.election elects a leader on unfence; without one (Kafka) the last
    known leader is elected uncleanly."""
    def build(**flags):
        sim = Sim(conf(min_isr=2, unclean_leader_election=True, **flags))
        sim.do(crash(3), restart(3), crash(2), restart(2), crash(1), restart(1), unfence(1))
        return sim
    expect(build().s, leader=1, rec="RECOVERING")
    for strategy in ("aggressive", "balanced", "none"):
        expect(build(unclean_recovery_strategy=strategy).s, leader=NO_LEADER)
