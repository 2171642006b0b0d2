"""The catalogue: presets (named rule sets) and mutants (named replacements of rules).

A preset says which protocol the model is: a Kafka release, the KIP-966 text, or an older
protocol. A mutant breaks one rule of the real protocol on purpose; the checker must kill
every one, or the invariants do not watch that rule. Both are data (the `[presets.*]` and
`[mutants.*]` tables of specs/catalogue.toml) over the fields of `specs.rules.Rules`, checked
when this module is imported: an unknown field, a value of the wrong type or a mutant that
breaks nothing fails at once, never silently at run time.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, NamedTuple, Optional

from specs.rules import CATALOGUE, DEFAULT_RULES, Rules, check_value, outside_z3


class Preset(NamedTuple):
    name: str
    doc: str
    changes: Mapping[str, Any]     # rule fields that differ from the defaults (Kafka 4.4.0)
    bounds: Mapping[str, int] = {}  # bounds that differ from the defaults (a profile: rules plus bounds)


class Mutant(NamedTuple):
    name: str
    description: str
    changes: Mapping[str, Any]     # the rule fields it replaces
    needs: Optional[str] = None    # the preset in which the broken rule matters (None: any)
    liveness: bool = False         # only a liveness check can see it

    def outside_z3(self) -> list[str]:
        """The reasons the z3 encoding cannot see this mutant (empty: it can)."""
        return [r for r in (outside_z3(n) for n in self.changes) if r]


def _checked(entry):
    if not entry.changes and (isinstance(entry, Mutant) or not entry.bounds and not entry.name.startswith("kafka")):
        raise ValueError(f"catalogue entry {entry.name!r} changes no rule")   # a release may equal the newest
    for name, value in entry.changes.items():
        problem = check_value(name, value)
        if problem:
            raise ValueError(f"catalogue entry {entry.name!r}: {problem}")
        if isinstance(entry, Mutant) and getattr(DEFAULT_RULES, name) == value:
            raise ValueError(f"mutant {entry.name!r}: {name}={value!r} is Kafka's rule, not a break")
    return entry


def _catalogue(*entries) -> dict:
    out = {}
    for e in entries:
        if e.name in out:
            raise ValueError(f"catalogue entry {e.name!r} twice")
        out[e.name] = _checked(e)
    return out


PRESETS: dict[str, Preset] = _catalogue(
    *(Preset(name, p["doc"], p["rules"], p.get("bounds", {})) for name, p in CATALOGUE["presets"].items()))
MUTANTS: dict[str, Mutant] = _catalogue(
    *(Mutant(name, m["description"], m["rules"], m.get("needs"), m.get("liveness", False))
      for name, m in CATALOGUE["mutants"].items()))
for _m in MUTANTS.values():
    if _m.needs is not None and _m.needs not in PRESETS:
        raise ValueError(f"mutant {_m.name!r} needs unknown preset {_m.needs!r}")


class Release(NamedTuple):
    """A Kafka release `kraft-verify conform` runs against its own controller code."""
    version: str                   # as Maven Central names it: 4.4.0
    preset: str                    # its rules
    api: str                       # the oracle driver's API generation (oracle/src/gen-<api>)
    read: str                      # how its rules were read (a -sources jar, or class files)

    @property
    def line(self) -> str:
        return ".".join(self.version.split(".")[:2])


RELEASES: dict[str, Release] = {}
for _v, _r in CATALOGUE.get("releases", {}).items():
    if _r.get("preset") not in PRESETS or set(_r) != {"preset", "api", "read"}:
        raise ValueError(f"catalogue.toml: release {_v}: needs a known preset, api and read")
    RELEASES[_v] = Release(_v, _r["preset"], _r["api"], _r["read"])
NEWEST_RELEASE = max(RELEASES, key=lambda v: tuple(int(x) for x in v.split(".")))
ALIASES: dict[str, str] = dict(CATALOGUE.get("aliases", {}))
for _a, _p in ALIASES.items():
    if _p not in PRESETS or _a in PRESETS:
        raise ValueError(f"catalogue.toml: alias {_a!r} must name a known preset and not be one")


def release(text: str) -> Optional[Release]:
    """The release `text` names: an exact version (4.1.0), a line (4.1, 4.1.x: its newest
    patch), or None."""
    if text in RELEASES:
        return RELEASES[text]
    line = text[:-2] if text.endswith(".x") else text
    patches = [v for v in RELEASES if RELEASES[v].line == line]
    if not patches:
        return None
    return RELEASES[max(patches, key=lambda v: tuple(int(x) for x in v.split(".")))]


def preset_parts(name: str) -> list[str]:
    """A preset name, or presets joined by '+' (`pre-kip-966+recovery`: the old protocol with the
    recovery profile on top; later parts override earlier ones)."""
    return name.split("+")


def preset_rules(name: str) -> Rules:
    rules = DEFAULT_RULES
    for part in preset_parts(name):
        rules = replace(rules, **PRESETS[part].changes)
    return rules


def apply_mutant(rules: Rules, name: str) -> Rules:
    return replace(rules, **MUTANTS[name].changes)
