"""The controller's ELR index across two partitions (specs/elr_index.py; F5 in docs/FINDINGS.md):
partition 1's stale entry for a broker becomes partition 0's when the broker leaves partition 1's
ELR, so its next unclean registration writes partition 0's record three times (its ISR pass, its
own stale entry, the one from partition 1) where one partition's F5 writes it twice."""
from __future__ import annotations

from specs import make_config
from specs import partitions as P
from specs.kernel.lift import LiftedKernel

CFG = make_config(min_isr=3, bounds={"records": 0, "fences": 2, "config_changes": 2, "crashes": 2, "lossy_crashes": 0,
                                     "isr_shrinks": 0, "max_leader_epoch": 10, "max_partition_epoch": 30})
# (action, the partition that alone takes it or None for every partition, its broker or value)
RUN = [("fence", None, 3), ("set_min_isr", None, 2), ("unfence", None, 3), ("fetch", 1, 3), ("expand_isr", 1, None),
       ("deliver_alter_partition", 1, None), ("set_min_isr", None, 3), ("fence", None, 3), ("crash", None, 3),
       ("restart", None, 3), ("unfence", None, 3), ("fetch", 0, 3), ("expand_isr", 0, None),
       ("deliver_alter_partition", 0, None), ("crash", None, 3), ("restart", None, 3)]


def _step(s, name, part, arg):
    """The one step of `name` the run takes (it must be enabled)."""
    for label, t in P.successors(CFG, s):
        each = P.labels_of(label, 2)
        if label[0] != name or (part is not None and [q for q, x in enumerate(each) if x is not None] != [part]):
            continue
        if arg is None or each[part or 0][1] == arg:
            return label, t
    raise AssertionError(f"{name} is not enabled in {s}")


def test_a_stale_entry_of_partition_1_becomes_partition_0s_and_its_record_is_written_three_times():
    lk = LiftedKernel(CFG, 2)
    s, states = P.init_states(CFG, 2)[0], []
    for name, part, arg in RUN:
        label, t = _step(s, name, part, arg)
        assert (label, t) in lk.successors(s)                 # the compiled join takes the same step
        assert P.step(CFG, s, label) == t                     # and a trace rebuilt with it
        s = t
        states.append(t)
    cleared = [tuple(part.ctrl.partition.cleared_elr for part in t) for t in states]
    epochs = [tuple(part.ctrl.partition.partition_epoch for part in t) for t in states]
    assert cleared[1] == ((3,), (3,))                        # the ClearElrRecord leaves b3's entries
    assert states[7][1].ctrl.partition.elr == (3,)           # b3 rejoins partition 1's ELR: listed twice
    assert cleared[9] == ((3, 3), ())                        # it leaves it: partition 1's stale entry is 0's
    assert epochs[9][1] - epochs[8][1] == 2                  # one partition's F5 there: two records
    assert epochs[9][0] == epochs[8][0]                      # partition 0 visited for nothing
    assert epochs[15][0] - epochs[14][0] == 3                # b3's next unclean registration: three records
    assert states[15][0].ctrl.partition.isr == (1, 2)


def test_with_config_changes_partition_0_is_not_interchangeable():
    """Its stale entries come from the other partitions, so the symmetry over partitions keeps
    it in place where a ClearElrRecord can happen, and sorts them all where none can."""
    s = P.init_states(CFG, 2)[0]
    swapped = P.Partitions(s[0]._replace(hist=s[0].hist._replace(unclean_elections=1)), s[1])
    assert P.PartitionsModel(CFG, 2).canonical(swapped) == swapped
    still = make_config(bounds={"config_changes": 0})
    assert P.PartitionsModel(still, 2).canonical(swapped) == P.Partitions(s[1], swapped[0])


def test_the_symmetry_over_the_other_partitions_keeps_every_verdict():
    """Three partitions with a config change (partitions 1 and 2 sorted, 0 in place): the same
    violations at the same lengths and depth as the unreduced search, fewer states."""
    from invariants import REGISTRY
    from verifier.core.settings import Options
    from verifier.engines.bfs import explore
    cfg = make_config(replicas=(1, 2), min_isr=2, mutant="unfence-adds-to-isr", bounds={
        "records": 1, "fences": 1, "lossy_crashes": 0, "config_changes": 1, "isr_shrinks": 0, "max_leader_epoch": 2,
        "max_partition_epoch": 3})
    lifted = [P.lift_property(inv) for inv in REGISTRY]
    runs = [explore(P.PartitionsModel(cfg, 3, symmetry=sym), lifted, options=Options(keep_going=True))
            for sym in (True, False)]
    found = [{name: len(t.steps) for name, t in r.counterexamples.items()} for r in runs]
    assert found[0] == found[1] and found[0]
    assert runs[0].depth == runs[1].depth and runs[0].distinct_states < runs[1].distinct_states
