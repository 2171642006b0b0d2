"""Replay scenarios (docs/SCENARIOS.md): start states, the interpreter, and export of runs."""
from specs.scenario.export import initial_block, to_scenario
from specs.scenario.initial import broker_universe, initial_state
from specs.scenario.run import (Failure, NotEnabled, Result, ScenarioError, apply_op, load, run_file,
                                run_operations, run_scenario)

__all__ = ["initial_block", "to_scenario", "broker_universe", "initial_state", "Failure", "NotEnabled", "Result",
           "ScenarioError", "apply_op", "load", "run_file", "run_operations", "run_scenario"]
