"""The recovery profile (preset `recovery`): KIP-966 unclean recovery is reached and exhausted,
every action the profile turns on is taken, the old protocols and the recovery mutants are
still caught in it, and a default run says "off by config" rather than warning about actions
its config cannot enable."""
from __future__ import annotations

import pytest

import invariants as I
from specs import Model, make_config, mutant_config
from verifier.core.settings import Options, Settings
from verifier.engines import kernel
from verifier.reports.summary import coverage

RECOVERY_ACTIONS = ("unclean_recovery", "expand_isr", "elect", "crash", "crash_lossy", "restart")


# on the compiled kernel, as `check` runs them (without symmetry, which the kernel lacks): every
# strategy in a second or two (on the Python search a minute each, two of them nightly)
@pytest.mark.parametrize("strategy", ["aggressive", "balanced", "none"])
def test_the_profile_is_exhausted_and_every_action_it_enables_is_taken(strategy):
    model = Model(make_config("recovery", flags={"unclean_recovery_strategy": strategy}), symmetry=False)
    result = kernel.run(model, I.REGISTRY, Settings(options=Options(keep_going=True)))
    assert result.explored_all and not result.counterexamples
    table, warnings = coverage(model, result)
    assert warnings == []
    status = {row["action"]: row for row in table}
    assert all(row["status"] in ("ok", "off by config") for row in table)
    for action in RECOVERY_ACTIONS:
        if action == "unclean_recovery" and strategy == "none":
            assert status[action]["status"] == "off by config" and "operator" in status[action]["reason"]
        else:
            assert status[action]["status"] == "ok", action


@pytest.mark.parametrize("preset", ["pre-kip-966", "pre-kip-903"])
def test_the_old_protocols_are_still_caught_in_the_profile(preset):
    result = kernel.run(Model(make_config(f"{preset}+recovery"), symmetry=False), I.REGISTRY,
                        Settings(options=Options(keep_going=False)))
    assert result.counterexample is not None


def test_the_recovery_choice_mutant_is_caught_in_the_profile():
    cfg = mutant_config(make_config(), "recovery-shortest-log")
    assert cfg.preset == "kafka+recovery" and cfg.rules.unclean_recovery_strategy == "aggressive"
    result = kernel.run(Model(cfg, symmetry=False), I.REGISTRY, Settings(options=Options(keep_going=False)))
    assert result.counterexample.violated == ["RecoveryElectsAReplicaWithEveryAnsweredRecord"]


def test_a_default_run_says_off_by_config_for_what_its_config_cannot_enable():
    model = Model(make_config(bounds={"isr_shrinks": 0}), symmetry=False)
    result = kernel.run(model, I.REGISTRY)
    table, warnings = coverage(model, result)
    status = {row["action"]: row for row in table}
    assert warnings == []
    assert status["reassign"]["status"] == "off by config"
    assert status["unclean_recovery"]["status"] == "off by config"


def test_an_action_that_is_on_but_unreachable_says_which_bound_would_enable_it():
    model = Model(make_config(flags={"unclean_recovery_strategy": "balanced"}, bounds={"unclean_recoveries": 1}),
                  symmetry=False)
    result = kernel.run(model, I.REGISTRY)
    _, warnings = coverage(model, result)
    (warning,) = [w for w in warnings if w.startswith("action unclean_recovery")]
    assert "never enabled" in warning and "raise crashes or lossy_crashes" in warning
