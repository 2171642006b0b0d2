"""The protocol model: the only package that knows Kafka.

The seam every engine uses: `init_states(cfg)`, `successors(cfg, state)` yielding
(label, next state), `step(cfg, state, label)`, and for replay `apply_op`.
"""
from specs.actions import (ACTION_NAMES, ACTIONS, describe, init_state, init_states, label_to_op, step,
                           successors)
from specs.catalogue import MUTANTS, PRESETS
from specs.config import (BUDGETS, Bounds, Config, ConfigError, config_from_dict, config_to_dict, make_config,
                          with_bounds)
from specs.rules import Rules

__all__ = ["ACTION_NAMES", "ACTIONS", "describe", "init_state", "init_states", "label_to_op", "step",
           "successors", "BUDGETS", "PRESETS", "Bounds", "Config", "ConfigError", "Rules",
           "config_from_dict", "config_to_dict", "make_config", "with_bounds", "MUTANTS"]
