"""The protocol model: the only package that knows Kafka.

Engines, writers and the command line use what this module exports and nothing deeper:
- `Model(cfg)`: initial states, successors, steps, properties and display hooks;
- `Trace`: a run of the model, as engines report it;
- configs: `make_config`, `Config`, `ConfigError`, `with_mutant`, `with_bounds`, and the
  catalogue (`PRESETS`, `MUTANTS`) and rule fields (`RULE_FIELDS`, `broker_side_rules`) they are
  built from;
- scenarios: `load_scenario`, `parse_scenario`, `run_operations`, `ScenarioError`, and
  `unreadable` (an input file that is not a regular file: a FIFO would hang its reader), which
  config files use too. Running one against properties is the replay engine's.
- the user's key (`key`, `key_path`, `KeyError_`), which signs checkpoints and the compiled
  kernel's cache entries.
The z3 engine's seam is `specs.symbolic`.
"""
from specs.catalogue import ALIASES, MUTANTS, NEWEST_RELEASE, PRESETS, RELEASES, Release, release
from specs.config import (BOUND_NAMES, BUDGETS, Bounds, Config, ConfigError, config_from_dict, config_label,
                          config_summary, config_to_dict, deep_bounds, explicit_flags, make_config, mutant_config,
                          unknown, with_bounds, with_mutant)
from specs.model import Model
from specs.partitions import Partitions, PartitionsModel, lift_property
from specs.partitions import labels_of as partition_labels
from specs.rules import RULE_FIELDS, Rules, broker_side_rules, ignored_by_z3, outside_z3, refused_by_z3, rule_doc
from specs.scenario import ScenarioError, run_operations
from specs.scenario import load as load_scenario
from specs.scenario import parse as parse_scenario
from specs.scenario.checks import unreadable
from specs.trace import Trace
from specs.userkey import KeyError_, key, key_path

__all__ = ["Partitions", "PartitionsModel", "partition_labels", "lift_property", "ALIASES", "MUTANTS", "NEWEST_RELEASE", "PRESETS", "RELEASES", "Release", "release", "BOUND_NAMES", "BUDGETS", "Bounds", "Config", "ConfigError", "config_from_dict",
           "config_label", "config_summary", "config_to_dict", "deep_bounds", "explicit_flags", "make_config", "mutant_config", "unknown",
           "with_bounds",
           "with_mutant", "Model", "RULE_FIELDS", "Rules", "broker_side_rules", "ignored_by_z3", "outside_z3", "refused_by_z3", "rule_doc",
           "ScenarioError",
           "run_operations", "load_scenario", "parse_scenario", "unreadable", "Trace", "KeyError_", "key", "key_path"]
