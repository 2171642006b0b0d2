"""A violation's path back to its root through the levels' links (spark/rows.links).

A link keeps its parent's low lane only: it names the parent's owner (KernelJob.owner) and, but
for a chance of 2^-64 a state of the parent's level, the parent itself. So the walk back keeps
every state of the level before that has the lane, and when more than one path reaches a root,
the one kept is the path whose replay from its root ends in the state the walk began at (its
fingerprint, as the kernel computes it): exact however the lanes fall. Why lanes: the parent's
whole fingerprint cost 8 bytes more a state in every level's links, a fifth of what a
billion-state run keeps in its store (BENCHMARKS.md, "The billion config on HDFS, run 4").
"""
from __future__ import annotations

MASK = (1 << 64) - 1
MAX_PATHS = 64        # paths followed at once: more means altered levels, not lanes that met by chance


def path_to(run, level: int, fp: int) -> tuple[int, list]:
    """(root fingerprint, labels from the root) of state `fp` of level `level`."""
    paths = paths_to(run, level, fp)
    if len(paths) == 1:
        return paths[0]
    for root_fp, labels in paths:
        if replayed_fp(run, root_fp, labels) == fp:
            return root_fp, labels
    raise LookupError(f"no path the links allow back from state {fp:x} replays to it")


def paths_to(run, level: int, fp: int) -> list[tuple[int, list]]:
    """Every (root fingerprint, labels from the root) the links allow back from state `fp`;
    each level's owner's chunks are read once (a parent comes with its own link)."""
    job = run.job
    lane, label = job.link(_chunks(run, level, job.owner(fp)), fp) if level else (None, None)
    frontier = [(fp, lane, label, [])]     # a state, its parent's lane, its label, labels after it
    for k in range(level, 0, -1):
        back = []
        for _, lane, label, labels in frontier:
            if k == 1:
                parents = [(r, None, None) for r in sorted(run.roots) if r & MASK == lane]
            else:
                parents = job.with_lane(_chunks(run, k - 1, job.owner(lane)), lane)
            back += [(p, up, above, [label] + labels) for p, up, above in parents]
        if not back:
            raise LookupError(f"no state of level {k - 1} has the parent lane a link of level {k} names")
        if len(back) > MAX_PATHS:
            raise LookupError(f"{len(back)} states of level {k - 1} share a link's parent lane")
        frontier = back
    return [(state, labels) for state, _, _, labels in frontier]


def replayed_fp(run, root_fp: int, labels: list) -> int:
    """The kernel's fingerprint of the state the labels reach from the root (each step's state
    as the search kept it: its orbit's representative under symmetry)."""
    from spark import compiled as X
    from spark import rows as R
    from spark.kernel_tasks import _side
    model, canonical = run.model, run.model.canonical
    state = run.roots[root_fp][0]
    state = canonical(state) if canonical else state
    for label in labels:
        state = model.step(state, label)
        state = canonical(state) if canonical else state
    side = _side(run.job)
    row = side.row_of(state)
    return R.as_int(*X.row_fp(row, side.ctrl, side.dig))


def _chunks(run, k: int, owner: int) -> list:
    """One owner's chunks of level k: held by the driver, or read where they are."""
    return run.held[k][owner] if k in run.held else run.levels.read_owner(k, owner)
