"""An engine's knobs are checked as they are made (their type from the annotation, their range
from `knob`), read only by their own engine, and carried by one Settings type."""
from __future__ import annotations

import pytest

from specs import Model, make_config, with_bounds
from verifier.core.knobs import KnobError
from verifier.core.settings import Settings
from verifier.engines import bfs, fuzz, simulate


@pytest.mark.parametrize("make, message", [
    (lambda: simulate.Knobs(walks="10"), "simulate knob walks: '10' is not a int"),
    (lambda: simulate.Knobs(walks=True), "simulate knob walks: True is not a int"),
    (lambda: simulate.Knobs(walks=0), "simulate knob walks: 0 is below 1"),
    (lambda: simulate.Knobs(shrink="no"), "simulate knob shrink: 'no' is not a bool"),
    (lambda: fuzz.Knobs(profile="weekly"), "fuzz knob profile: 'weekly' is not one of ci, nightly"),
    (lambda: fuzz.Knobs(examples=0), "fuzz knob examples: 0 is below 1"),
    (lambda: fuzz.Knobs(examples=2.5), "fuzz knob examples: 2.5 is not a int or None"),
])
def test_a_wrong_knob_is_refused_when_made_in_one_line(make, message):
    with pytest.raises(KnobError) as info:
        make()
    assert str(info.value) == message


def test_a_knob_in_range_is_kept_and_none_means_the_default():
    assert fuzz.Knobs(examples=None, seed=3).seed == 3
    assert simulate.Knobs.of(Settings()) == simulate.Knobs()
    with pytest.raises(Exception):
        simulate.Knobs().walks = 5          # frozen


def test_an_engine_refuses_another_engines_knobs():
    model = Model(with_bounds(make_config("kafka"), records=0, fences=0, lossy_crashes=0))
    with pytest.raises(KnobError, match="the bfs engine was given the knobs of simulate, not its own"):
        bfs.run(model, (), Settings(knobs=simulate.Knobs(walks=3)))
    with pytest.raises(TypeError, match="Settings.knobs takes an engine's Knobs, not dict"):
        Settings(knobs={"walks": 3})


def test_the_knobs_reach_the_engine():
    model = Model(with_bounds(make_config("kafka"), records=0, fences=0, lossy_crashes=0))
    few, many = (simulate.run(model, (), Settings(knobs=simulate.Knobs(walks=n, depth=5, seed=1))) for n in (2, 40))
    assert few.transitions <= 2 * 5 < many.transitions <= 40 * 5      # at most walks x depth steps
