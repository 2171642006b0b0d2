"""Every counterexample is re-checked before it is reported (issue 37): `levels.rebuild`, the one
path by which the exhaustive search, its workers and Spark turn a stored violation into a trace,
replays it through the model and evaluates the property where it ends. A path or a claim that
does not hold there (a key holder's forged checkpoint or Spark level, or an engine bug) is an
UnconfirmedViolation, which the command line turns into one line and exit 2, never a verdict."""
from __future__ import annotations

import pytest

from specs import make_config, with_mutant
from specs.model import Model
from verifier.cli.binding import properties
from verifier.core.levels import UnconfirmedViolation, rebuild


def _model(mutant=None):
    cfg = make_config("kafka")
    return Model(with_mutant(cfg, mutant) if mutant else cfg, symmetry=False)


def _rebuild(model, labels, final, violated):
    root = model.init_states()[0]
    return rebuild(model, properties(), root, labels, final, violated, "bfs", False)


def test_a_true_counterexample_is_confirmed():
    model = _model("elr-not-cleared")
    trace = _rebuild(model, [("fence", 2)], None, ["ElrOnlyBelowMinIsr"])
    assert trace.violated == ["ElrOnlyBelowMinIsr"]


def test_a_step_of_a_broker_that_does_not_exist_is_refused():
    model = _model("elr-not-cleared")
    with pytest.raises(UnconfirmedViolation, match=r"step 1, \('fence', 9\), is not a step the model takes"):
        _rebuild(model, [("fence", 9)], None, ["ElrOnlyBelowMinIsr"])


def test_a_property_that_does_not_exist_is_refused():
    model = _model("elr-not-cleared")
    with pytest.raises(UnconfirmedViolation, match="NoSuchProperty is not a property of this run"):
        _rebuild(model, [("fence", 2)], None, ["NoSuchProperty"])


def test_a_property_that_holds_where_the_path_ends_is_refused():
    """The report the issue saw: "why LeaderInIsr fails: ... b1 is not in isr=[b1,b2,b3]"."""
    model = _model()
    with pytest.raises(UnconfirmedViolation, match="LeaderInIsr holds where the path ends"):
        _rebuild(model, [("produce",)], None, ["LeaderInIsr"])


def test_a_step_property_is_checked_on_the_last_step():
    model = _model()
    with pytest.raises(UnconfirmedViolation, match="OneLeaderPerEpoch holds where the path ends"):
        _rebuild(model, [], ("fence", 1), ["OneLeaderPerEpoch"])


def test_a_deadlock_claimed_where_steps_remain_is_refused():
    model = _model()
    with pytest.raises(UnconfirmedViolation, match="Deadlock holds where the path ends"):
        _rebuild(model, [("produce",)], None, ["Deadlock"])


@pytest.mark.parametrize("label", [("nonsense",), ("fence",), ("fence", "b1"), ()])
def test_a_label_the_model_has_no_step_for_is_refused(label):
    model = _model("elr-not-cleared")
    with pytest.raises(UnconfirmedViolation, match="does not replay"):
        _rebuild(model, [label], None, ["ElrOnlyBelowMinIsr"])
