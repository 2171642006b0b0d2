"""The model as engines see it (stateright's `Model`): initial states, successors, the
action categories, and the hooks that let engines, studies and writers show and measure a
run without knowing anything of Kafka.

Engines hold a `Model` and the properties the caller hands them, and nothing else; every
engine (BFS, simulation, Hypothesis, Spark, replay, liveness, conform) runs the same
transition function through here. The properties live in invariants/, which imports this
package and never the other way round: the command line binds the two.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

from specs import actions as A
from specs import display as D
from specs import facts as F
from specs import projection as P
from specs import symmetry as S
from specs.config import Config
from specs.state import VALUE_TYPES


class Model:
    def __init__(self, cfg: Config, symmetry: bool = True):
        self.cfg = cfg
        self.symmetry_note = S.applicability(cfg)
        self.symmetric = symmetry and self.symmetry_note is None
        self.canonical: Optional[Callable] = S.canonicalizer(cfg) if self.symmetric else None
        self.group_size = S.group_size(cfg) if self.symmetric else 1

    action_names = A.ACTION_NAMES
    value_types = VALUE_TYPES        # the NamedTuple types a state is made of (files hold them as data)
    action_docs = {a.name: " ".join(a.doc.split("\n\n")[0].split()) for a in A.ACTIONS}   # its first paragraph, whole

    # ---------------------------------------------------------------- the state space
    def init_states(self) -> list:
        return A.init_states(self.cfg)

    def successors(self, state, unbounded: bool = False) -> Iterator[tuple[tuple, Any]]:
        """Every enabled step within the bounds; `unbounded` ignores budgets and epoch bounds
        (a real cluster takes its own steps, an ISR shrink say, whatever the budget)."""
        return A.successors(self.cfg, state, unbounded)

    def action_successors(self, state, name: str, unbounded: bool = False) -> Iterator[tuple[tuple, Any]]:
        """The enabled steps of one action (what a Hypothesis rule chooses among)."""
        return A.action_successors(self.cfg, state, name, unbounded)

    def step(self, state, label: tuple):
        """The state after `label` (no guard checked): traces are rebuilt with it."""
        return A.step(self.cfg, state, label)[0]

    def apply(self, state, label: tuple):
        """(the state after `label`, the error the controller answered or None): what the
        conform engine compares with Kafka's answer. No guard is checked here."""
        return A.step(self.cfg, state, label)

    def allows(self, state, label: tuple) -> bool:
        """Whether `label` may be taken in `state`: its guard holds (budgets and bounds aside);
        a raw controller request (a scenario's register, alter_partition or unmodelled_request)
        always may (an unmodelled request fails a state it cannot be sent from: NotEnabled)."""
        if label[0] not in A.ACTIONS_BY_NAME:
            return label[0] in A.OPS
        return A.is_enabled(self.cfg, state, label)

    def stuck(self, state) -> bool:
        """A deadlock: no action changes the state even with unlimited budgets. A state that
        has no successor only because a budget or epoch bound is spent is terminal, not stuck."""
        return next(A.successors(self.cfg, state, unbounded=True), None) is None

    def off_by_config(self) -> dict[str, str]:
        """Action -> why no run of this config can enable it (coverage says "off by config")."""
        return A.off_by_config(self.cfg)

    def budget_of(self, action: str) -> Optional[str]:
        """The bound that counts the action's steps (a fault's budget), or None."""
        return next((a.fixed_budget for a in A.ACTIONS if a.name == action), None)

    def enable_hint(self, action: str) -> str:
        """What would enable an action that is on but was never enabled ("" if nothing known)."""
        return A.enable_hints(self.cfg).get(action, "")

    # ---------------------------------------------------------------- action categories
    @property
    def fault_targets(self) -> tuple:
        """What a fault can hit (the brokers)."""
        return self.cfg.brokers

    @staticmethod
    def fault_target(label: tuple) -> Optional[Any]:
        """The broker a fault step hits, or None if the step is not a fault."""
        return label[1] if label[0] in A.FAULTS else None

    fair_actions = A.FAIR                 # taken on their own by a healthy cluster (weak fairness)

    def enabled_actions(self, state, unbounded: bool = False) -> set:
        """The actions with a step that changes `state`; `unbounded` ignores budgets and epoch
        bounds (liveness tells a fair action the model disabled from one a bound blocked)."""
        return {label[0] for label, _ in A.successors(self.cfg, state, unbounded=unbounded)}

    # ---------------------------------------------------------------- what studies measure
    def is_fault(self, state, label: tuple) -> bool:
        """A fault hitting a running broker (the fence of a stopped broker is its session timeout)."""
        return F.hits_running_broker(self.cfg, state, self.fault_target(label))

    def heals(self, state, label: tuple) -> bool:
        """A step a cluster takes on its own: no fault, no lagging follower, no operator."""
        name = label[0]
        return name not in A.OPERATOR and name not in A.DISTURBANCES and not self.is_fault(state, label)

    def fault_budget(self) -> int:
        """How many faults this config's bounds allow in all."""
        return sum(getattr(self.cfg.bounds, b, 0) for b in A.FAULT_BUDGETS)

    def live_leader(self, state) -> bool:
        """The partition has a leader and that broker's process runs."""
        return F.running_leader(self.cfg, state) is not None

    def lost_records(self, state) -> set:
        """Acknowledged records a reader can no longer get (specs/facts.py)."""
        return F.lost_records(self.cfg, state)

    def acknowledged(self, state) -> int:
        return len(state.hist.acked)

    def unclean_elections(self, state) -> int:
        return state.hist.unclean_elections

    def within_tolerance(self, state) -> bool:
        """KIP-966's durability promise still applies in `state`."""
        return F.within_tolerance(self.cfg, state)

    @staticmethod
    def finding(trace) -> str:
        """The docs/FINDINGS.md entry a counterexample is an instance of, with the command that
        shows it, or that it is none (specs/findings.py)."""
        from specs.findings import named
        return named(trace)

    # ---------------------------------------------------------------- Kafka's side (the conform engine)
    def kafka_start(self, state) -> dict:
        """The oracle's starting point for a run from `state` (specs/projection.py)."""
        return P.initial(self.cfg, state)

    def kafka_request(self, state, label: tuple, after) -> dict:
        """The controller request (or periodic task, or nothing) that the step causes."""
        return P.project(self.cfg, state, label, after)

    @staticmethod
    def kafka_view(state, error) -> dict:
        """The controller's state and answer, in the oracle's report vocabulary."""
        return P.view(state, error)

    kafka_set_fields = P.SET_FIELDS       # view fields compared as sets

    @staticmethod
    def kafka_lacks(label: tuple):
        """Why no Kafka release can take this step (None: a release can)."""
        return P.unsupported(label)

    def impossible_start(self, state):
        """Why conform cannot start a Kafka cluster of this config in `state` (None: it can)."""
        return P.impossible_start(self.cfg, state)

    def outside_release(self, preset: str):
        """Why this config is not one Kafka's release `preset` can run (None: it is)."""
        return P.outside_release(self.cfg, preset)

    # ---------------------------------------------------------------- display hooks
    @staticmethod
    def describe(label: tuple) -> str:
        return A.describe(label)

    def view(self, state) -> dict[str, str]:
        """The state's fields as short strings (a counterexample table shows what changed)."""
        return D.view(self.cfg, state)

    def timeline(self, state) -> dict[str, dict[str, str]]:
        """Per broker: role, ISR/ELR membership, status, log, HWM (report.html's timeline)."""
        return D.timeline(self.cfg, state)

    def explain_change(self, part: dict, brokers: dict, min_isr: int, unclean: bool, batch: list,
                       after: dict) -> tuple:
        """A metadata log's partition change (validate-log): the controller event of this
        model's rules that writes `after` from `part`, or None, and what each event it tried
        writes (specs/metadata.py)."""
        from specs.metadata import explain
        return explain(self.cfg, part, brokers, min_isr, unclean, batch, after)

    def partition_cells(self, state) -> dict[str, str]:
        """The partition's columns of report.html's timeline: leader, epochs, ISR, ELR, ..."""
        return D.partition(self.cfg, state)

    def headline(self, state) -> str:
        """The partition in one line (a failure the property cannot explain is shown so)."""
        return D.headline(self.cfg, state)

    start_fields = D.START_FIELDS

    @property
    def itf_vars(self) -> tuple:
        return D.ITF_VARS + (("view",) if self.cfg.bounds.metadata_lag else ())

    def itf(self, state) -> dict:
        return D.itf_state(state, held=self.cfg.bounds.metadata_lag > 0)

    @staticmethod
    def expectation(state) -> dict:
        """The `expect` block a replay scenario checks `state` with."""
        from specs.scenario import expectation
        return expectation(state)

    @staticmethod
    def scenario(trace, name: str, source: str) -> dict:
        """The trace as a replay scenario."""
        from specs.scenario import to_scenario
        return to_scenario(trace, name, source)
