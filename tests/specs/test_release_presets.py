"""Release presets (specs/catalogue.toml, docs/protocol.md "Release differences") replay the
scenarios written for the newest Kafka (specs/scenarios/, Kafka's own controller tests and the
project's walk-throughs), and differ exactly where their release's code does:
- kafka-4.4, -4.3, -4.2, -4.1 (and `kafka`): every one;
- kafka-4.1.0 and kafka-4.0 keep 4.0's last_known_elr rule (written when a record empties the
  ISR), which two of Kafka's PartitionChangeBuilder tests, written for the newer rule, tell apart;
- kafka-4.0 also elects a fenced last known leader (before KAFKA-19522): two more;
- kafka-3.9: every one that uses no ELR feature, since 3.9 runs ELR only at an unstable metadata version.
`kraft-verify conform` checks each preset against its release's own controller code
(tests/verifier/engines/test_conform.py); this file checks the presets' rules without a JVM."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specs import NEWEST_RELEASE, PRESETS, RELEASES, make_config, release

from tests.bind import run_file

ROOT = Path(__file__).resolve().parents[2]
TRUNK = sorted(p for p in (ROOT / "specs/scenarios").glob("*.json")
               if json.loads(p.read_text())["config"].get("preset", "kafka") == "kafka")
KAFKA_19522 = {"kafka-pcbt-elr-elect-last-known-leader-on-unfence.json",
               "kafka-pcbt-elr-not-eligible-last-known-leader.json"}
LKE_RULE = {"kafka-pcbt-elr-isr-expand-above-min-isr-default-mode.json",
            "kafka-pcbt-elr-lke-populated-when-no-leader.json"}
DIFFERS = {"kafka-4.1.0": LKE_RULE, "kafka-4.0": LKE_RULE | KAFKA_19522}


def _uses_elr(path: Path) -> bool:
    text = json.dumps(json.loads(path.read_text()))
    return bool(re.search(r'"(elr|last_known_elr)": \[\d', text)) or "clean_shutdown" in text


def test_every_release_is_a_preset_and_kafka_is_the_newest():
    assert set(RELEASES) == {"3.9.2", "4.0.2", "4.1.0", "4.1.2", "4.2.2", "4.3.1", "4.4.0"}
    assert NEWEST_RELEASE == "4.4.0"
    assert {r.preset for r in RELEASES.values()} == {p for p in PRESETS if p.startswith("kafka-")}
    assert make_config("kafka").rules == make_config(RELEASES[NEWEST_RELEASE].preset).rules
    assert release("4.1").version == "4.1.2" and release("4.1.x").version == "4.1.2"
    assert release("4.1.0").preset == "kafka-4.1.0" and release("4.5") is None and release("3.8.1") is None


def test_the_trunk_scenarios_include_kafkas_own_tests():
    assert sum(p.name.startswith("kafka-") for p in TRUNK) >= 30


@pytest.mark.parametrize("preset", ["kafka", "kafka-4.4", "kafka-4.3", "kafka-4.2", "kafka-4.1", "kafka-4.1.0",
                                    "kafka-4.0"])
@pytest.mark.parametrize("path", TRUNK, ids=[p.stem for p in TRUNK])
def test_trunk_scenarios_under_the_4_x_releases(preset, path):
    result = run_file(str(path), preset=preset)
    if path.name not in DIFFERS.get(preset, ()):
        assert result.ok, (preset, path.name, result.failure)
        return
    assert not result.ok
    diffs = {name: (want, got) for name, want, got in result.failure.diffs}
    if path.name in KAFKA_19522:      # 4.0 elects the fenced last known leader; newer releases wait
        assert diffs["leader"][0] == -1 and diffs["leader"][1] != -1
    else:                             # 4.0's rule writes no last_known_elr where 4.1.1's writes one
        assert set(diffs) == {"last_known_elr"} and diffs["last_known_elr"][1] == []


@pytest.mark.parametrize("path", [p for p in TRUNK if not _uses_elr(p)], ids=lambda p: p.stem)
def test_scenarios_without_elr_replay_under_3_9(path):
    result = run_file(str(path), preset="kafka-3.9")
    assert result.ok, result.failure


def test_the_release_rules_read_from_the_code():
    """What each release changes, as the catalogue states it (docs/protocol.md gives the
    classes and methods each was read from)."""
    rules = {p: make_config(p).rules for p in ("kafka-3.9", "kafka-4.0", "kafka-4.1.0", "kafka-4.1", "kafka-4.2",
                                               "kafka-4.3", "kafka-4.4")}
    assert [p for p, r in rules.items() if r.reassignment_completes_once_adding_in_isr] == ["kafka-4.3", "kafka-4.4"]
    assert [p for p, r in rules.items() if r.last_known_elr_set_by_empty_isr] == ["kafka-3.9", "kafka-4.0",
                                                                                   "kafka-4.1.0"]
    assert [p for p, r in rules.items() if not r.last_known_leader_must_be_acceptable] == ["kafka-3.9", "kafka-4.0"]
    assert [p for p, r in rules.items() if not r.elr] == ["kafka-3.9"]
    assert not any(r.designated_elections or r.unclean_recovery_strategy for r in rules.values())


@pytest.mark.parametrize("preset,isr", [("kafka-3.9", [1, 3, 2]), ("kafka-4.0", [1, 3, 2]), ("kafka-4.1.0", [1, 3, 2]),
                                        ("kafka-4.1", [1, 3, 2]), ("kafka-4.2", [1, 2, 3]), ("kafka-4.4", [1, 2, 3])])
def test_a_leader_appends_to_its_isr_up_to_4_1_and_sorts_it_from_4_2(preset, isr):
    """Partition.prepareIsrExpand: `isr + newInSyncReplicaId` on a Scala immutable Set (insertion
    order) through 4.1.2, on the Java set's Scala view (hash order) from 4.2.1. A real 4.0.2
    cluster wrote [1,3,2] for [1,3] plus b2 (cluster-conform --kafka 4.0.2 --walks 1 --seed 60)."""
    from specs import Model, make_config
    from specs.actions import op_label
    m = Model(make_config(preset), symmetry=False)
    s = m.init_states()[0] if isinstance(m.init_states(), list) else next(iter(m.init_states()))
    for op in ({"op": "fence", "broker": 2}, {"op": "shrink_isr", "broker": 3}, {"op": "deliver_alter_partition"},
               {"op": "fetch", "broker": 3}, {"op": "expand_isr", "broker": 3}, {"op": "deliver_alter_partition"},
               {"op": "fetch", "broker": 2}, {"op": "unfence", "broker": 2}, {"op": "expand_isr", "broker": 2},
               {"op": "deliver_alter_partition"}):
        s, error = m.apply(s, op_label(op))
        assert error is None or op["op"] == "fence", (op, error)
    assert list(s.ctrl.partition.isr) == isr
