"""The exhaustive checker over the model: shortest counterexamples, determinism, replay,
budgets, deadlocks, --continue, coverage and the state graph."""
import functools
import json

import pytest

import invariants as I
from specs import Model, make_config, with_bounds
from verifier.core.result import COMPLETE, DEADLOCK, STOPPED, VIOLATION
from verifier.core.settings import Limits, Options, Settings
from verifier.engines import bfs
from verifier.core.fingerprint import Fingerprinter, fingerprint
from tests.bind import run_scenario

# one test process: the runs below that several tests read are made once (_shared)
pytestmark = pytest.mark.xdist_group("bfs")


def labels(trace):
    return [lab for lab, _ in trace.steps]


@functools.lru_cache(maxsize=None)
def _shared(preset: str, bounds: tuple, invariants: tuple, keep_going: bool):
    """A run that more than one test reads, made once per test process (results are only read):
    `invariants` are names, () for every property."""
    props = [I.BY_NAME[n] for n in invariants] if invariants else I.REGISTRY
    return bfs.run(Model(make_config(preset, bounds=dict(bounds))), props,
                   Settings(options=Options(keep_going=keep_going)))


@pytest.fixture(scope="module")
def kafka_small():
    return bfs.run(Model(with_bounds(make_config("kafka"), isr_shrinks=0)), I.REGISTRY)


def test_kafka_small_bounds_complete_without_violation(kafka_small):
    assert kafka_small.status == COMPLETE and kafka_small.explored_all
    assert kafka_small.counterexample is None
    assert kafka_small.distinct_states > 1000
    assert sum(kafka_small.states_per_level) == kafka_small.distinct_states
    assert len(kafka_small.states_per_level) == kafka_small.depth + 1
    # every new state was reached by exactly one counted transition (the initial one aside)
    assert sum(kafka_small.taken.values()) == kafka_small.distinct_states - 1
    assert kafka_small.transitions == sum(kafka_small.enabled.values())


def test_same_config_same_counts_and_same_counterexample(kafka_small):
    again = bfs.run(Model(with_bounds(make_config("kafka"), isr_shrinks=0)), I.REGISTRY)
    assert (again.distinct_states, again.transitions, again.depth, again.states_per_level, again.enabled) == \
        (kafka_small.distinct_states, kafka_small.transitions, kafka_small.depth, kafka_small.states_per_level,
         kafka_small.enabled)
    runs = [bfs.run(Model(make_config("pre-kip-903")), I.REGISTRY) for _ in range(2)]
    assert runs[0].counterexample is not None
    assert labels(runs[0].counterexample) == labels(runs[1].counterexample)
    assert runs[0].counterexample.violated == runs[1].counterexample.violated
    assert runs[0].distinct_states == runs[1].distinct_states


@pytest.mark.parametrize("preset,invariant,length", [
    ("pre-kip-966", "ConsumerHwmNeverBackward", 7),
    ("pre-kip-966", "NoCommittedRecordLostGlobally", 10),
    ("pre-kip-903", "NoLostReplicaInIsr", 9),
])
def test_old_protocols_are_caught_and_the_counterexample_replays(preset, invariant, length):
    first = _shared(preset, (), (invariant,), False)
    assert first.status == VIOLATION and first.counterexample.violated == [invariant]
    assert len(first.counterexample) == length
    scenario = json.loads(json.dumps(first.counterexample.model.scenario(first.counterexample, "cx", "test")))
    result = run_scenario(scenario)
    assert result.ok, result.failure
    assert result.trace.final == first.counterexample.final
    # the same old-protocol trace is harmless under the current protocol
    scenario["config"]["preset"] = "kafka"
    scenario["config"]["elr"] = True
    scenario["config"].pop("broker_epoch_check", None)
    assert not run_scenario(scenario).ok


def test_the_shortest_counterexample_is_shortest():
    """No trace of fewer steps violates: the BFS stopped at the first level with a violation."""
    cfg = make_config("pre-kip-966")
    inv = I.BY_NAME["NoCommittedRecordLostGlobally"]
    found = _shared("pre-kip-966", (), ("NoCommittedRecordLostGlobally",), False)     # also a case above
    shorter = bfs.run(Model(cfg), [inv], Settings(limits=Limits(max_depth=len(found.counterexample) - 1)))
    assert shorter.status == STOPPED and not shorter.counterexamples


