"""Metadata that lags (bound metadata_lag; specs/kernel/lag.py): a leader cut off from the
controller acts on the partition as it last received it. Held here: the deposed leader's
produce at its old epoch (never acknowledged, truncated when its metadata arrives), what a held
broker may not do, the state round trip, and that without the bound nothing changes."""
from __future__ import annotations

import json

import pytest

from specs import actions as A
from specs.config import ConfigError, make_config
from specs.kernel import kernel_of
from specs.kernel.layout import Layout
from specs.state import HeldView

LAG = make_config(bounds={"metadata_lag": 1, "records": 2})


def _steps(s, name):
    return [label for label in A.successors(LAG, s) if label[0][0] == name]


def take(s, name, *params):
    """The state after the enabled step `name` with `params` (asserted enabled)."""
    for label, t in A.successors(LAG, s):
        if label[0] == name and tuple(A.split_choice(label)[0]) == params:
            return t
    raise AssertionError(f"{name}{params} is not enabled: {sorted({lb[0] for lb, _ in A.successors(LAG, s)})}")


def enabled(s, name, *params) -> bool:
    return any(lb[0] == name and tuple(A.split_choice(lb)[0]) == params for lb, _ in A.successors(LAG, s))


def test_a_deposed_leader_takes_a_produce_that_is_never_acknowledged_and_is_truncated():
    s = A.init_state(LAG)
    s = take(s, "hold_metadata", 1)
    assert s.view == HeldView(1, 0, (1, 2, 3), (1, 2, 3))
    s = take(s, "fence", 1)                          # the session lapses: b2 leads at epoch 1
    p = s.ctrl.partition
    assert (p.leader, p.leader_epoch, p.isr) == (2, 1, (2, 3))
    assert not enabled(s, "unfence", 1), "a broker cut off from the controller cannot heartbeat"
    assert not enabled(s, "fetch", 1), "a held broker believes it leads: it fetches from nobody"
    s = take(s, "stale_produce", 1)                  # a producer with b1 in its metadata
    assert s.replicas[0].log == ((0, 1),)
    assert not enabled(s, "stale_advance_hwm", 1), "nobody fetches from a deposed leader: its ISR never catches up"
    s = take(s, "produce")
    s = take(s, "fetch", 3)
    s = take(s, "advance_hwm")
    assert s.hist.acked == (2,) and s.replicas[1].log == ((1, 2),)
    s = take(s, "deliver_metadata", 1)
    assert s.view is None
    s = take(s, "unfence", 1)
    s = take(s, "fetch", 1)
    assert s.replicas[0].log == ((1, 2),), "its next fetch truncates what it appended at its old epoch"
    assert 1 not in s.hist.acked


def test_a_held_leader_still_leading_waits_for_the_isr_it_holds():
    """Held while still the controller's leader at its epoch: followers fetch from it, and its
    HWM waits for its view's ISR even after the controller drops a member (b3, fenced)."""
    s = A.init_state(LAG)
    s = take(s, "hold_metadata", 1)
    assert not enabled(s, "produce") and not enabled(s, "advance_hwm"), "the held leader acts on its view only"
    s = take(s, "stale_produce", 1)
    s = take(s, "fetch", 2)
    s = take(s, "fence", 3)
    assert s.ctrl.partition.isr == (1, 2) and s.view.isr == (1, 2, 3)
    assert not enabled(s, "stale_advance_hwm", 1), "b3 is in the ISR it holds and has not fetched"
    s = take(s, "fetch", 3)
    s = take(s, "stale_advance_hwm", 1)
    assert s.hist.acked == (1,)
    assert not _steps(s, "shrink_isr") and not _steps(s, "expand_isr"), "its AlterPartition cannot arrive"


def test_a_crash_ends_what_it_held_and_the_row_round_trips():
    k = kernel_of(LAG)
    s = take(take(take(A.init_state(LAG), "hold_metadata", 1), "fence", 1), "stale_produce", 1)
    assert k.unpack(k.pack(s)) == s
    assert take(s, "crash_lossy", 1, 0).view is None


def test_replay_takes_a_stale_produce_past_the_records_bound():
    """replay runs steps without budgets (as a produce): a third record in a row made for two
    is a longer row, not a write past it."""
    s = take(take(A.init_state(LAG), "hold_metadata", 1), "fence", 1)
    for _ in range(3):
        s, error = A.step(LAG, s, ("stale_produce", 1))
        assert error is None
    assert s.replicas[0].log == ((0, 1), (0, 2), (0, 3))


def test_without_the_bound_the_row_and_the_actions_are_as_before():
    plain, lagging = Layout(make_config()), Layout(LAG)
    assert plain.view == -1 and lagging.view >= 0
    off = A.off_by_config(make_config())
    assert {"hold_metadata", "deliver_metadata", "stale_produce", "stale_advance_hwm"} <= set(off)
    assert not {"hold_metadata", "stale_produce"} & set(A.off_by_config(LAG))


def test_several_partitions_with_lag_are_refused_in_one_line():
    with pytest.raises(ConfigError, match="metadata_lag with several partitions"):
        make_config(bounds={"metadata_lag": 1}, partitions=2)


def test_the_scenario_cluster_conform_drives_replays_on_the_model(cli):
    proc = cli("replay", "specs/scenarios/lag/deposed-leader-takes-a-produce-at-its-old-epoch.json")
    assert proc.returncode == 0 and proc.stdout.startswith("PASS"), proc.stdout + proc.stderr


@pytest.mark.slow
def test_check_with_a_held_leader_loses_nothing_acknowledged(cli, tmp_path):
    """The default config with one leader's metadata held: every property holds over the whole
    space, and the held leader's steps are taken. (With one record, a stale produce reaches no
    state of its own: before the leader is deposed it is a produce before the hold, after, the
    same as the produce before the fence; test_a_deposed_leader_... takes it.)"""
    proc = cli("check", "--bound", "metadata_lag=1", "-q", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = json.loads(next(tmp_path.glob("*/summary.json")).read_text())
    assert summary["result"] == "ok" and not summary["violated"]
    rows = {row["action"]: row for row in summary["coverage"]}
    for name in ("hold_metadata", "deliver_metadata", "stale_advance_hwm"):
        assert rows[name]["new_states"] > 0, rows[name]
    assert rows["stale_produce"]["enabled"] > 0
