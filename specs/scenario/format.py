"""The scenario format (docs/SCENARIOS.md): reading a file, checking every field and step
before anything runs (a malformed file is one line naming the file, the step, the problem,
and never half-runs), the start state, and one operation applied to the model.

Operations are checked against the action declarations (specs/actions/labels.py);
broker-side operations are the model's own actions, so their guard is checked when they are
applied: a replayed counterexample is a real run. Running a scenario against properties and
its expectations is an engine's work (verifier/engines/replay.py): this package knows no
property, so the names a file gives (check_invariants, expect_violation) are checked there.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any, Mapping, Optional

from specs import actions as A
from specs.actions import OpError
from specs.config import Config, ConfigError, config_from_dict
from specs.model import Model
from specs.scenario.checks import Unreadable, broker_id, op_values, read_data, surrogate
from specs.scenario.initial import broker_universe, initial_state
from specs.state import RECOVERY_NAMES, State


class NotEnabled(Exception):
    """A broker-side operation whose guard does not hold in this state."""


def apply_op(cfg, s: State, op: Mapping[str, Any]) -> tuple[State, Optional[str], tuple]:
    """Apply one scenario operation: (next state, error name or None, its label). Raises
    OpError for a malformed op and NotEnabled for a broker-side step that cannot run."""
    label = A.op_label(op)
    if A.OPS[label[0]].kind == A.DATA and not A.is_enabled(cfg, s, label):
        raise NotEnabled(f"{A.describe(label)} is not enabled in this state")
    new, error = A.step(cfg, s, label)
    return new, error, label


def enabled_probe(cfg, s: State, op: Mapping[str, Any]) -> tuple[bool, str]:
    """(whether the data-plane operation `op` may run in s, its description): an
    expect_not_enabled step."""
    label = A.op_label(op)
    return A.is_enabled(cfg, s, label), A.describe(label)


class ScenarioError(Exception):
    """A malformed scenario; str() is the one line to print."""


SET_FIELDS = ("isr", "elr", "last_known_elr", "fenced")
LIST_FIELDS = ("replicas", "adding_replicas", "removing_replicas")
INT_FIELDS = ("leader", "leader_epoch", "partition_epoch", "effective_min_isr")
STEP_NOTE_KEYS = {"notes", "comment", "derived"}
EXPECT_NOTE_KEYS = {"notes", "comment", "derived", "step"}     # carried by expect steps, not checked
STEP_KINDS = ("op", "expect", "expect_violation", "expect_not_enabled")


def actual_field(s: State, name: str) -> Any:
    p = s.ctrl.partition
    if name in ("isr", "elr", "last_known_elr", "replicas", "leader", "leader_epoch", "partition_epoch"):
        return getattr(p, name)
    if name == "adding_replicas":
        return p.adding_replicas
    if name == "removing_replicas":
        return p.removing_replicas
    if name == "fenced":
        return s.ctrl.fenced
    if name == "leader_recovery_state":
        return RECOVERY_NAMES[p.leader_recovery_state]
    if name == "effective_min_isr":
        return s.ctrl.effective_min_isr
    raise KeyError(name)


def _check_expect(where: str, expect: Any) -> dict:
    if not isinstance(expect, dict):
        raise ScenarioError(f"{where}: 'expect' must be an object")
    for key, value in expect.items():
        if key in SET_FIELDS + LIST_FIELDS:
            if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                raise ScenarioError(f"{where}: expect field '{key}' must be a list of broker ids")
            problem = next(filter(None, (broker_id(v, key) for v in value)), None)
            if problem:
                raise ScenarioError(f"{where}: expect {problem}")
        elif key in INT_FIELDS:
            if not isinstance(value, int) or isinstance(value, bool):
                raise ScenarioError(f"{where}: expect field '{key}' must be an integer")
            if key == "leader" and value != -1 and broker_id(value, key):     # -1: no leader
                raise ScenarioError(f"{where}: expect {broker_id(value, key)} (or -1: no leader)")
        elif key == "leader_recovery_state":
            if value not in RECOVERY_NAMES:
                raise ScenarioError(f"{where}: expect field 'leader_recovery_state' must be RECOVERED or RECOVERING")
        elif key == "error":
            if value is not None and not isinstance(value, str):
                raise ScenarioError(f"{where}: expect field 'error' must be an error name or null")
        elif key not in EXPECT_NOTE_KEYS:
            known = SET_FIELDS + LIST_FIELDS + INT_FIELDS + ("leader_recovery_state", "error")
            close = get_close_matches(key, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ScenarioError(f"{where}: unknown expect field '{key}'{hint}")
    return expect


def compare(expect: dict, s: State, last_error: Optional[str]) -> list[tuple[str, Any, Any]]:
    diffs = []
    for key, want in expect.items():
        if key == "error":
            if want != last_error:
                diffs.append((key, want, last_error))
            continue
        try:
            got = actual_field(s, key)
        except KeyError:
            continue   # other keys (derived, notes) are ignored
        if key in SET_FIELDS:
            if set(want) != set(got):
                diffs.append((key, sorted(want), sorted(got)))
        elif key in LIST_FIELDS:
            if list(want) != list(got):
                diffs.append((key, list(want), list(got)))
        elif want != got:
            diffs.append((key, want, got))
    return diffs


def _no_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    dup = next((k for k in keys if keys.count(k) > 1), None)
    if dup is not None:
        raise ValueError(f"key '{dup}' appears twice")
    return dict(pairs)


def load(path: str) -> dict:
    try:
        data = read_data(path, lambda raw: json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicate_keys),
                         "scenario")
    except Unreadable as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    problem = "a scenario must be a JSON object" if not isinstance(data, dict) else surrogate(data)
    if problem:
        raise ScenarioError(f"{path}: {problem}")
    return data


def _under_preset(config: dict, preset: str) -> dict:
    """The scenario's config under another preset: rule values that only restate the file's own
    preset are dropped (exported scenarios spell some out), so the new preset's rules apply;
    a rule the file sets away from its preset stays, being part of what the scenario says."""
    from specs.catalogue import PRESETS, preset_parts, preset_rules
    from specs.rules import RULE_FIELDS
    own = config.get("preset", "kafka")
    if not isinstance(own, str) or any(part not in PRESETS for part in preset_parts(own)):
        return dict(config, preset=preset)
    base = preset_rules(own)
    kept = {k: v for k, v in config.items() if not (k in RULE_FIELDS and v == getattr(base, k))}
    return dict(kept, preset=preset)


TOP_KEYS = {"name", "source", "notes", "kind", "config", "initial", "steps", "check_invariants"}


@dataclass(frozen=True)
class Scenario:
    """A scenario whose every field and step is well formed (`parse`)."""
    path: str
    name: str
    cfg: Config
    initial: State
    steps: tuple                      # the file's steps, each checked
    check_invariants: Any             # True, False or a list of property names
    named: tuple                      # (where, names) of every property name the file gives


def parse(data: dict, path: str = "<scenario>", *, preset: Optional[str] = None) -> Scenario:
    """Check a loaded scenario whole (ScenarioError names the first problem); under `preset`
    its config keeps only what it sets away from its own preset."""
    for key in ("config", "steps"):
        if key not in data:
            raise ScenarioError(f"{path}: missing top-level field '{key}'")
    for key in data:
        if key not in TOP_KEYS:
            raise ScenarioError(f"{path}: unknown top-level field '{key}' (known: {', '.join(sorted(TOP_KEYS))})")
    for key in ("name", "source", "notes", "kind"):
        if key in data and not isinstance(data[key], str):
            raise ScenarioError(f"{path}: '{key}' must be a string")
    if not isinstance(data["steps"], list):
        raise ScenarioError(f"{path}: 'steps' must be a list")
    config = dict(data["config"]) if isinstance(data["config"], dict) else data["config"]
    try:
        cfg = config_from_dict(config)          # the file's own config is checked, whatever --preset says
        if preset is not None:
            cfg = config_from_dict(_under_preset(config, preset))
    except ConfigError as exc:
        raise ScenarioError(f"{path}: config: {exc}") from None
    steps = data["steps"]
    initial = data.get("initial")
    try:
        cfg, s = initial_state(cfg, initial, broker_universe(cfg, initial if isinstance(initial, dict) else {},
                                                              steps))
    except OpError as exc:
        raise ScenarioError(f"{path}: initial: {exc}") from None
    checked = data.get("check_invariants")
    named = []
    if isinstance(checked, list):
        if not all(isinstance(n, str) for n in checked):
            raise ScenarioError(f"{path}: check_invariants must be true or a list of invariant names")
        named.append((f"{path}: check_invariants", tuple(checked)))
    elif checked not in (None, False, True):
        raise ScenarioError(f"{path}: check_invariants must be true, false or a list of invariant names")
    for i, st in enumerate(steps, 1):
        names = _check_step(f"{path}: step {i}", st)
        if names is not None:
            named.append((f"{path}: step {i}", names))
    return Scenario(path, data.get("name", Path(path).stem), cfg, s, tuple(steps), checked, tuple(named))


def _check_step(where: str, st: Any) -> Optional[tuple]:
    """One step's form; the property names an expect_violation gives (None for other steps)."""
    if not isinstance(st, dict):
        raise ScenarioError(f"{where}: a step must be an object")
    kinds = [k for k in STEP_KINDS if k in st]
    if len(kinds) != 1:
        raise ScenarioError(f"{where}: a step needs exactly one of {', '.join(repr(k) for k in STEP_KINDS)}")
    if "op" in st:
        _check_operation(f"{where}: ", operation(st))
    elif "expect" in st:
        _check_expect(where, st["expect"])
    elif "expect_not_enabled" in st:
        probe = st["expect_not_enabled"]
        if not isinstance(probe, dict):
            raise ScenarioError(f"{where}: expect_not_enabled must be an operation object")
        if _check_operation(f"{where}: expect_not_enabled: ", probe).kind != A.DATA:
            raise ScenarioError(f"{where}: expect_not_enabled takes a data-plane operation")
    else:
        names = expected_violations(st)
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise ScenarioError(f"{where}: expect_violation must name invariants (a name or a list of names)")
        return tuple(names)
    return None