def test_continue_reports_the_shortest_trace_of_every_invariant():
    cfg = make_config("pre-kip-966", bounds={"isr_shrinks": 1})
    every = _shared("pre-kip-966", (("isr_shrinks", 1),), (), True)        # the coverage test's run too
    assert every.status == VIOLATION and every.explored_all
    assert {"LeaderCandidateCompleteness", "ConsumerHwmNeverBackward", "LeaderCompleteness",
            "NoCommittedRecordLostGlobally"} <= set(every.counterexamples)
    for name, trace in every.counterexamples.items():
        alone = bfs.run(Model(cfg), [I.BY_NAME[name]])
        assert len(trace) == len(alone.counterexample), name
    assert every.counterexample is every.counterexamples["LeaderCandidateCompleteness"]


def test_budgets_stop_early_with_exit_status_stopped():
    model = Model(make_config("kafka"))
    r = bfs.run(model, I.REGISTRY, Settings(limits=Limits(max_states=500)))
    assert r.status == STOPPED and "max states" in r.stop_reason and r.distinct_states == 500
    r = bfs.run(model, I.REGISTRY, Settings(limits=Limits(max_depth=3)))
    assert r.status == STOPPED and r.depth == 3 and not r.explored_all


# ---------------------------------------------------------------- deadlock

class Chain:
    """A toy model: 0 -> 1 -> 2, and 2 has no action at all; 'budget' caps how far it may go."""

    def __init__(self, budget=None):
        self.cfg = None
        self.budget = budget

    canonical = None
    action_names = ("next",)
    properties = ()

    def init_states(self):
        return [(0,)]

    def successors(self, s, unbounded=False):
        if s[0] < 2 and (unbounded or self.budget is None or s[0] < self.budget):
            yield ("next",), (s[0] + 1,)

    def step(self, s, label):
        return (s[0] + 1,)

    def stuck(self, s):
        return next(self.successors(s, unbounded=True), None) is None

    def describe(self, label):
        return label[0]


def test_a_state_where_nothing_can_happen_is_a_deadlock():
    r = bfs.run(Chain(), [])
    assert r.status == VIOLATION and DEADLOCK in r.counterexamples
    assert len(r.counterexample) == 2
    quiet = bfs.run(Chain(), [], Settings(options=Options(check_deadlock=False)))
    assert quiet.status == COMPLETE and quiet.terminal_states == 1


def test_a_state_stopped_only_by_a_budget_is_terminal_not_a_deadlock(kafka_small):
    r = bfs.run(Chain(budget=1), [])
    assert r.status == COMPLETE and r.terminal_states == 1
    kafka = kafka_small         # kafka at isr_shrinks=0: budgets stop its runs in terminal states
    assert kafka.status == COMPLETE and kafka.terminal_states > 0 and not kafka.counterexamples


# ---------------------------------------------------------------- graph, coverage, fingerprints

def test_graph_has_every_state_and_every_transition():
    cfg = with_bounds(make_config("kafka"), isr_shrinks=0, lossy_crashes=0)
    r = bfs.run(Model(cfg), I.REGISTRY, Settings(options=Options(graph=True)))
    nodes, edges = r.graph
    assert len(nodes) == r.distinct_states
    assert len(edges) == r.transitions
    assert sum(1 for _, attrs in nodes if attrs["init"] == "true") == 1


def test_coverage_tells_off_from_never_taken():
    from verifier.reports.summary import coverage
    model = Model(make_config("pre-kip-966", bounds={"isr_shrinks": 1}))
    r = _shared("pre-kip-966", (("isr_shrinks", 1),), (), True)
    table, warnings = coverage(model, r)
    by_name = {row["action"]: row for row in table}
    assert by_name["reassign"]["status"] == "off by config"
    # admin elections are at bound 0: the config rules them out, so they are no warning
    # (tests/verifier/engines/test_recovery_profile.py has an action that is on and never enabled)
    assert by_name["elect"]["status"] == "off by config"
    assert not any("elect" in w for w in warnings)
    assert by_name["produce"]["status"] == "ok" and by_name["produce"]["new_states"] > 0
    assert all(row["enabled"] >= row["new_states"] for row in table)


def test_cached_fingerprints_equal_plain_ones_and_separate_distinct_states():
    from tests.verifier.core.test_codec import _walk
    fpr, seen = Fingerprinter(), set()
    for s, t in _walk(make_config("kafka"), 5000):
        assert fpr(t) == fingerprint(t)
        seen |= {s, t}
    assert len({fingerprint(s) for s in seen}) == len(seen) > 5000
