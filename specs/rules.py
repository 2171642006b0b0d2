"""Every protocol variation as a field of one frozen value, `Rules`.

The fields, their defaults and what each says are data: the `[rules.*]` tables of
specs/catalogue.toml, checked here when the module loads. A preset is a named set of field
values and a mutant a named replacement of a few of them (specs/catalogue.py). Model code reads
these fields and nothing else: there is no other switch, so a rule changed here changes what
every engine checks.

Each rule says where it lives (`source`: the Kafka class or the KIP) and how the z3 engine
sees it (`z3`):
- SHARED: read by the controller rules (specs/pipeline.py, specs/controller.py), which the
  concrete model and the z3 encoding both run;
- BROKER: read by the broker side, which the z3 encoding abstracts by hand
  (specs/symbolic/brokers.py), so the concrete and the symbolic broker code both read it;
- an `Outside` reason: deliberately not in the z3 encoding; `prove` refuses a config that
  changes it (unless it matters only inside an action the encoding lacks), since a verdict
  would be about a model the user did not ask for.
docs/protocol.md ("Rule switches") states each rule in words.
"""
from __future__ import annotations

import tomllib
from dataclasses import Field, field, fields, make_dataclass
from pathlib import Path
from typing import Any, NamedTuple, Optional

SHARED = "shared"
BROKER = "broker"
RECOVERY_STRATEGIES = ("aggressive", "balanced", "none")
CATALOGUE = tomllib.loads(Path(__file__).with_name("catalogue.toml").read_text(encoding="utf-8"))


class Outside(NamedTuple):
    """Why a rule is not in the z3 encoding. `only_in`: the rule matters only inside an action
    the encoding does not have, so a proof still covers every run without that action."""
    reason: str
    only_in: Optional[str] = None


def _rule(name: str, spec: dict) -> tuple:
    """One field of Rules from its table in catalogue.toml, checked."""
    known = {"default", "kind", "z3", "outside", "only_in", "source", "doc", "side"}
    unknown = set(spec) - known
    if unknown or not {"default", "kind", "z3", "source", "doc"} <= set(spec):
        raise ValueError(f"catalogue.toml: rule {name}: fields {sorted(unknown) or 'missing'}")
    if (spec["kind"] not in ("protocol", "abstraction", "fault") or spec["z3"] not in (SHARED, BROKER, "outside")
            or spec.get("side", "controller") not in ("broker", "controller")):
        raise ValueError(f"catalogue.toml: rule {name}: unknown kind or z3 value")
    z3: Any = spec["z3"]
    if z3 == "outside":
        z3 = Outside(spec["outside"], spec.get("only_in"))
    default = None if spec["default"] == "unset" else spec["default"]
    kind = str if name == "unclean_recovery_strategy" else bool
    if default is not None and not isinstance(default, kind):
        raise ValueError(f"catalogue.toml: rule {name}: default {default!r} is not a {kind.__name__}")
    meta = {"doc": spec["doc"], "source": spec["source"], "z3": z3, "kind": spec["kind"],
            "side": spec.get("side", "controller")}
    return name, Optional[kind] if kind is str else kind, field(default=default, metadata=meta)


Rules = make_dataclass("Rules", [_rule(n, spec) for n, spec in CATALOGUE["rules"].items()], frozen=True)
Rules.__module__ = __name__           # so that pickle (Spark ships configs) finds the class
Rules.__doc__ = "The rules the model runs by. Defaults are Apache Kafka 4.4.0, the newest release (docs/protocol.md)."

RULE_FIELDS: dict[str, Field] = {f.name: f for f in fields(Rules)}
DEFAULT_RULES = Rules()


def rule_doc(name: str) -> str:
    return RULE_FIELDS[name].metadata["doc"]


def broker_side_rules() -> tuple[str, ...]:
    """The rules the brokers run (`side = "broker"` in catalogue.toml): the ones only a real
    broker, not the controller classes conform drives, can tell apart."""
    return tuple(n for n, f in RULE_FIELDS.items() if f.metadata["side"] == "broker")


def outside_z3(name: str) -> Optional[str]:
    """Why the z3 encoding leaves this rule out, or None if it encodes it."""
    z3 = RULE_FIELDS[name].metadata["z3"]
    return z3.reason if isinstance(z3, Outside) else None


def ignored_by_z3(name: str) -> Optional[str]:
    """Why a z3 verdict would not depend on this rule at all (only an action the encoding lacks
    reads it), or None: a proof "with" it set would be the proof without it."""
    z3 = RULE_FIELDS[name].metadata["z3"] if name in RULE_FIELDS else None
    return z3.reason if isinstance(z3, Outside) and z3.only_in is not None else None


def changed(rules, base=DEFAULT_RULES) -> dict[str, Any]:
    """The fields where `rules` differs from `base`, in declaration order."""
    return {n: getattr(rules, n) for n in RULE_FIELDS if getattr(rules, n) != getattr(base, n)}


def refused_by_z3(rules) -> list[str]:
    """The rules whose value here makes a z3 verdict meaningless: changed from Kafka's, and
    outside the encoding in a way a proof cannot ignore (not merely inside an absent action)."""
    out = []
    for name, value in changed(rules).items():
        z3 = RULE_FIELDS[name].metadata["z3"]
        if isinstance(z3, Outside) and z3.only_in is None:
            out.append(f"{name}={value} ({z3.reason})")
    return out


def check_value(name: str, value: Any) -> Optional[str]:
    """None if `value` is a valid value of rule `name`, else what is wrong (one line)."""
    if name not in RULE_FIELDS:
        return f"unknown rule '{name}'"
    if name == "unclean_recovery_strategy":
        if value is None or value in RECOVERY_STRATEGIES:
            return None
        return f"unclean_recovery_strategy must be one of {', '.join(RECOVERY_STRATEGIES)}, got {value!r}"
    if not isinstance(value, bool):
        return f"rule '{name}' must be true or false, got {value!r}"
    return None
