"""Several partitions lifted from the one-partition model (specs/partitions.py): with one
partition it is that model, state for state; a broker's event acts on every partition and a
partition's own step on one; the symmetry over partitions keeps every verdict."""
from __future__ import annotations

import pytest

from invariants import REGISTRY
from specs import Model, make_config
from specs import partitions as P
from specs.actions.labels import LEADS_ELSEWHERE
from verifier.core.settings import Options
from verifier.engines.bfs import explore

SMALL = {"records": 1, "fences": 1, "lossy_crashes": 0, "isr_shrinks": 0, "max_leader_epoch": 2,
         "max_partition_epoch": 3}
TWO = dict(replicas=(1, 2), min_isr=1, bounds={**SMALL, "lossy_crashes": 1})
LIFTED = [P.lift_property(inv) for inv in REGISTRY]


def search(model, properties):
    r = explore(model, properties, options=Options(keep_going=True))
    return r, {name: len(trace.steps) for name, trace in r.counterexamples.items()}


@pytest.mark.parametrize("cfg", [dict(bounds=SMALL), TWO, dict(TWO, mutant="follower-no-truncate"),
                                 dict(TWO, mutant="unfence-adds-to-isr")],
                         ids=["three-replicas", "two-replicas-lossy", "follower-no-truncate", "unfence-adds-to-isr"])
def test_one_partition_lifted_is_the_one_partition_model(cfg):
    cfg = make_config(**cfg)
    plain, plain_found = search(Model(cfg, symmetry=False), list(REGISTRY))
    lifted, lifted_found = search(P.PartitionsModel(cfg, 1), LIFTED)
    assert (lifted.distinct_states, lifted.transitions, lifted.states_per_level) == \
        (plain.distinct_states, plain.transitions, plain.states_per_level)
    assert lifted_found == plain_found


EVERY_KIND = {"records": 1, "fences": 1, "lossy_crashes": 1, "clean_shutdowns": 1, "config_changes": 1,
              "admin_elections": 1, "unclean_recoveries": 1, "isr_shrinks": 0, "max_leader_epoch": 2,
              "max_partition_epoch": 2}


@pytest.mark.nightly          # 50 s on CI's three workers, which ran 38.6 of its 40 minutes (2026-12-06)
@pytest.mark.parametrize("unclean", [False, True])
def test_one_partition_lifted_takes_every_kind_of_step_as_the_one_partition_model(unclean):
    """Both config changes, a controlled and a clean shutdown, a lossy crash and a restart beside
    the fences (22,308 states; with unclean elections on, 32,870): the same states, transitions,
    shortest counterexamples and steps of each action. (Admin elections and recovery rounds are
    not enabled at this size.)"""
    cfg = make_config(bounds=EVERY_KIND, replicas=(1, 2), min_isr=1, unclean_leader_election=unclean)
    plain, plain_found = search(Model(cfg, symmetry=False), list(REGISTRY))
    lifted, lifted_found = search(P.PartitionsModel(cfg, 1), LIFTED)
    assert (lifted.distinct_states, lifted.transitions, lifted.states_per_level) == \
        (plain.distinct_states, plain.transitions, plain.states_per_level)
    assert lifted_found == plain_found and dict(lifted.enabled) == dict(plain.enabled)
    assert {name for name, n in plain.enabled.items() if n} >= {"set_min_isr", "set_unclean", "controlled_shutdown",
                                                                "clean_shutdown", "crash_lossy", "fence", "unfence",
                                                                "restart"}


def test_the_symmetry_over_partitions_keeps_every_verdict_and_shortest_counterexample():
    cfg = make_config(**TWO, mutant="unfence-adds-to-isr")
    reduced, reduced_found = search(P.PartitionsModel(cfg, 2), LIFTED)
    full, full_found = search(P.PartitionsModel(cfg, 2, symmetry=False), LIFTED)
    assert reduced_found == full_found and full_found          # the mutant is caught, as shortly
    assert reduced.depth == full.depth
    assert reduced.distinct_states < full.distinct_states


def test_a_broker_event_acts_on_every_partition_and_a_partitions_own_step_on_one():
    cfg = make_config(bounds={"records": 2, "fences": 1})
    s = P.init_states(cfg, 2)[0]
    steps = dict(P.successors(cfg, s))
    fenced = steps[("fence", 1)]
    assert [part.ctrl.partition.leader for part in fenced] == [2, 2]
    assert [part.ctrl.partition.isr for part in fenced] == [(2, 3), (2, 3)]
    produced = steps[("produce", ("partition", 1))]
    assert produced[0].replicas == s[0].replicas and produced[1].replicas[0].log == ((0, 1),)
    assert produced[0].hist.used == produced[1].hist.used != s[0].hist.used     # one budget for all
    for label, t in steps.items():
        assert P.step(cfg, s, label) == t, label


def test_a_lossy_crash_loses_only_where_a_partition_has_something_unflushed():
    cfg = make_config(bounds={"records": 1, "lossy_crashes": 1})
    s = P.init_states(cfg, 2)[0]
    s = dict(P.successors(cfg, s))[("produce", ("partition", 0))]
    label, t = next((lbl, t) for lbl, t in P.successors(cfg, s) if lbl[0] == "crash_lossy")
    assert label == ("crash_lossy", ("each", (("crash_lossy", 1, 0), ("crash", 1))))
    assert t[0].replicas[0].log == () and t[0].hist.lossy_crashes == 1
    assert not t[1].replicas[0].alive and t[1].hist.lossy_crashes == 0
    assert t[0].hist.used == t[1].hist.used                    # the lossy crash's budget, charged once
    assert P.step(cfg, s, label) == t
    assert "partition 0: " in P.describe(label) and "partition 1: " in P.describe(label)


