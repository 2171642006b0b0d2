"""Replay scenarios (docs/SCENARIOS.md): the file format and its checks, start states, one
operation applied to the model, and export of runs. Running a scenario against properties is
the replay engine's (verifier/engines/replay.py)."""
from specs.scenario.export import expectation, initial_block, to_scenario
from specs.scenario.format import (NotEnabled, Scenario, ScenarioError, apply_op, compare, enabled_probe, expected_violations, load,
                                   operation, parse, run_operations)
from specs.scenario.initial import broker_universe, initial_state

__all__ = ["expectation", "initial_block", "to_scenario", "broker_universe", "initial_state", "NotEnabled", "Scenario",
           "ScenarioError", "apply_op", "compare", "enabled_probe", "expected_violations", "load", "operation", "parse",
           "run_operations"]
