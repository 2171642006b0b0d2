"""A link keeps its parent's low lane only (spark/rows.links, spark/paths.py): a trace's walk
back is exact even where two states of a level share the lane (a chance of 2^-64 a state,
forged here), and the links of a level hold 24 bytes a state before their labels."""
from __future__ import annotations

import numpy as np
import pytest

import spark.rows as R
from spark import kernel_tasks as KT
from spark import paths as P
from tests.spark.test_spark import PATHS, local, on_spark, small
from verifier.core.settings import Limits

CFG = ("pre-kip-966", None)
DEPTH = 5


@pytest.mark.parametrize("symmetry", PATHS)
def test_a_walk_back_that_meets_a_shared_lane_keeps_the_path_that_replays_to_the_state(spark_session, symmetry,
                                                                                       monkeypatch):
    """Every look-up of a parent lane also answers with a decoy, a state of the same level
    named first: the walk follows both, and the trace is the one without decoys, check's."""
    cfg = small(*CFG)
    want = local(cfg, DEPTH, symmetry)
    assert want.counterexamples
    seen = {"decoys": 0, "walks": 0}
    real_with_lane, real_paths = KT.KernelJob.with_lane, P.paths_to

    def with_decoy(job, chunks, lane):
        found = real_with_lane(job, chunks, lane)
        fps = [R.as_int(*f) for _, data in chunks for f in R.Rows(data, R.PART, KT._side(job).width, links=True).fps]
        decoys = [(f, *KT.find_link(job, chunks, f)) for f in fps if f not in {p[0] for p in found}][:1]
        seen["decoys"] += len(decoys)
        return decoys + found

    def counted(run, level, fp):
        paths = real_paths(run, level, fp)
        seen["walks"] += len(paths) > 1
        return paths

    monkeypatch.setattr(KT.KernelJob, "with_lane", with_decoy)
    monkeypatch.setattr(P, "paths_to", counted)
    got = on_spark(spark_session, cfg, Limits(max_depth=DEPTH), symmetry, partitions=2, driver_levels=0)
    assert seen["decoys"] and seen["walks"]               # the walks met shared lanes, and went on
    assert {n: t.steps for n, t in got.counterexamples.items()} == {n: t.steps for n, t in want.counterexamples.items()}


def test_a_walk_whose_paths_all_fail_to_replay_is_no_path(monkeypatch):
    """Two paths back, neither replaying to the state: a LookupError (the caller's
    UnconfirmedViolation), never the first path taken on trust."""
    monkeypatch.setattr(P, "paths_to", lambda run, level, fp: [(1, ["a"]), (2, ["b"])])
    monkeypatch.setattr(P, "replayed_fp", lambda run, root, labels: 99)
    with pytest.raises(LookupError, match="replays"):
        P.path_to(None, 1, 7)
    monkeypatch.setattr(P, "replayed_fp", lambda run, root, labels: 7 if root == 2 else 99)
    assert P.path_to(None, 1, 7) == (2, ["b"])


def test_a_links_record_holds_a_parents_low_lane_not_its_fingerprint():
    rng = np.random.default_rng(3)
    fps, parents = (rng.integers(0, 2**64, size=(40, 2), dtype=np.uint64) for _ in range(2))
    labels = np.zeros((40, R.LABEL), np.int32)
    data = R.links(fps, parents, labels)
    assert data[:8] == R.LINKS and len(data) == 8 + 16 + 24 * 40 + len(R._narrow(labels))
    rec = R.Rows(data, R.PART, 9, links=True)
    assert rec.parents is None and (rec.parent_lanes == parents[:, 1]).all()
