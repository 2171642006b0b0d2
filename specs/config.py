"""One config object: cluster shape, protocol flags, bounds and the mutant.

A preset, a TOML file, a scenario's `config` block and a mutant are all just
ways of building a `Config`, so every engine explores exactly what it is given.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any, Mapping

from specs.mutants import MUTANTS


class ConfigError(ValueError):
    """Bad user input: the CLI turns it into one line and exit code 2."""


RECOVERY_STRATEGIES = ("aggressive", "balanced", "none")


@dataclass(frozen=True)
class Flags:
    """Protocol variant switches. Defaults are Apache Kafka trunk (PROTOCOL.md)."""

    elr: bool = True                              # KIP-966 Eligible Leader Replicas
    hwm_requires_min_isr: bool = True             # KIP-966: HWM advances only while |ISR| >= min ISR
    broker_epoch_check: bool = True               # KIP-903: per-member broker epochs in AlterPartition
    use_last_known_leader: bool = True            # Kafka's meaning of last_known_elr; False = KIP text
    min_isr_change_always_clears_elr: bool = True  # Kafka; False = KIP (only when new min ISR <= |ISR|)
    reassignment_requires_min_isr: bool = False   # KIP text; Kafka enforces neither rule
    leader_epoch_bump_on_isr_shrink: bool = False  # metadata versions before 3.6
    unclean_recovery_strategy: str | None = None  # KIP-966 variant: aggressive | balanced | none
    # Abstraction, not a protocol variant: an election may pick ANY valid candidate instead of
    # the first in replica order, and the ISR is kept as a set. Over-approximates Kafka (every
    # Kafka run is one of its runs) and makes brokers interchangeable, so symmetry applies.
    any_candidate_elections: bool = False


@dataclass(frozen=True)
class Bounds:
    """Budgets that keep the state space finite. Counted per kind of event."""

    records: int = 1              # records produced (acks=all)
    fences: int = 1               # fences of a live broker (network partition from the controller)
    lossy_crashes: int = 1        # unclean shutdowns that lose the unflushed suffix
    crashes: int = 0              # unclean shutdowns that keep the page cache
    clean_shutdowns: int = 0      # controlled shutdown then clean stop
    isr_shrinks: int = 2          # leader-initiated ISR shrinks (lagging follower)
    admin_elections: int = 0      # preferred / unclean / designated elections
    config_changes: int = 0       # min.insync.replicas and unclean.leader.election.enable changes
    reassignments: int = 0        # partition reassignments
    unclean_recoveries: int = 0   # KIP-966 unclean recovery rounds (variant)
    max_leader_epoch: int = 8     # transitions that would exceed these are disabled
    max_partition_epoch: int = 16


BUDGETS = ("records", "fences", "lossy_crashes", "crashes", "clean_shutdowns", "isr_shrinks",
           "admin_elections", "config_changes", "reassignments", "unclean_recoveries")


@dataclass(frozen=True)
class Config:
    replicas: tuple[int, ...] = (1, 2, 3)
    min_isr: int = 2
    unclean_leader_election: bool = False
    extra_brokers: tuple[int, ...] = ()           # registered brokers that are not replicas
    flags: Flags = field(default_factory=Flags)
    bounds: Bounds = field(default_factory=Bounds)
    mutant: str | None = None
    preset: str = "kafka"

    @cached_property
    def brokers(self) -> tuple[int, ...]:
        """Sorted ids of every broker; computed once (engines ask for it per transition)."""
        return tuple(sorted(set(self.replicas) | set(self.extra_brokers)))

    @property
    def effective_min_isr(self) -> int:
        return min(self.min_isr, len(self.replicas))

    @cached_property
    def memo(self) -> dict:
        """A cache for pure functions of this config (specs.actions._event). It changes no
        result, is not part of equality, and is not pickled."""
        return {}

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("memo", "brokers")}


PRESETS: dict[str, dict[str, Any]] = {
    "kafka": {},
    "kip-966": {"use_last_known_leader": False, "min_isr_change_always_clears_elr": False,
                "reassignment_requires_min_isr": True},
    "pre-kip-966": {"elr": False, "hwm_requires_min_isr": False},
    "pre-kip-903": {"broker_epoch_check": False},
}

PRESET_DOCS = {
    "kafka": "Apache Kafka trunk as described in PROTOCOL.md (the default)",
    "kip-966": "the KIP-966 text where PROTOCOL.md marks [KIP]: last_known_elr, min ISR change, reassignment",
    "pre-kip-966": "no ELR; the ISR never empties; the HWM advances below min ISR",
    "pre-kip-903": "no per-member broker epoch check in AlterPartition",
}

_FLAG_NAMES = {f.name for f in fields(Flags)}
_BOUND_NAMES = {f.name for f in fields(Bounds)}


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


def _flag_type(name: str) -> type:
    return str if name == "unclean_recovery_strategy" else bool


def make_config(preset: str = "kafka", *, replicas: Any = None, min_isr: Any = None,
                unclean_leader_election: Any = None, extra_brokers: Any = None,
                flags: Mapping[str, Any] | None = None, bounds: Mapping[str, Any] | None = None,
                mutant: str | None = None) -> Config:
    """Build and validate a Config; every problem raises ConfigError naming the field."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset '{preset}' (known: {', '.join(PRESETS)})")
    flag_values: dict[str, Any] = dict(PRESETS[preset])
    for name, value in (flags or {}).items():
        if name not in _FLAG_NAMES:
            raise ConfigError(f"unknown protocol flag '{name}'")
        if value is None and name == "unclean_recovery_strategy":
            flag_values[name] = None
            continue
        flag_values[name] = _check_type(name, value, _flag_type(name))
    strategy = flag_values.get("unclean_recovery_strategy")
    if strategy is not None and strategy not in RECOVERY_STRATEGIES:
        raise ConfigError(f"unclean_recovery_strategy must be one of {RECOVERY_STRATEGIES}, got {strategy!r}")
    bound_values: dict[str, Any] = {}
    for name, value in (bounds or {}).items():
        if name not in _BOUND_NAMES:
            raise ConfigError(f"unknown bound '{name}'")
        if _check_type(name, value, int) < 0:
            raise ConfigError(f"bound '{name}' must be >= 0")
        bound_values[name] = value
    cfg = Config(flags=Flags(**flag_values), bounds=Bounds(**bound_values), preset=preset)
    if replicas is not None:
        if not isinstance(replicas, (list, tuple)) or not replicas:
            raise ConfigError("config field 'replicas' must be a non-empty list of broker ids")
        for r in replicas:
            _check_type("replicas", r, int)
        if len(set(replicas)) != len(replicas):
            raise ConfigError("config field 'replicas' has a duplicate broker id")
        if not 1 <= len(replicas) <= 7:
            raise ConfigError("replication factor must be between 1 and 7")
        cfg = replace(cfg, replicas=tuple(replicas))
    if min_isr is not None:
        if _check_type("min_isr", min_isr, int) < 1:
            raise ConfigError("config field 'min_isr' must be >= 1")
        cfg = replace(cfg, min_isr=min_isr)
    if unclean_leader_election is not None:
        cfg = replace(cfg, unclean_leader_election=_check_type(
            "unclean_leader_election", unclean_leader_election, bool))
    if extra_brokers is not None:
        if not isinstance(extra_brokers, (list, tuple)):
            raise ConfigError("config field 'brokers' must be a list of broker ids")
        for b in extra_brokers:
            _check_type("brokers", b, int)
        cfg = replace(cfg, extra_brokers=tuple(sorted(set(extra_brokers) - set(cfg.replicas))))
    if mutant is not None:
        if mutant not in MUTANTS:
            raise ConfigError(f"unknown mutant '{mutant}' (see `kraft-verify mutants --list`)")
        cfg = replace(cfg, mutant=mutant)
    if cfg.flags.any_candidate_elections and list(cfg.replicas) != sorted(cfg.replicas):
        raise ConfigError("any_candidate_elections keeps replicas as a set: list them in id order")
    return cfg


