"""The compiled join of several partitions (specs/kernel/lifted.py) gives every state of small
configs the same steps, labels, states and order as specs/partitions.py, which joins the
one-partition model's steps in Python and checks that the partitions agree on what they share."""
from __future__ import annotations

import pytest

from specs import make_config
from specs import partitions as P
from specs.actions.labels import LEADS_ELSEWHERE
from specs.kernel.lift import LiftedKernel

CONFIGS = {
    "two-replicas-lossy": (2, dict(replicas=(1, 2), min_isr=1, bounds={
        "records": 1, "fences": 1, "lossy_crashes": 1, "isr_shrinks": 0, "max_leader_epoch": 1,
        "max_partition_epoch": 2})),
    "three-replicas": (2, dict(bounds={"records": 1, "fences": 1, "lossy_crashes": 0, "isr_shrinks": 0,
                                       "max_leader_epoch": 1, "max_partition_epoch": 1})),
    "any-candidate-fences": (2, dict(flags={"any_candidate_elections": True}, bounds={
        "records": 0, "fences": 1, "lossy_crashes": 0, "isr_shrinks": 0, "max_leader_epoch": 2,
        "max_partition_epoch": 3})),
    "controlled-shutdowns": (2, dict(replicas=(1, 2), min_isr=1, bounds={
        "records": 0, "fences": 1, "clean_shutdowns": 1, "admin_elections": 1, "lossy_crashes": 0, "isr_shrinks": 0,
        "max_leader_epoch": 3, "max_partition_epoch": 4})),
    "unclean-elections": (2, dict(replicas=(1, 2), min_isr=1, bounds={
        "records": 0, "fences": 1, "config_changes": 1, "crashes": 1, "lossy_crashes": 0, "isr_shrinks": 0,
        "max_leader_epoch": 2, "max_partition_epoch": 3})),
    "periodic-preferred": (2, dict(min_isr=1, flags={"auto_leader_rebalance": True}, bounds={
        "records": 0, "fences": 1, "lossy_crashes": 0, "isr_shrinks": 1, "max_leader_epoch": 2,
        "max_partition_epoch": 3})),
    "three-partitions": (3, dict(replicas=(1, 2), min_isr=1, bounds={
        "records": 1, "fences": 1, "lossy_crashes": 0, "isr_shrinks": 0, "max_leader_epoch": 1,
        "max_partition_epoch": 1})),
}


NIGHTLY = {"three-replicas", "two-replicas-lossy", "unclean-elections", "three-partitions"}   # 10-19 s each, one core


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.nightly) if n in NIGHTLY else n for n in CONFIGS])
def test_the_compiled_join_is_the_python_lift_on_every_state(name):
    parts, kw = CONFIGS[name]
    cfg = make_config(**kw)
    lk = LiftedKernel(cfg, parts)
    seen, level, kinds = set(), P.init_states(cfg, parts), set()
    elsewhere = periodic = preferred = cut = 0
    seen.update(level)
    while level:
        nxt = []
        for s in level:
            python = list(P.successors(cfg, s))
            compiled = lk.successors(s)
            assert compiled == python, s
            assert [label for label, _ in lk.successors(s, unbounded=True)] == \
                [label for label, _ in P.successors(cfg, s, unbounded=True)], s
            periodic += sum(label[0] == "periodic_unclean_election" for label, _ in python)
            preferred += sum(label[0] == "periodic_preferred_election" for label, _ in python)
            cut += _cut_by_a_bound(cfg, s, python)
            elsewhere += sum(LEADS_ELSEWHERE in (P.labels_of(label, parts)[q] or ()) for label, _ in python
                             for q in range(parts))
            for label, t in python:
                kinds.add(label[-1][0] if isinstance(label[-1], tuple) and label[-1][:1] in (("partition",), ("each",))
                          else "alike")
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        level = nxt
    assert len(seen) > 100 and {"partition", "alike"} <= kinds
    if name in ("two-replicas-lossy", "any-candidate-fences", "controlled-shutdowns"):
        assert "each" in kinds, name                  # a fallback, a partition's own choice, an elsewhere
    if name == "unclean-elections":                 # unclean elections switched on while leaderless
        assert periodic and "each" in kinds, "no periodic unclean election in one partition alone was met"
    if name == "controlled-shutdowns":
        assert elsewhere, "no controlled shutdown of a broker leading another partition was met"
    if name == "periodic-preferred":                # one partition's election beyond the bounds stops the event
        assert preferred and cut, (preferred, cut)


def _cut_by_a_bound(cfg, s, python) -> int:
    """1 where a partition would take the periodic preferred election only beyond the bounds while
    another takes it within them: the lifted event is then not taken at all (specs/partitions.py)."""
    from specs import actions as A
    name = "periodic_preferred_election"
    within = [bool(list(A.action_successors(cfg, part, name, False))) for part in s]
    beyond = [not w and bool(list(A.action_successors(cfg, part, name, True))) for part, w in zip(s, within)]
    if any(within) and any(beyond):
        assert not any(label[0] == name for label, _ in python), s
        return 1
    return 0