def test_a_step_of_one_partition_that_changed_what_partitions_share_is_refused(monkeypatch):
    monkeypatch.setattr(P, "PER_PARTITION", P.PER_PARTITION | {"fence"})
    cfg = make_config(bounds={"fences": 1})
    with pytest.raises(P.LiftError, match="partition 0 alone"):
        list(P.successors(cfg, P.init_states(cfg, 2)[0]))


def test_a_lifted_property_judges_each_partition():
    """Under unfence-adds-to-isr a lossy crash in one partition and an unfence, a broker event,
    leave only that partition's ISR with a replica that lost data: the state property fails in
    that partition alone; the election both partitions take fails the step property in each."""
    cfg = make_config(**TWO, mutant="unfence-adds-to-isr")
    r, found = search(P.PartitionsModel(cfg, 2, symmetry=False), LIFTED)
    assert found == {"LeaderCandidateCompleteness": 4, "NoLostReplicaInIsr": 4, "ElectedLeaderWasCandidate": 5}
    by_name = {inv.name: inv for inv in REGISTRY}
    trace = r.counterexamples["NoLostReplicaInIsr"]
    last = trace.steps[-1][1]
    assert sorted(by_name["NoLostReplicaInIsr"].check(cfg, part) for part in last) == [False, True]
    trace = r.counterexamples["ElectedLeaderWasCandidate"]
    before = trace.steps[-2][1]
    (label, after) = trace.steps[-1]
    each = P.labels_of(label, 2)
    assert [by_name["ElectedLeaderWasCandidate"].check(cfg, a, mine, b) for a, mine, b in zip(before, each, after)] \
        == [False, False]


def _split_leaders(cfg):
    """A two-partition state where b1 leads one partition and another broker the other."""
    seen, level = set(), P.init_states(cfg, 2)
    while True:
        level = [t for s in level for _, t in P.successors(cfg, s) if t not in seen and not seen.add(t)]
        for s in level:
            leaders = [part.ctrl.partition.leader for part in s]
            if 1 in leaders and -1 not in leaders and len(set(leaders)) == 2:
                return s


def test_a_controlled_shutdown_of_a_broker_leading_one_partition_puts_it_in_controlled_shutdown_in_both():
    """Kafka's heartbeat manager tells a broker to shut down at once only if it leads no
    partition at all. b1 leads one partition and not the other: it enters controlled shutdown
    in both (the one it leads elects another leader, the other drops b1 from its ISR), stays
    running and unfenced; a fence, as one partition alone would take it, is not a step. (This
    raised LiftError before the controller's rule took `elsewhere`.)"""
    bounds = {"admin_elections": 1, "fences": 1, "isr_shrinks": 0, "records": 0}
    split = _split_leaders(make_config(bounds=bounds))
    cfg = make_config(bounds={**bounds, "clean_shutdowns": 1})
    steps = {label: t for label, t in P.successors(cfg, split) if label[0] == "controlled_shutdown"
             and 1 in P.labels_of(label, 2)[0][1:2]}
    assert len(steps) == 1
    (label, t), = steps.items()
    led = [part.ctrl.partition.leader == 1 for part in split].index(True)
    assert P.labels_of(label, 2)[1 - led] == ("controlled_shutdown", 1, LEADS_ELSEWHERE)
    for before, after in zip(split, t):
        assert after.ctrl.shutting_down == (1,) and 1 not in after.ctrl.fenced
        assert 1 not in after.ctrl.partition.isr and after.replicas[0].alive
    assert t[led].ctrl.partition.leader not in (1, -1) or not split[led].ctrl.partition.isr
    assert t[1 - led].ctrl.partition.leader == split[1 - led].ctrl.partition.leader
    assert P.step(cfg, split, label) == t
    assert "another partition" in P.describe(label)


def test_a_broker_leading_no_partition_is_fenced_in_both_and_stops():
    cfg = make_config(bounds={"clean_shutdowns": 1, "records": 0, "isr_shrinks": 0})
    s = P.init_states(cfg, 2)[0]
    t = dict(P.successors(cfg, s))[("controlled_shutdown", 2)]      # b1 leads both
    assert all(2 in part.ctrl.fenced and not part.ctrl.shutting_down and not part.replicas[1].alive for part in t)


def test_a_fence_of_a_leader_elects_any_candidate_in_each_partition_on_its_own():
    """Under any_candidate_elections a fence of the leader elects any candidate, and the choice
    is each partition's own: b1 leads both partitions with ISR (1, 2, 3), so its fence has
    2 x 2 outcomes (the elected broker was once part of the shared key, which left only the
    two where both partitions chose alike)."""
    cfg = make_config(bounds={"fences": 1, "records": 0, "isr_shrinks": 0},
                      flags={"any_candidate_elections": True})
    s = P.init_states(cfg, 2)[0]
    fences = {label: t for label, t in P.successors(cfg, s) if label[0] == "fence" and P.labels_of(label, 2)[0][1] == 1}
    assert sorted(tuple(part.ctrl.partition.leader for part in t) for t in fences.values()) == \
        [(2, 2), (2, 3), (3, 2), (3, 3)]
    for label, t in fences.items():
        assert P.step(cfg, s, label) == t
