"""The rules object and the catalogue: every variation is a field, presets and mutants are
named replacements checked when they are defined, and every field is read by the engines
that claim to check it."""
from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

from specs import scenario as SC
from specs.catalogue import MUTANTS, PRESETS, Mutant, _catalogue
from specs.config import ConfigError, make_config, with_bounds, with_mutant
from specs.rules import RULE_FIELDS, Outside, outside_z3
from specs.symbolic import Encoding, sym_params, sym_state
from tests.bind import run_scenario
from tests.conftest import ROOT
from tests.specs.helpers import random_runs


class Probe:
    """Stands in for a Rules value and records which fields are read."""

    def __init__(self, rules, seen: set):
        object.__setattr__(self, "_rules", rules)
        object.__setattr__(self, "_seen", seen)

    def __getattr__(self, name):
        if name in RULE_FIELDS:
            self._seen.add(name)
        return getattr(self._rules, name)


def _probed(cfg, seen):
    """cfg reading its rules through a Probe (set after validation, with a fresh memo, so only
    the model's own reads are recorded)."""
    probed = copy.copy(cfg)
    probed.__dict__.pop("memo", None)
    object.__setattr__(probed, "rules", Probe(cfg.rules, seen))
    return probed


def _catalogue_configs():
    roomy = {"records": 2, "fences": 2, "lossy_crashes": 2, "crashes": 1, "clean_shutdowns": 1, "isr_shrinks": 3,
             "admin_elections": 2, "config_changes": 2, "reassignments": 1, "unclean_recoveries": 1,
             "max_leader_epoch": 20, "max_partition_epoch": 40}
    flags = [{}, {"any_candidate_elections": True}, {"unclean_recovery_strategy": "balanced"},
             {"leader_epoch_bump_on_isr_shrink": True}]
    for preset in PRESETS:
        for f in flags:
            yield make_config(preset, extra_brokers=[4], bounds=roomy, flags=f)
    for m in MUTANTS:
        yield make_config("kafka", extra_brokers=[4], bounds=roomy, mutant=m)


@pytest.mark.slow
def test_every_rule_is_read_by_the_concrete_model_and_by_z3_unless_declared_outside(monkeypatch):
    concrete, symbolic = set(), set()
    for i, cfg in enumerate(_catalogue_configs()):
        for _ in random_runs(_probed(cfg, concrete), 20, 40, i):
            pass
        seen = set()
        enc = Encoding(_probed(cfg, seen), 3)
        enc.transition(sym_state(3, "s"), sym_state(3, "t"), sym_params(3, "p"))
        symbolic |= seen
    # the replay scenarios drive the rest (a reassignment that completes, stale requests)
    original = SC.format.config_from_dict
    monkeypatch.setattr(SC.format, "config_from_dict", lambda data: _probed(original(data), concrete))
    for path in sorted((ROOT / "specs/scenarios").glob("*.json")):
        run_scenario(json.loads(path.read_text()), str(path))
    unread = [n for n in RULE_FIELDS if n not in concrete]
    assert not unread, f"rules no concrete run reads: {unread}"
    for name in RULE_FIELDS:
        if outside_z3(name):
            assert name not in symbolic, f"{name} is declared outside z3, yet the encoding reads it"
        else:
            assert name in symbolic, f"{name} is not declared outside z3, yet the encoding never reads it"


def test_a_mutant_is_a_replacement_of_rule_fields_checked_when_defined():
    with pytest.raises(ValueError, match="unknown rule"):
        _catalogue(Mutant("typo", "a misspelt field", {"elr_not_cleard": True}))
    with pytest.raises(ValueError, match="Kafka's rule, not a break"):
        _catalogue(Mutant("no-op", "sets Kafka's own value", {"elr": True}))
    with pytest.raises(ValueError, match="changes no rule"):
        _catalogue(Mutant("empty", "nothing", {}))
    for m in MUTANTS.values():
        cfg = with_mutant(make_config(), m.name)
        assert all(getattr(cfg.rules, f) == v for f, v in m.changes.items())
        assert cfg.rules != make_config().rules


def test_a_mutant_label_without_its_rules_is_refused():
    with pytest.raises(ConfigError, match="do not break"):
        replace(make_config(), mutant="elr-not-cleared")
    with pytest.raises(ConfigError, match="undoes"):
        make_config(mutant="elr-not-cleared", flags={"elr_cleared_at_min_isr": True})


def test_presets_are_rule_sets_and_rule_values_are_typed():
    assert make_config("pre-kip-966").rules.elr is False
    with pytest.raises(ConfigError, match="must be true or false"):
        make_config(flags={"elr": "no"})
    with pytest.raises(ConfigError, match="did you mean"):
        make_config(flags={"elr_cleared_at_minisr": False})
    assert isinstance(RULE_FIELDS["follower_truncates"].metadata["z3"], Outside)


def test_the_designers_experiment_is_seen_by_check_and_by_prove(cli, tmp_path):
    """Remove the unclean-shutdown filter from the ELR rule (the rule field the pipeline reads):
    the exhaustive check and the z3 engine both refute it."""
    check = cli("check", "--flag", "unclean_shutdown_leaves_elr=false", "--stop-at-first", "-q",
                "--out", str(tmp_path / "check"))
    assert check.returncode == 1, check.stdout + check.stderr
    assert "LeaderCandidateCompleteness" in check.stdout
    # --stop-at-first: the refutation comes at N=2 (min ISR 1); the sizes after it cost 10 of
    # the command's 20 CPU seconds and could only refute more (the exit code is 1 either way)
    prove = cli("prove", "--flag", "unclean_shutdown_leaves_elr=false", "--max-brokers", "3", "--stop-at-first",
                "--out", str(tmp_path / "prove"))
    assert prove.returncode == 1, prove.stdout + prove.stderr
    assert "VIOLATED: LeaderCandidateCompleteness" in prove.stdout


def test_bounds_reject_unknown_names_with_a_suggestion():
    with pytest.raises(ConfigError, match="did you mean records"):
        make_config(bounds={"record": 2})
    assert with_bounds(make_config(), records=2).bounds.records == 2