def with_bounds(cfg: Config, **changes: int) -> Config:
    return replace(cfg, bounds=replace(cfg.bounds, **changes))


def config_to_dict(cfg: Config) -> dict[str, Any]:
    """The scenario `config` block for this config (round-trips through config_from_dict)."""
    out: dict[str, Any] = {
        "replicas": list(cfg.replicas),
        "min_isr": cfg.min_isr,
        "elr": cfg.flags.elr,
        "unclean_leader_election": cfg.unclean_leader_election,
        "use_last_known_leader": cfg.flags.use_last_known_leader,
        "leader_epoch_bump_on_isr_shrink": cfg.flags.leader_epoch_bump_on_isr_shrink,
        "preset": cfg.preset,
    }
    if cfg.flags.unclean_recovery_strategy is not None:
        out["unclean_recovery_strategy"] = cfg.flags.unclean_recovery_strategy
    defaults = Flags(**PRESETS[cfg.preset])
    for f in fields(Flags):
        name = f.name
        if name in out or name == "unclean_recovery_strategy":
            continue
        if getattr(cfg.flags, name) != getattr(defaults, name):
            out[name] = getattr(cfg.flags, name)
    if cfg.extra_brokers:
        out["brokers"] = list(cfg.extra_brokers)
    if cfg.mutant:
        out["mutant"] = cfg.mutant
    return out


_SCENARIO_TOP = {"replicas", "min_isr", "unclean_leader_election", "preset", "mutant", "brokers", "bounds"}


def config_from_dict(data: Mapping[str, Any]) -> Config:
    """Parse a scenario `config` block or a TOML [model] table. Unknown keys are errors."""
    if not isinstance(data, Mapping):
        raise ConfigError("'config' must be an object")
    if "replicas" not in data:
        raise ConfigError("config is missing required field 'replicas'")
    flags: dict[str, Any] = {}
    for key, value in data.items():
        if key in _SCENARIO_TOP:
            continue
        if key not in _FLAG_NAMES:
            raise ConfigError(f"unknown config flag '{key}'")
        flags[key] = value
    preset = data.get("preset", "kafka")
    if not isinstance(preset, str):
        raise ConfigError("config field 'preset' must be a string")
    bounds = data.get("bounds")
    if bounds is not None and not isinstance(bounds, Mapping):
        raise ConfigError("config field 'bounds' must be an object")
    return make_config(preset, replicas=data["replicas"], min_isr=data.get("min_isr", 1),
                       unclean_leader_election=data.get("unclean_leader_election"),
                       extra_brokers=data.get("brokers"), flags=flags, bounds=bounds,
                       mutant=data.get("mutant"))