def _check_operation(where: str, fields: dict):
    """An operation's form and values (ScenarioError prefixed by `where`); its declaration."""
    try:
        action = A.OPS[A.op_label(fields)[0]]
    except OpError as exc:
        raise ScenarioError(f"{where}{exc}") from None
    if op_values(fields):
        raise ScenarioError(f"{where}{op_values(fields)}")
    return action


def operation(st: dict) -> dict:
    """An op step's operation fields (its notes aside)."""
    return {k: v for k, v in st.items() if k not in STEP_NOTE_KEYS}


def expected_violations(st: dict):
    names = st["expect_violation"]
    return [names] if isinstance(names, str) else names


def run_operations(data: dict, path: str = "<scenario>", *, preset: Optional[str] = None):
    """Every operation of a valid scenario run through the model, its expectations aside (the
    conform engine compares each step with Kafka instead): (model, initial state, steps as
    (label, state after, error), why the run stops early or None). A data-plane step whose guard
    does not hold ends the run there. Raises ScenarioError if the file is malformed."""
    scenario = parse(data, path, preset=preset)          # the whole file is checked first
    cfg = scenario.cfg
    s = start = scenario.initial
    steps = []
    for i, st in enumerate(scenario.steps, 1):
        if "op" not in st:
            continue
        try:
            nxt, error, label = apply_op(cfg, s, operation(st))
        except NotEnabled as exc:
            return Model(cfg, symmetry=False), start, steps, f"step {i}: {exc}"
        except OpError as exc:
            raise ScenarioError(f"{path}: step {i}: {exc}") from None
        steps.append((label, nxt, error))
        s = nxt
    return Model(cfg, symmetry=False), start, steps, None
