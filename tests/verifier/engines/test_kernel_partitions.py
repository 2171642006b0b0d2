"""The compiled search over rows of several partitions (specs/kernel/lifted_rows.py) answers as
the interpreted search of specs/partitions.PartitionsModel does: the same counts, levels,
coverage, verdicts and counterexamples (step for step, the representatives of the symmetry over
partitions being the same), with and without that symmetry; and a violation only a partition's
own property shows is found in the partition it is in."""
from __future__ import annotations

import pytest

from invariants import REGISTRY
from specs import PartitionsModel, lift_property
from specs.config import make_config
from verifier.cli import binding
from verifier.core.settings import Limits, Options, Settings

PROPERTIES = [lift_property(p) for p in REGISTRY]
CONFIGS = {
    # a lossy crash (its fallback crash where a partition has nothing to lose), a mutant found in partition 0
    "lossy-mutant": (2, dict(replicas=(1, 2), min_isr=1, mutant="unfence-adds-to-isr", bounds={
        "records": 1, "fences": 1, "lossy_crashes": 1, "isr_shrinks": 0, "max_leader_epoch": 2,
        "max_partition_epoch": 3})),
    # controlled shutdowns of a broker leading another partition, admin elections (each partition's own)
    "controlled-shutdowns": (2, dict(replicas=(1, 2), min_isr=1, mutant="fenced-elr-elected", bounds={
        "records": 1, "fences": 1, "clean_shutdowns": 1, "admin_elections": 1, "lossy_crashes": 0,
        "isr_shrinks": 0, "max_leader_epoch": 3, "max_partition_epoch": 4})),
    # a config change: the ELR index across partitions on (a ClearElrRecord's stale entries), partition 0 kept in place
    "config-change": (2, dict(replicas=(1, 2), min_isr=2, bounds={
        "records": 0, "fences": 1, "config_changes": 1, "crashes": 1, "lossy_crashes": 0, "isr_shrinks": 0,
        "max_leader_epoch": 3, "max_partition_epoch": 5})),
    # F5's path (tests/specs/test_elr_index.py on two replicas): the stale entries move to partition 0
    "index-moves": (2, dict(replicas=(1, 2), min_isr=2, bounds={
        "records": 0, "fences": 2, "config_changes": 2, "crashes": 1, "lossy_crashes": 0, "isr_shrinks": 0,
        "max_leader_epoch": 2, "max_partition_epoch": 6})),
    "three-partitions": (3, dict(replicas=(1, 2), min_isr=1, bounds={
        "records": 1, "fences": 1, "lossy_crashes": 1, "isr_shrinks": 0, "max_leader_epoch": 2,
        "max_partition_epoch": 2})),
}


def _facts(r):
    traces = {n: [(label, t) for label, t in t.steps] for n, t in r.counterexamples.items()}
    return (r.status, r.distinct_states, r.transitions, r.states_per_level, r.terminal_states, dict(r.enabled),
            dict(r.taken), {v.name: v.status for v in r.verdicts}, traces)


def _run(name, model, **knobs):
    settings = Settings(limits=Limits(), options=Options(keep_going=True),
                        knobs=binding.knobs(name, **knobs) if knobs else None)
    return binding.engine(name)(model, PROPERTIES, settings)


NIGHTLY = {("controlled-shutdowns", True), ("controlled-shutdowns", False), ("three-partitions", False),   # 24-42 s
           ("index-moves", True), ("index-moves", False)}                                            # 256,630 states


@pytest.mark.parametrize("name, symmetry", [
    pytest.param(n, sym, marks=pytest.mark.nightly) if (n, sym) in NIGHTLY else (n, sym)
    for n in CONFIGS for sym in (True, False)])
def test_the_compiled_search_of_several_partitions_is_the_interpreted_one(name, symmetry):
    parts, kw = CONFIGS[name]
    cfg = make_config(**kw, partitions=parts)
    python = _facts(_run("bfs", PartitionsModel(cfg, symmetry=symmetry)))
    kernel = _facts(_run("kernel", PartitionsModel(cfg, symmetry=symmetry), threads=1))
    assert python[1] > 500
    assert kernel == python
    if kw.get("mutant"):
        assert python[0] == "violation" and python[8]


def test_the_symmetry_over_partitions_keeps_the_verdicts_and_saves_states():
    parts, kw = CONFIGS["three-partitions"]
    cfg = make_config(**kw, partitions=parts)
    runs = [_facts(_run("kernel", PartitionsModel(cfg, symmetry=sym), threads=1)) for sym in (True, False)]
    assert runs[0][7] == runs[1][7] and len(runs[0][3]) == len(runs[1][3])
    assert runs[1][1] > 2 * runs[0][1]


def test_the_compiled_search_refuses_what_it_does_not_take_in_one_line():
    from verifier.core.exitcodes import InputError
    with pytest.raises(InputError, match="several partitions on one thread"):
        _run("kernel", PartitionsModel(make_config(partitions=2)), threads=2)


def test_benchmarks_quotes_the_recorded_exhaustive_runs_of_several_partitions():
    """BENCHMARKS.md's rows for `check --partitions` on the default bounds (and three partitions)
    are bench/partitions_bench.py --exhaust's recorded run, and one partition's check equals today's."""
    import json
    from pathlib import Path
    root = Path(__file__).resolve().parents[3]
    rows = json.loads((root / "bench/results/issue59/exhaust.json").read_text())
    bench = (root / "BENCHMARKS.md").read_text()
    runs = [r for r in rows if "args" in r]
    assert {tuple(r["args"][:2]) for r in runs} == {("--partitions", "2"), ("--partitions", "3")}
    for r in runs:
        assert r["exit"] == 0 and r["engine"] == "kernel" and set(r["verdicts"].values()) == {"holds"}
        row = (f"| `check {' '.join(r['args'])}` | {r['distinct_states']:,} | {r['transitions']:,} | {r['depth']} | "
               f"{r['seconds']:.1f} s | {r['states_per_second']:,} | {r['peak_rss_mb'] / 1024:.1f} GB |")
        assert row in bench, row
    (same,) = [r for r in rows if "equal" in r]
    assert all(same["equal"].values()) and same["today"]["distinct_states"] == 324_861
