"""One config object: cluster shape, the rules (specs/rules.py), bounds and the mutant label.

A preset, a TOML file, a scenario's `config` block and a mutant are all just ways of
building a `Config`, so every engine explores exactly what it is given. The model reads
`cfg.rules`; `preset` and `mutant` are names kept for reports.
"""
from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field, fields, make_dataclass, replace
from difflib import get_close_matches
from functools import cached_property
from typing import Any, Mapping, Optional

from specs.catalogue import ALIASES, MUTANTS, NEWEST_RELEASE, PRESETS, apply_mutant, preset_parts, preset_rules
from specs.rules import CATALOGUE, RULE_FIELDS, Rules, changed, check_value


class ConfigError(ValueError):
    """Bad user input: the CLI turns it into one line and exit code 2."""


def _bound(name: str, spec: dict) -> tuple:
    if set(spec) != {"default", "doc"} or not isinstance(spec["default"], int):
        raise ValueError(f"catalogue.toml: bound {name} needs an integer default and a doc")
    return name, int, field(default=spec["default"], metadata={"doc": spec["doc"]})


# Budgets that keep the state space finite, counted per kind of event, and the epoch caps: the
# `[bounds.*]` tables of specs/catalogue.toml (`kraft-verify list` prints them).
Bounds = make_dataclass("Bounds", [_bound(n, spec) for n, spec in CATALOGUE["bounds"].items()], frozen=True)
Bounds.__module__ = __name__         # so that pickle (Spark ships configs) finds the class


BUDGETS = ("records", "fences", "lossy_crashes", "crashes", "clean_shutdowns", "isr_shrinks",
           "admin_elections", "config_changes", "reassignments", "unclean_recoveries", "metadata_lag")
BOUND_NAMES = tuple(f.name for f in fields(Bounds))
assert set(BUDGETS) <= set(BOUND_NAMES), "every budget is a bound"
for _p in PRESETS.values():
    if not set(_p.bounds) <= set(BOUND_NAMES) or not all(isinstance(v, int) and v >= 0 for v in _p.bounds.values()):
        raise ValueError(f"catalogue.toml: preset {_p.name}: bounds {dict(_p.bounds)} name an unknown bound "
                         "or a bad value")


def preset_bounds(preset: str) -> "Bounds":
    """The bounds a preset starts from: the defaults, with a profile preset's own."""
    bounds: dict = {}
    for part in preset_parts(preset):
        bounds.update(PRESETS[part].bounds)
    return Bounds(**bounds)


@dataclass(frozen=True)
class Config:
    replicas: tuple[int, ...] = (1, 2, 3)
    min_isr: int = 2
    unclean_leader_election: bool = False
    extra_brokers: tuple[int, ...] = ()           # registered brokers that are not replicas
    rules: Rules = field(default_factory=Rules)
    bounds: Bounds = field(default_factory=Bounds)
    mutant: Optional[str] = None                  # the catalogue name behind `rules`, for reports
    preset: str = "kafka"
    # the topic's partitions, alike (replicas, min ISR) on the brokers they share: more than one
    # is specs/partitions.py's model, which only `check`'s interpreted search takes yet
    partitions: int = 1

    def __post_init__(self):
        """A mutant label must match the rules: `dataclasses.replace(cfg, mutant=...)` alone
        would name a mutant the model does not run (use `with_mutant`)."""
        if self.mutant is not None:
            broken = MUTANTS[self.mutant].changes
            if any(getattr(self.rules, f) != v for f, v in broken.items()):
                raise ConfigError(f"config names mutant '{self.mutant}' but its rules do not break "
                                  f"{', '.join(broken)}")

    @cached_property
    def brokers(self) -> tuple[int, ...]:
        """Sorted ids of every broker; computed once (engines ask for it per transition)."""
        return tuple(sorted(set(self.replicas) | set(self.extra_brokers)))

    @property
    def effective_min_isr(self) -> int:
        return min(self.min_isr, len(self.replicas))

    @cached_property
    def memo(self) -> dict:
        """A cache for pure functions of this config (specs.actions.common.event). It changes no
        result, is not part of equality, and is not pickled."""
        return {}

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("memo", "brokers")}


