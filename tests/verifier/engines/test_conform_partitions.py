"""conform with several partitions (issue 59): the lifted model's walks against each release's own
controller driving a topic of two partitions (the oracle needs Maven and Maven Central: a machine
without them fails here with one line, it never skips).

- seeded walks of two partitions agree with every release (CI: the oldest and the newest), each
  partition's registration and ELR index entries compared after every step;
- F5 across partitions: the 16-step run of tests/specs/test_elr_index.py, where partition 1's
  stale ELR index entry becomes partition 0's and b3's next unclean registration writes partition
  0's record three times, agrees step for step with every release F5 names; a model without the
  index across partitions (specs/elr_index.py off) diverges from it, at the ELR index;
- the command line takes `--partitions` for walks and refuses scenario files with it."""
from __future__ import annotations

import json

import pytest

from specs import RELEASES, PartitionsModel, make_config
from tests.specs.test_elr_index import RUN
from verifier.core.settings import Settings
from verifier.engines.conform import run as C
from verifier.engines.conform.engine import Case, check
from verifier.engines.conform.oracle import Oracle, build

WALKED_IN_CI = {"3.9.2", "4.4.0"}
F5_RELEASES = ("4.0.2", "4.1.0", "4.1.2", "4.2.2", "4.3.1", "4.4.0")     # docs/FINDINGS.md, F5
SMALL = dict(bounds={"records": 1, "fences": 1, "lossy_crashes": 1, "isr_shrinks": 1, "admin_elections": 1,
                     "clean_shutdowns": 1, "max_leader_epoch": 4, "max_partition_epoch": 6})


def _release(version):
    rel = RELEASES[version]
    build(rel.version, rel.api)                  # Maven: fails (never skips) when it cannot build
    return rel


@pytest.mark.parametrize("version", [pytest.param(v, id=f"kafka-{v}", marks=() if v in WALKED_IN_CI else
                                                  pytest.mark.nightly) for v in sorted(RELEASES)])
def test_two_partitions_agree_with_every_release_on_seeded_walks(version):
    rel = _release(version)
    cfg = make_config(preset=rel.preset, partitions=2, **SMALL)
    own = C.Knobs(version=rel.version, api=rel.api, preset=rel.preset, walks=40, depth=40, seed=59)
    out = C.run(PartitionsModel(cfg, symmetry=False), (), Settings(knobs=own)).facts
    assert out.divergence is None, out.divergence and out.divergence.diffs
    assert out.walk_steps > 600
    # a partition's own steps and every broker event were compared, on both partitions
    for kind in ("produce", "deliver_alter_partition", "fence", "unfence", "restart", "controlled_shutdown",
                 "elect preferred"):
        assert out.ops.get(kind, 0) > 0, (kind, out.ops)


F5_BOUNDS = {"records": 0, "fences": 2, "config_changes": 2, "crashes": 2, "lossy_crashes": 0, "isr_shrinks": 0,
             "max_leader_epoch": 10, "max_partition_epoch": 30}        # tests/specs/test_elr_index.py's


def _f5_case(preset: str, index: bool = True) -> Case:
    """test_elr_index's run on the release's preset; `index` False: each partition's steps
    without the ELR index across partitions (specs/elr_index.py), a model that should diverge."""
    from specs import actions as A
    from specs.partitions import Partitions, labels_of
    model = PartitionsModel(make_config(preset=preset, min_isr=3, partitions=2, bounds=F5_BOUNDS), symmetry=False)
    s = start = model.init_states()[0]
    steps = []
    for name, part, arg in RUN:
        label = next(label for label, _ in model.successors(s) if _is(label, name, part, arg))
        after, error = model.apply(s, label)
        if not index:
            after = Partitions(*(A.step(model.one, x, mine)[0] if mine is not None else x
                                 for x, mine in zip(s, labels_of(label, 2))))
        steps.append((label, after, error))
        s = after
    return Case("F5 on two partitions", model, start, steps)


def _is(label, name, part, arg) -> bool:
    """Whether `label` is the run's step (as tests/specs/test_elr_index._step picks it)."""
    from specs.partitions import labels_of
    each = labels_of(label, 2)
    if label[0] != name or (part is not None and [q for q, x in enumerate(each) if x is not None] != [part]):
        return False
    return arg is None or each[part or 0][1] == arg


@pytest.mark.parametrize("version", F5_RELEASES)
def test_f5_across_two_partitions_is_what_every_release_it_names_does(version):
    rel = _release(version)
    case = _f5_case(rel.preset)
    with Oracle(rel.version, rel.api) as oracle:
        found, compared = check(oracle, case)
        assert found is None, found and found.diffs
        assert compared == len(RUN)
        states = oracle.run(case.model.kafka_start(case.initial),
                            [case.model.kafka_request(a, label, b) for (label, b, _), a in
                             zip(case.steps, [case.initial] + [b for _, b, _ in case.steps])])
        # partition 1's stale entry became partition 0's; b3's last registration: 3 records there
        assert states[10]["elr_index"]["1"] == {} and states[10]["elr_index"]["0"].get("3", 0) >= 1
        epochs = [int(x["partitions"]["0"]["partition_epoch"]) for x in states]
        assert epochs[-1] - epochs[-2] == 3
        without = _f5_case(rel.preset, index=False)
        diverged, _ = check(oracle, without)
        assert diverged is not None and any("partition 0" in d.field or "ELR index" in d.field for d in diverged.diffs)


def test_conform_takes_partitions_for_walks_and_refuses_files_with_them(cli, tmp_path):
    r = cli("conform", "--kafka", "4.4.0", "--partitions", "2", "--scenarios", "--out", str(tmp_path))
    assert r.returncode == 2 and "scenario files run one partition" in r.stderr, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = cli("conform", "--kafka", "4.4.0", "--partitions", "2", "--walks", "5", "--depth", "20", "--bound",
            "records=1", "--bound", "isr_shrinks=1", "--out", str(tmp_path))
    assert r.returncode in (0, 3), r.stdout + r.stderr         # 3: an action the 5 walks did not reach
    summary = json.loads(next(tmp_path.glob("*/conform.json")).read_text())
    assert summary["config"]["partitions"] == 2 and summary["counts"]["walk_steps"] > 0
