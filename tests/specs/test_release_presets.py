"""Release presets replay the scenarios that apply to them (specs/scenarios/, the trunk ones:
Kafka's own controller tests and the project's ELR walk-throughs):
- kafka-trunk and kafka-4.1 (trunk's rules): every one;
- kafka-4.0: every one but the two that test KAFKA-19522 (a fenced last known leader is not
  elected), which 4.0 predates: there it IS elected, and the test says so;
- kafka-3.9: every one that uses no ELR feature (no ELR or last_known_elr member, no clean or
  unclean shutdown judgement), since 3.9 runs without ELR."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specs import Model, make_config, run_file
from specs.algebra import NO_LEADER

ROOT = Path(__file__).resolve().parents[2]
TRUNK = sorted(p for p in (ROOT / "specs/scenarios").glob("*.json")
               if json.loads(p.read_text())["config"].get("preset", "kafka") == "kafka")
KAFKA_19522 = {"kafka-pcbt-elr-elect-last-known-leader-on-unfence.json",
               "kafka-pcbt-elr-not-eligible-last-known-leader.json"}


def _uses_elr(path: Path) -> bool:
    text = json.dumps(json.loads(path.read_text()))
    return bool(re.search(r'"(elr|last_known_elr)": \[\d', text)) or "clean_shutdown" in text


def test_the_trunk_scenarios_include_kafkas_own_tests():
    assert sum(p.name.startswith("kafka-") for p in TRUNK) >= 30


@pytest.mark.parametrize("preset", ["kafka-trunk", "kafka-4.1", "kafka", "kafka-4.0"])
@pytest.mark.parametrize("path", TRUNK, ids=[p.stem for p in TRUNK])
def test_trunk_scenarios_under_trunk_4_1_and_4_0(preset, path):
    result = run_file(str(path), preset=preset)
    if preset == "kafka-4.0" and path.name in KAFKA_19522:
        # 4.0 elects the fenced last known leader where trunk leaves the partition leaderless
        assert not result.ok
        assert any(name == "leader" and want == -1 and got != -1 for name, want, got in result.failure.diffs)
    else:
        assert result.ok, (preset, path.name, result.failure)


@pytest.mark.parametrize("path", [p for p in TRUNK if not _uses_elr(p)], ids=lambda p: p.stem)
def test_scenarios_without_elr_replay_under_3_9(path):
    result = run_file(str(path), preset="kafka-3.9")
    assert result.ok, result.failure


def _last_known_elr_4_0(p, new) -> tuple:
    """Kafka 4.0's maybeUpdateLastKnownLeader on one record, in the record's terms: a record
    that writes an empty ISR sets [old leader] (unless it already holds exactly that); else a
    record after which the partition has a leader clears it. (Trunk: [old leader] when the
    record makes the partition leaderless and the field is empty; cleared by a new leader.)"""
    lke = tuple(p.last_known_elr)
    if len(new.isr) == 0 and len(p.isr) != 0 and lke != (p.leader,):
        return (p.leader,)
    if new.leader != NO_LEADER and lke:
        return ()
    return lke


@pytest.mark.parametrize("bounds", [{}, {"config_changes": 1, "isr_shrinks": 1}], ids=["default", "config"])
def test_the_4_0_last_known_elr_rule_agrees_with_trunks_on_every_record_the_model_makes(bounds, monkeypatch):
    """docs/protocol.md, 4.0: the kafka-4.0 preset keeps trunk's last_known_elr rule. Every
    partition change of an exhaustive kafka-4.0 search is recomputed with 4.0's rule; no
    record tells them apart at these bounds (nor, run by hand, with admin elections, crashes
    or clean shutdowns), so the preset's verdicts do not depend on the choice."""
    import specs.controller as C
    from verifier.bfs import Limits, Options, explore
    build, seen, differ = C.build, [0], []

    def both(R, rules, ctrl, target_isr, **kw):
        change = build(R, rules, ctrl, target_isr, **kw)
        p, new = ctrl.partition, change.partition
        if R.epochs and new is not p:
            seen[0] += 1
            if set(_last_known_elr_4_0(p, new)) != set(new.last_known_elr):
                differ.append((p, new))
        return change
    monkeypatch.setattr(C, "build", both)
    model = Model(make_config("kafka-4.0", bounds=bounds))
    result = explore(model, model.properties, Limits(), Options(keep_going=True))
    assert result.explored_all and seen[0] > 1000
    assert not differ, differ[:3]