def unknown(kind: str, name: str, known) -> ConfigError:
    """'unknown bound 'record' (did you mean records?; known: ...)' as one line."""
    close = get_close_matches(name, list(known), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return ConfigError(f"unknown {kind} '{name}' ({hint}known: {', '.join(known)})")


def _check_type(name: str, value: Any, kind: type) -> Any:
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise ConfigError(f"config field '{name}' must be {kind.__name__}, got {value!r}")
    return value


def _natural(name: str, value: Any, most: int, negative: str, beyond: str) -> int:
    """An integer from 0 to `most`; the messages say what a value below or above means."""
    if _check_type(name, value, int) < 0:
        raise ConfigError(negative)
    if value > most:
        raise ConfigError(beyond)
    return value


def _broker_ids(name: str, ids: Any) -> tuple[int, ...]:
    if not isinstance(ids, (list, tuple)):
        raise ConfigError(f"config field '{name}' must be a list of broker ids")
    for b in ids:
        _natural(name, b, MAX_INT, f"config field '{name}': broker ids are >= 0, got {b}",
                 f"config field '{name}': broker id {b} does not fit Kafka's int (max {MAX_INT})")
    return tuple(ids)


MAX_INT = 2**31 - 1          # Kafka's broker ids and min.insync.replicas are Java ints
MAX_REPLICAS = 7             # the largest replication factor a search of this model gets through
MAX_BROKERS = 15             # replicas and spare brokers: every engine judges the properties on the
                             # kernel's rows (specs/kernel/properties.py), which name at most 15
MAX_PARTITIONS = 8           # a search's state is one field per partition (specs/partitions.MOST)
MAX_BOUND = 1_000_000        # a bound beyond this is a typo: no search gets near it


class PresetRenamed(UserWarning):
    """A preset asked for by an old name (the command line prints it as one warning line)."""


def _alias(name: str) -> str:
    if name in ALIASES:
        warnings.warn(PresetRenamed(f"preset {name} is now called {ALIASES[name]} (Kafka {NEWEST_RELEASE}, the "
                                    f"newest release); the old name will go"), stacklevel=3)
        return ALIASES[name]
    return name


def make_config(preset: str = "kafka", *, replicas: Any = None, min_isr: Any = None,
                unclean_leader_election: Any = None, extra_brokers: Any = None,
                flags: Mapping[str, Any] | None = None, bounds: Mapping[str, Any] | None = None,
                mutant: str | None = None, partitions: Any = None) -> Config:
    """Build and validate a Config: the preset's rules, then the mutant's replacements, then
    the explicit rule values in `flags`. Every problem raises ConfigError naming the field."""
    if not isinstance(preset, str):
        raise unknown("preset", str(preset), PRESETS)
    preset = "+".join(_alias(part) for part in preset_parts(preset))
    for part in preset_parts(preset):
        if not part and len(preset_parts(preset)) > 1:
            raise ConfigError(f"preset {preset!r}: an empty name beside a '+' (compose as pre-kip-966+recovery)")
        if part not in PRESETS:
            raise unknown("preset", part, PRESETS)
    rules = preset_rules(preset)
    if mutant is not None:
        if not isinstance(mutant, str) or mutant not in MUTANTS:
            raise unknown("mutant", str(mutant), MUTANTS)
        rules = apply_mutant(rules, mutant)
    explicit: dict[str, Any] = {}
    for name, value in (flags or {}).items():
        if name not in RULE_FIELDS:
            raise unknown("protocol flag", name, RULE_FIELDS)
        problem = check_value(name, value)
        if problem:
            raise ConfigError(problem)
        explicit[name] = value
    rules = replace(rules, **explicit)
    if mutant is not None and any(f in explicit and explicit[f] != v for f, v in MUTANTS[mutant].changes.items()):
        raise ConfigError(f"--flag undoes what mutant '{mutant}' breaks ({', '.join(MUTANTS[mutant].changes)})")
    bound_values: dict[str, Any] = asdict(preset_bounds(preset))
    for name, value in (bounds or {}).items():
        if name not in BOUND_NAMES:
            raise unknown("bound", name, BOUND_NAMES)
        bound_values[name] = _natural(name, value, MAX_BOUND, f"bound '{name}' must be >= 0",
                                      f"bound '{name}' = {value} is beyond any search (at most {MAX_BOUND:,})")
    cfg = Config(rules=rules, bounds=Bounds(**bound_values), preset=preset, mutant=mutant)
    if replicas is not None:
        replicas = _broker_ids("replicas", replicas)
        if not replicas:
            raise ConfigError("config field 'replicas' must be a non-empty list of broker ids")
        if len(set(replicas)) != len(replicas):
            raise ConfigError("config field 'replicas' has a duplicate broker id")
        if not 1 <= len(replicas) <= MAX_REPLICAS:
            raise ConfigError(f"replication factor must be between 1 and {MAX_REPLICAS}")
        cfg = replace(cfg, replicas=replicas)
    if min_isr is not None:
        if not 1 <= _check_type("min_isr", min_isr, int) <= MAX_INT:
            raise ConfigError(f"config field 'min_isr' must be between 1 and {MAX_INT}, got {min_isr}")
        cfg = replace(cfg, min_isr=min_isr)
    if unclean_leader_election is not None:
        cfg = replace(cfg, unclean_leader_election=_check_type(
            "unclean_leader_election", unclean_leader_election, bool))
    if extra_brokers is not None:
        extra = _broker_ids("spare_brokers", extra_brokers)
        if len(set(extra)) != len(extra):
            raise ConfigError("config field 'spare_brokers' has a duplicate broker id")
        cfg = replace(cfg, extra_brokers=tuple(sorted(set(extra) - set(cfg.replicas))))
    if partitions is not None:
        n = _natural("partitions", partitions, MAX_PARTITIONS, f"config field 'partitions' must be >= 1, got {partitions}",
                     f"config field 'partitions': a state holds at most {MAX_PARTITIONS} partitions, got {partitions}")
        if n < 1:
            raise ConfigError("config field 'partitions' must be >= 1, got 0")
        cfg = replace(cfg, partitions=n)
    if cfg.partitions > 1 and cfg.bounds.metadata_lag > 0:
        raise ConfigError("bound metadata_lag with several partitions: a leader's held metadata is modelled on one "
                          "partition yet")
    if len(cfg.brokers) > MAX_BROKERS:
        raise ConfigError(f"{len(cfg.brokers)} brokers (replicas and spare_brokers): the model holds at most "
                          f"{MAX_BROKERS}")
    if cfg.rules.any_candidate_elections and list(cfg.replicas) != sorted(cfg.replicas):
        raise ConfigError("any_candidate_elections keeps replicas as a set: list them in id order")
    return cfg


def deep_bounds(replication_factor: int) -> dict[str, int]:
    """Bounds for random testing, deeper than the exhaustive defaults: two records, long epoch
    histories, and enough ISR shrinks and fences to take any ISR down to its last replica.
    Other fault budgets stay the checker's, so random runs spend their steps on the protocol."""
    return {"records": 2, "isr_shrinks": max(replication_factor - 1, 2),
            "fences": max(replication_factor - 2, 1), "max_leader_epoch": 30, "max_partition_epoch": 60}


def with_mutant(cfg: Config, name: str) -> Config:
    """cfg with the mutant `name`'s rules (cfg itself must name no mutant)."""
    if cfg.mutant is not None:
        raise ConfigError(f"config already runs mutant '{cfg.mutant}'")
    if name not in MUTANTS:
        raise unknown("mutant", name, MUTANTS)
    return replace(cfg, rules=apply_mutant(cfg.rules, name), mutant=name)


def mutant_config(base: Config, name: str) -> Config:
    """Where a mutation gate runs mutant `name` from `base`: on `base`, unless the mutant
    needs another preset to matter (a recovery rule needs recovery rounds); then on that
    preset, with `base`'s cluster shape and the bounds `base` sets beyond its own preset's."""
    needs = MUTANTS[name].needs
    if needs is None or needs in preset_parts(base.preset):
        return with_mutant(base, name)
    preset = base.preset + "+" + needs
    own = preset_bounds(base.preset)
    extra = {b: getattr(base.bounds, b) for b in BOUND_NAMES if getattr(base.bounds, b) != getattr(own, b)}
    rules = replace(preset_rules(preset), **explicit_flags(base))
    cfg = replace(base, preset=preset, rules=rules, bounds=replace(preset_bounds(preset), **extra))
    return with_mutant(cfg, name)


def with_bounds(cfg: Config, **changes: int) -> Config:
    return replace(cfg, bounds=replace(cfg.bounds, **changes))


def base_rules(cfg: Config) -> Rules:
    """The rules the preset and the mutant give, before any explicit flag."""
    rules = preset_rules(cfg.preset)
    return apply_mutant(rules, cfg.mutant) if cfg.mutant else rules


def explicit_flags(cfg: Config) -> dict[str, Any]:
    """The rule values the config sets beyond its preset and mutant."""
    return changed(cfg.rules, base_rules(cfg))


def config_label(cfg: Config) -> str:
    """What was checked, in a name: preset, mutant, and every flag and bound not at its default
    (`kafka+hwm_requires_min_isr=false+records=2`)."""
    parts = [cfg.preset] + ([cfg.mutant] if cfg.mutant else [])
    parts += [f"{k}={str(v).lower()}" for k, v in explicit_flags(cfg).items()]
    default = preset_bounds(cfg.preset)
    parts += [f"{b}={getattr(cfg.bounds, b)}" for b in BOUND_NAMES if getattr(cfg.bounds, b) != getattr(default, b)]
    if list(cfg.replicas) != [1, 2, 3]:
        parts.append("replicas=" + ",".join(map(str, cfg.replicas)))
    if cfg.min_isr != 2:
        parts.append(f"min_isr={cfg.min_isr}")
    if cfg.partitions != 1:
        parts.append(f"partitions={cfg.partitions}")
    return "+".join(parts)


def config_summary(cfg: Config) -> dict[str, Any]:
    """The config as summary.json records it (docs/summary.md)."""
    return {"preset": cfg.preset, "mutant": cfg.mutant, "replicas": list(cfg.replicas),
            "extra_brokers": list(cfg.extra_brokers), "min_isr": cfg.min_isr,
            "unclean_leader_election": cfg.unclean_leader_election, "flags": explicit_flags(cfg),
            "rules": asdict(cfg.rules), "bounds": asdict(cfg.bounds),
            **({"partitions": cfg.partitions} if cfg.partitions != 1 else {})}


def config_to_dict(cfg: Config) -> dict[str, Any]:
    """The scenario `config` block for this config (round-trips through config_from_dict)."""
    out: dict[str, Any] = {
        "replicas": list(cfg.replicas),
        "min_isr": cfg.min_isr,
        "elr": cfg.rules.elr,
        "unclean_leader_election": cfg.unclean_leader_election,
        "use_last_known_leader": cfg.rules.use_last_known_leader,
        "leader_epoch_bump_on_isr_shrink": cfg.rules.leader_epoch_bump_on_isr_shrink,
        "preset": cfg.preset,
    }
    if cfg.rules.unclean_recovery_strategy is not None:
        out["unclean_recovery_strategy"] = cfg.rules.unclean_recovery_strategy
    for name, value in explicit_flags(cfg).items():
        out.setdefault(name, value)
    if cfg.extra_brokers:
        out["brokers"] = list(cfg.extra_brokers)
    if cfg.mutant:
        out["mutant"] = cfg.mutant
    if cfg.bounds.metadata_lag:          # a state then holds a leader's metadata (the row has room for it)
        out["bounds"] = {"metadata_lag": cfg.bounds.metadata_lag}
    return out


_SCENARIO_TOP = {"replicas", "min_isr", "unclean_leader_election", "preset", "mutant", "brokers", "bounds"}


def config_from_dict(data: Mapping[str, Any]) -> Config:
    """Parse a scenario `config` block. Unknown keys are errors."""
    if not isinstance(data, Mapping):
        raise ConfigError("'config' must be an object")
    if "replicas" not in data:
        raise ConfigError("config is missing required field 'replicas'")
    if data.get("partitions", 1) != 1:
        raise ConfigError(f"config: partitions = {data['partitions']}: a scenario runs one partition yet (several "
                          f"are searched by `kraft-verify check --partitions N`, whose record of a run this is)")
    flags: dict[str, Any] = {}
    for key, value in data.items():
        if key in _SCENARIO_TOP:
            continue
        if key not in RULE_FIELDS:
            raise unknown("config flag", key, RULE_FIELDS)
        flags[key] = value
    preset = data.get("preset", "kafka")
    if not isinstance(preset, str):
        raise ConfigError("config field 'preset' must be a string")
    bounds = data.get("bounds")
    if bounds is not None and not isinstance(bounds, Mapping):
        raise ConfigError("config field 'bounds' must be an object")
    for key in ("min_isr", "unclean_leader_election"):     # null is no value: it would mean make_config's default
        if key in data and data[key] is None:
            raise ConfigError(f"config field '{key}' must be {'int' if key == 'min_isr' else 'bool'}, got null")
    return make_config(preset, replicas=data["replicas"], min_isr=data.get("min_isr", 1),
                       unclean_leader_election=data.get("unclean_leader_election"),
                       extra_brokers=data.get("brokers"), flags=flags, bounds=bounds,
                       mutant=data.get("mutant"))
