"""The manifest's fields for a links level (spark/store.py): each level's chunks are links, and
the last two levels also name their chunks with rows. A field that says otherwise is refused
with its reason (one line, exit 2, where spark-check loads it)."""
import json

import pytest

from spark.store import malformed


def level(k: int, states: int, rows: bool = True, **extra) -> dict:
    chunks = [[f"00000-{c:06d}", states // 2, "ab", "0" * 64] for c in range(2)]
    meta = {"level": k, "states": states, "chunks": chunks, "links": True,
            "totals": {"transitions": 0, "enabled": {}, "taken": {}, "terminal": 0, "found": {}, "seconds": 1.0}}
    if rows:
        meta["rows"] = [[key, n, s, "1" * 64] for key, n, s, _ in chunks]
    meta.update(extra)
    return meta


def manifest(*levels) -> dict:
    return {"partitions": 1, "levels": list(levels)}


def test_links_levels_with_and_without_their_rows_are_well_formed():
    good = manifest({**level(0, 2, rows=False), "totals": level(0, 2)["totals"]}, level(1, 0))
    good["levels"][1]["chunks"] = good["levels"][1]["rows"] = []
    assert malformed(good) == ""


@pytest.mark.parametrize("damage,why", [
    (lambda m: m.pop("links"), "rows are not its chunks'"),                       # rows of a level that is not links
    (lambda m: m.update(links=1), "links flag is not true"),
    (lambda m: m["rows"].pop(), "rows are not its chunks'"),                      # a chunk without its rows
    (lambda m: m["rows"][0].__setitem__(1, 7), "rows are not its chunks'"),       # other states than its links
    (lambda m: m["rows"][0].__setitem__(0, "00000-000009"), "rows are not its chunks'"),
    (lambda m: m["rows"][1].__setitem__(3, "sha"), "rows are not its chunks'"),
    (lambda m: m.update(rows="all"), "rows are not its chunks'")])
def test_a_links_levels_fields_that_disagree_are_refused(damage, why):
    meta = level(0, 4)
    meta["totals"]["taken"] = {}
    damage(meta)
    assert why in malformed(manifest(meta))


@pytest.mark.parametrize("partitions", [2, 4])
def test_a_partition_count_that_its_levels_contradict_is_refused(partitions):
    """A manifest whose partition count was changed (and signed again): its levels name one
    partition's chunks. Resumed, Spark read part files that do not exist and the run ended in a
    JVM stack trace; now it is one line, exit 2, before Spark starts."""
    m = manifest(level(0, 2))
    m["partitions"] = partitions
    assert malformed(m) == f"level 0's chunks are 1 partitions' where the run has {partitions}"


def test_a_level_copied_from_the_drivers_disk_is_what_hadoop_and_the_store_read(spark_session, tmp_path):
    """HadoopLevels.copy writes each owner's SequenceFile with spark/seqfile.write and has the
    JVM copy it: Hadoop's own reader (sc.sequenceFile) must read the records back, and the
    store's read and measure must see the chunks, each owner's in its own part file."""
    from spark import rows as R
    from spark.hadoopfs import open_store
    from spark.seqfile import BYTES, TEXT
    from spark.store import HadoopLevels, chunk_key, chunk_measure
    import numpy as np
    fs = open_store(spark_session, str(tmp_path / "store"))
    levels = HadoopLevels(spark_session, fs, partitions=2)
    rng = np.random.default_rng(5)

    def chunk(n):
        fps = rng.integers(0, 2**63, size=(n, 2), dtype=np.uint64)
        parents = rng.integers(0, 2**63, size=(n, 2), dtype=np.uint64)
        return R.links(fps, parents, np.zeros((n, R.LABEL), dtype=np.int32), True)
    made = {0: [(chunk_key(0, c), chunk(n)) for c, n in enumerate((300, 7))], 1: [(chunk_key(1, 0), chunk(1))]}
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    levels.copy(3, lambda owner: made[owner], str(scratch))
    assert list(scratch.iterdir()) == []                   # the local copies are gone
    hadoop = spark_session.sparkContext.sequenceFile(levels.url(3), TEXT, BYTES).collect()
    assert sorted((k, bytes(v)) for k, v in hadoop) == sorted(kv for owner in made.values() for kv in owner)
    assert sorted(levels.read(3).collect()) == sorted(kv for owner in made.values() for kv in owner)
    assert levels.measure(3) == {k: chunk_measure(v) for owner in made.values() for k, v in owner}


def test_a_checkpoint_of_the_format_before_is_refused_in_one_line_and_kept(cli, tmp_path):
    """Format 4's links kept a parent's whole fingerprint (format 5: its low lane,
    spark/rows.links): a run of it is not read as this format's, nor cleared; one line, exit 2."""
    import json
    from spark.store import VERSION
    ck = tmp_path / "ck"
    made = cli("spark-check", "--max-depth", "3", "--master", "local[2]", "--partitions", "2", "-q",
               "--checkpoint-dir", str(ck), "--out", str(tmp_path / "o1"))
    assert made.returncode == 3, made.stdout + made.stderr
    manifest = ck / "manifest.json"
    data = json.loads(manifest.read_text())
    assert data["version"] == VERSION == 5
    manifest.write_text(json.dumps(dict(data, version=4)))
    before = sorted(p.name for p in ck.rglob("*"))
    for resume in (["--resume"], []):
        r = cli("spark-check", "--max-depth", "3", "--master", "local[2]", "--partitions", "2", "-q",
                "--checkpoint-dir", str(ck), "--out", str(tmp_path / "o2"), *resume)
        assert r.returncode == 2, r.stdout + r.stderr
        (line,) = r.stderr.strip().splitlines()
        assert "of an earlier kraft-verify (format 4; this one reads 5)" in line and "fresh directory" in line
    assert sorted(p.name for p in ck.rglob("*")) == before


@pytest.mark.parametrize("readable", [True, False], ids=["file", "not-local"])
def test_a_manifest_the_jvm_renamed_into_place_as_it_died_is_what_the_stop_names(spark_session, tmp_path,
                                                                                 monkeypatch, readable):
    """The race CI caught at ddaa2da: the JVM wrote and renamed the manifest naming level 3,
    then died before py4j answered. The run said "keeps levels 0-2" of a checkpoint holding
    0-3. Read from this machine's disk (file://), the stop names the levels the manifest does
    and the run keeps them; where the manifest cannot be read without the JVM, it names both."""
    import spark.session as session
    from py4j.protocol import Py4JError
    from tests.spark.test_spark import checkpoint, local, on_spark, small
    from verifier.core.settings import Limits
    cfg = small()
    store = checkpoint(spark_session, tmp_path / "ck", cfg)
    real = store.fs.write

    def write(name, data, **kw):
        real(name, data, **kw)
        if name == "manifest.json" and len(json.loads(data)["levels"]) == 4:
            monkeypatch.setattr(session, "jvm_alive", lambda: False)
            store.fs._call("write the manifest", lambda: (_ for _ in ()).throw(Py4JError("cut")))
    monkeypatch.setattr(store.fs, "write", write)
    if not readable:
        monkeypatch.setattr(store.fs, "local_file", lambda name: None)
    got = on_spark(spark_session, cfg, Limits(max_depth=6), store=store, partitions=2, driver_levels=0)
    assert got.status == "stopped" and got.stop_reason.startswith("Spark's JVM exited"), got.stop_reason
    assert len(json.loads((tmp_path / "ck" / "manifest.json").read_text())["levels"]) == 4
    want = local(cfg, 6).states_per_level
    if readable:
        assert "the checkpoint keeps levels 0-3: rerun with --resume" in got.stop_reason, got.stop_reason
        assert got.states_per_level == want[:4]
    else:
        assert "the checkpoint keeps levels 0-2 (or 0-3: the JVM died as it wrote the manifest naming level 3): " \
               "rerun with --resume" in got.stop_reason, got.stop_reason
        assert got.states_per_level == want[:3]
