"""spark-check's levels through Spark's shuffle, where executors share no disk (a cluster; on
one machine the kernel's path uses files instead: spark/chain.py, spark/local_files.py).

Per level one job: expand the level's chunks (wherever they are read), shuffle the blocks to
their owners (`fingerprint mod P`), own them beside the visited fingerprints (a union of RDDs
with one partitioner, so owner p's data is one partition); the next level's chunks go to the
store. A second, small job reads the head of each owner's output (its meta and fingerprints)
from Spark's cache: the next level's visited entry. The driver's decisions between levels
stay explore._Run's; this module is the job it runs and the runs it keeps.
"""
from __future__ import annotations

from spark.session import unpersist
from spark.store import owner_of


def level(run, found: frozenset, level: int) -> list:
    """explore._Run._expand's job off a local master: own level + 1 from the shuffled blocks
    of `level`. Returns each owner's (chunk metas, taken, events, expand counts)."""
    from pyspark import StorageLevel
    job, n, sc = run.job, run.job.partitions, run.spark.sparkContext
    keep = storage(sc)
    if not run.visited:              # every level so far was made on the driver
        pairs = [(p, ("F", b)) for p, blobs in enumerate(run.held_visited) for b in blobs]
        run.visited = [sc.parallelize(pairs, n).partitionBy(n, owner_of).persist(keep)]
        run.sizes = [sum(m["states"] for m in run.metas[:level + 1])]
        run.held_visited = None
    if level in run.held:
        frontier = sc.parallelize([kv for chunks in run.held[level] for kv in chunks], n)
    elif run.cached is not None and run.cached[0] == level:      # what the last job made: no read back
        frontier = run.cached[1].filter(_is_chunk).map(_chunk)
    else:                                                          # a resumed run's first level
        frontier = run.levels.read(level, rows=bool(run.metas[level].get("links")))
    blocks = frontier.mapPartitions(lambda it: job.expand(found, it)).partitionBy(n, owner_of)
    aligned = blocks
    for v in run.visited:
        if v._jrdd_deserializer != blocks._jrdd_deserializer:   # union would copy the blocks through Python
            raise RuntimeError("a visited run is not in the shuffled blocks' format")
        aligned = aligned.union(v)
    if aligned.getNumPartitions() != n:      # the union must put owner p's data in one partition
        raise RuntimeError("Spark did not align the visited set with the shuffled blocks")
    owned = aligned.mapPartitionsWithIndex(lambda i, it: job.own(found, i, it), preservesPartitioning=True)
    # kept for its heads and as the next level's frontier (the store is read only on resume)
    owned = owned.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        run.levels.write(level + 1, owned.filter(_is_chunk).map(_chunk), source=owned)
        heads = _as_shuffled(owned.mapPartitions(_heads, preservesPartitioning=True)).persist(keep)
        metas = [v[1] for _, v in heads.collect() if v[0] == "M"]
    except BaseException:
        unpersist(owned)
        raise
    if run.cached is not None and not getattr(run.levels, "keeps_source", False):
        unpersist(run.cached[1])
    run.cached = (level + 1, owned)
    run.visited.append(heads)
    run.sizes.append(sum(c[1] for m in metas for c in m[0]))
    compact(run)
    return metas


def compact(run) -> None:
    """Merge the newest visited runs while the newer holds at least half the older's states,
    so an owner reads a few runs a level, not one per level (runs halve in size from the
    oldest; each state is merged about log2(levels) times). Only runs the path can merge."""
    merge, keep = run.job.merge, storage(run.spark.sparkContext)
    while merge is not None and len(run.visited) >= 2 and 2 * run.sizes[-1] >= run.sizes[-2]:
        older, newer = run.visited[-2], run.visited[-1]
        both = older.union(newer)
        if both.getNumPartitions() != run.job.partitions:     # not aligned: left as they are
            return
        merged = _as_shuffled(both.mapPartitions(merge, preservesPartitioning=True)).persist(keep)
        merged.count()
        unpersist(older)
        unpersist(newer)
        run.visited[-2:] = [merged]
        run.sizes[-2:] = [run.sizes[-2] + run.sizes[-1]]


def storage(sc):
    """How the visited set is kept: on a cluster, twice (an executor lost costs no
    recomputation back through the levels); locally once."""
    from pyspark import StorageLevel
    return StorageLevel.MEMORY_AND_DISK if sc.master.startswith("local") else StorageLevel.MEMORY_AND_DISK_2


def _is_chunk(kv) -> bool:
    return kv[1][0] == "C"


def _chunk(kv):
    return kv[1][1], kv[1][2]


def _as_shuffled(rdd):
    """`rdd` written in the format partitionBy's output is read in (a visited run is unioned
    with the shuffled blocks, and PySpark's union of two formats copies both through Python
    again: a fifth of a level's time)."""
    from pyspark.serializers import BatchedSerializer
    rdd._jrdd_deserializer = BatchedSerializer(rdd.ctx._unbatched_serializer)
    return rdd


def _heads(items):
    """An owner's meta and fingerprints: the first two records own yields."""
    for _, item in zip(range(2), items):
        yield item
