"""The scenario interpreter (docs/SCENARIOS.md): run a scenario's steps through the model and
check its expectations.

Exit 0 when every expectation holds, 1 with expected vs actual at the first one that does
not, 2 when a file is malformed (one line naming the file, the step, the problem). Every
step is checked before any runs, so a malformed file never half-runs. Operations are
checked against the action declarations (specs/actions/labels.py); broker-side operations
are the model's own actions, so replay checks their guard: a replayed counterexample is a
real run.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import Any, Mapping, Optional

import invariants as I
from specs import actions as A
from specs.actions import OpError
from specs.config import ConfigError, config_from_dict
from specs.model import Model
from specs.scenario.checks import broker_id, op_values, surrogate, unreadable
from specs.scenario.initial import broker_universe, initial_state
from specs.state import RECOVERY_NAMES, State
from specs.trace import Trace


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


class ScenarioError(Exception):
    """A malformed scenario; str() is the one line to print."""


@dataclass
class Failure:
    step: int                     # 1-based index into the file's steps
    message: str
    diffs: list[tuple[str, Any, Any]] = field(default_factory=list)   # (field, expected, actual)


@dataclass
class Result:
    path: str
    name: str
    failure: Optional[Failure]
    trace: Trace
    violations: list[tuple[int, list[str]]] = field(default_factory=list)   # (step, names) seen

    @property
    def ok(self) -> bool:
        return self.failure is None


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
    problem = unreadable(path)
    if problem:
        raise ScenarioError(f"{path}: {problem}")
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh, object_pairs_hook=_no_duplicate_keys)
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except ValueError as exc:       # a duplicated key, or bytes that are not UTF-8
        raise ScenarioError(f"{path}: {exc}") from None
    except RecursionError:
        raise ScenarioError(f"{path}: nested too deeply to be a scenario") from None
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read it ({exc.strerror})") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: a scenario must be a JSON object")
    problem = surrogate(data)
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


def run_scenario(data: dict, path: str = "<scenario>", *, preset: Optional[str] = None,
                 force_invariants: bool = False) -> Result:
    """Run one parsed scenario. Raises ScenarioError if it is malformed."""
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
    if preset is not None and isinstance(config, dict):
        config = _under_preset(config, preset)
    try:
        cfg = config_from_dict(config)
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
    if isinstance(checked, list):
        if not all(isinstance(n, str) and n in I.BY_NAME for n in checked):
            raise ScenarioError(f"{path}: check_invariants must be true or a list of invariant names")
        watched = set(checked)
    elif checked is True or force_invariants:
        watched = set(I.BY_NAME)
    elif checked in (None, False):
        watched = set()
    else:
        raise ScenarioError(f"{path}: check_invariants must be true, false or a list of invariant names")
    if force_invariants:
        watched = set(I.BY_NAME)
    trace = Trace(Model(cfg, symmetry=False), s, engine="replay")
    # Validate every step before running any, so a malformed file never half-runs.
    for i, st in enumerate(steps, 1):
        where = f"{path}: step {i}"
        if not isinstance(st, dict):
            raise ScenarioError(f"{where}: a step must be an object")
        kinds = [k for k in STEP_KINDS if k in st]
        if len(kinds) != 1:
            raise ScenarioError(f"{where}: a step needs exactly one of {', '.join(repr(k) for k in STEP_KINDS)}")
        if "op" in st:
            fields = {k: v for k, v in st.items() if k not in STEP_NOTE_KEYS}
            try:
                A.op_label(fields)
            except OpError as exc:
                raise ScenarioError(f"{where}: {exc}") from None
            if op_values(fields):
                raise ScenarioError(f"{where}: {op_values(fields)}")
        elif "expect" in st:
            _check_expect(where, st["expect"])
        elif "expect_not_enabled" in st:
            probe = st["expect_not_enabled"]
            if not isinstance(probe, dict):
                raise ScenarioError(f"{where}: expect_not_enabled must be an operation object")
            try:
                if A.OPS[A.op_label(probe)[0]].kind != A.DATA:
                    raise ScenarioError(f"{where}: expect_not_enabled takes a data-plane operation")
            except OpError as exc:
                raise ScenarioError(f"{where}: expect_not_enabled: {exc}") from None
            if op_values(probe):
                raise ScenarioError(f"{where}: expect_not_enabled: {op_values(probe)}")
        else:
            names = st["expect_violation"]
            if isinstance(names, str):
                names = [names]
            if (not isinstance(names, list) or not names
                    or not all(isinstance(n, str) and n in I.BY_NAME for n in names)):
                raise ScenarioError(f"{where}: expect_violation must name invariants from: {', '.join(I.BY_NAME)}")
    name = data.get("name", Path(path).stem)
    last_error: Optional[str] = None
    violations: list[tuple[int, list[str]]] = []
    current: list[str] = I.state_violations(cfg, s)
    pending: Optional[tuple[int, list[str]]] = None   # violations not yet accounted for

    def unexpected(pending):
        if pending:
            step, names = pending
            names = [n for n in names if n in watched]
            if names:
                return Failure(step, f"invariant violated after step {step}: {', '.join(names)}")
        return None

    for i, st in enumerate(steps, 1):
        if "op" in st:
            failure = unexpected(pending)
            if failure:
                return Result(path, name, failure, trace, violations)
            op = {k: v for k, v in st.items() if k not in STEP_NOTE_KEYS}
            try:
                nxt, last_error, label = apply_op(cfg, s, op)
            except NotEnabled as exc:
                return Result(path, name, Failure(i, str(exc)), trace, violations)
            except OpError as exc:
                raise ScenarioError(f"{path}: step {i}: {exc}") from None
            current = I.state_violations(cfg, nxt) + I.step_violations(cfg, s, label, nxt)
            trace.steps.append((label, nxt))
            s = nxt
            pending = (i, current) if current else None
            if current:
                violations.append((i, current))
        elif "expect" in st:
            diffs = compare(st["expect"], s, last_error)
            if diffs:
                return Result(path, name, Failure(i, "expectation does not hold", diffs), trace, violations)
        elif "expect_not_enabled" in st:
            label = A.op_label(st["expect_not_enabled"])
            if A.is_enabled(cfg, s, label):
                return Result(path, name, Failure(i, f"{A.describe(label)} is enabled, expected it not to be"),
                              trace, violations)
        else:
            names = st["expect_violation"]
            names = [names] if isinstance(names, str) else names
            missing = [n for n in names if n not in current]
            if missing:
                return Result(path, name, Failure(i, f"expected violation of {', '.join(missing)} did not occur"
                                                  + (f" (violated: {', '.join(current)})" if current else "")),
                              trace, violations)
            trace.violated = list(names)
            if pending:
                rest = [n for n in pending[1] if n not in names]
                pending = (pending[0], rest) if rest else None
    failure = unexpected(pending)
    return Result(path, name, failure, trace, violations)


def run_file(path: str, **kw) -> Result:
    return run_scenario(load(path), path, **kw)


def run_operations(data: dict, path: str = "<scenario>", *, preset: Optional[str] = None):
    """Every operation of a valid scenario run through the model, its expectations aside (the
    conform engine compares each step with Kafka instead): (model, initial state, steps as
    (label, state after, error), why the run stops early or None). A data-plane step whose guard
    does not hold ends the run there. Raises ScenarioError if the file is malformed."""
    run_scenario(data, path, preset=preset)          # the whole file is checked first
    config = dict(data["config"])
    if preset is not None:
        config = _under_preset(config, preset)
    cfg = config_from_dict(config)
    initial = data.get("initial")
    cfg, s = initial_state(cfg, initial, broker_universe(cfg, initial if isinstance(initial, dict) else {},
                                                          data["steps"]))
    start, steps = s, []
    for i, st in enumerate(data["steps"], 1):
        if "op" not in st:
            continue
        try:
            nxt, error, label = apply_op(cfg, s, {k: v for k, v in st.items() if k not in STEP_NOTE_KEYS})
        except NotEnabled as exc:
            return Model(cfg, symmetry=False), start, steps, f"step {i}: {exc}"
        steps.append((label, nxt, error))
        s = nxt
    return Model(cfg, symmetry=False), start, steps, None
