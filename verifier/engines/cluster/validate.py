"""`kraft-verify validate-log`: a real cluster's own metadata log checked record by record
(metalog.py), read with the release's own classes.

The records are decoded by Kafka's MetadataRecordSerde in a JVM (oracle/cluster's MetadataTail
`--once`: the cluster engine's Kafka jars, fetched at build time), printed as JSON lines and
folded here as they arrive: memory is bounded by the partitions and brokers, not the records.
A directory is read as the controller keeps it (its snapshots, then its segments: a snapshot is
a whole state, and the segment records it already holds are not applied twice).

Each batch's partition changes must be what one controller event of the release's model writes
(Model.explain_change, specs/metadata.py); the metadata invariants and the unclean elections are
checked at each record (metalog.py).
"""
from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from verifier.core import knobs
from verifier.core.exitcodes import InputError
from verifier.engines.cluster.history import History, targets
from verifier.engines.cluster.metalog import CHECKS, KEPT, Metadata

SNAPSHOT = re.compile(r"^(\d{20})-\d+\.checkpoint$")


@knobs.declare("validate-log")
class Knobs(knobs.Knobs):
    """What is read, and with which release's classes."""
    version: str = ""  # the Kafka release whose jars decode the records
    paths: tuple = ()  # metadata log directories or segment and snapshot files
    default_min_isr: int = knobs.knob(1, least=1)  # min.insync.replicas where the log sets none
    partitions: tuple = ()  # the topics and topic-partitions checked (empty: every one)


def _batches(classpath: str, paths: tuple):
    """(file, batch) per batch the reader prints; InputError (one line) when it cannot read one."""
    proc = subprocess.Popen(["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath,
                             "io.kraftverify.cluster.MetadataTail", "--once", *map(str, paths)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    current = ""
    try:
        for line in proc.stdout:
            try:
                item = json.loads(line)
            except ValueError:
                raise InputError(f"the metadata reader printed something that is not a batch: {line[:100]!r}") from None
            if "file" in item:
                current = item["file"]
            else:
                yield current, item
        err = proc.stderr.read().strip()
        if proc.wait() != 0:
            raise InputError((err.splitlines() or ["the metadata reader failed"])[-1][:300])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def fold(stream, default_min_isr: int = 1, progress=None, explainer=None, start=None,
         only: frozenset = None) -> tuple[Metadata, int, list]:
    """The (file, batch) items of a log folded in order: (the state with its findings, batches,
    files). A snapshot starts the state again (it is a whole state, its records no event's) and
    the segment records before its end, which it holds, are not applied twice. `explainer`
    (Model.explain_change): each segment batch's partition changes must be a controller event's.
    `start` makes the empty state (Metadata; history.py's recording fold), which may say it has
    seen enough (`finished`)."""
    start = start or (lambda: Metadata(default_min_isr, only=only))
    began, meta, batches, skip_below, files = time.monotonic(), start(), 0, -1, []
    whole = False                        # reading a snapshot
    for file, batch in stream:
        if not files or files[-1] != file:
            files.append(file)
            snap = SNAPSHOT.match(Path(file).name)
            whole = snap is not None
            if whole:
                meta, skip_below = start(), int(snap.group(1))
            meta.explainer = None if whole else explainer
        batches += 1
        meta.apply_batch([rec for rec in batch["records"] if whole or rec["offset"] >= skip_below])
        if getattr(meta, "finished", False):
            break
        if progress and batches % 1000 == 0:
            from verifier.core.result import Progress
            progress(Progress(0, 0, 0, 0, time.monotonic() - began, note=f"{meta.records:,} records read"))
    return meta, batches, files


def run(model, properties=(), settings=None, progress=None):
    """The engine interface: the log's records folded and checked; a Result whose verdicts are the
    checks (violated at the first record that breaks each) and whose details list every finding."""
    from verifier.core.result import COMPLETE, HOLDS, VIOLATED, VIOLATION, Result, Verdict
    from verifier.engines.cluster.dist import DistError, build
    e = Knobs.of(settings)
    for p in e.paths:
        if not Path(p).exists():
            raise InputError(f"{p}: no such file or directory")
    try:
        dist = build(e.version)
    except DistError as exc:
        raise InputError(str(exc)) from None
    start = time.monotonic()
    only = frozenset(e.partitions) or None
    meta, batches, files = fold(_batches(dist.classpath, e.paths), e.default_min_isr, progress,
                                None if model is None else model.explain_change, only=only)
    seconds = time.monotonic() - start
    names = {t for t in meta.topics.values()} | {f"{meta.topics.get(t, t)}-{p}" for t, p in meta.partitions}
    missing = sorted(set(e.partitions) - names)
    if missing:                           # a name the log never had checks nothing: never a pass
        raise InputError(f"--partitions: {', '.join(missing)}: no such topic or partition in the log")
    if not meta.records:                  # a run that checked nothing is never a pass
        raise InputError(f"{', '.join(map(str, e.paths))}: no metadata record in it (not a metadata log "
                         "directory, segment or snapshot?)")
    stories = {}
    if meta.broken and model is not None:     # the evidence: each broken check's history, read again
        wanted, preset = targets(meta.broken), model.cfg.preset
        fold(_batches(dist.classpath, e.paths), e.default_min_isr, None, model.explain_change,
             start=lambda: History(e.default_min_isr, wanted, stories, preset))
    verdicts = []
    for name in CHECKS:
        f = meta.broken.get(name)
        v = Verdict(name, "metadata", VIOLATED if f else HOLDS, quote="checked at every record of the log",
                    detail=(f"{f.partition} at offset {f.offset} ({f.record}): {f.why}; before it: "
                            f"{_state(f.before)}") if f else "")
        if name in stories:
            v.detail += f"; its history as a replay scenario: history-{name}.json"
        verdicts.append(v)
    details: dict[str, Any] = {
        "kafka": e.version, "files": files,
        "findings": [{"property": f.name, "partition": f.partition, "offset": f.offset, "record": f.record,
                      "data": f.data, "before": f.before, "why": f.why} for f in meta.findings],
        "findings_per_kind": dict(meta.counted), "findings_kept_per_kind": KEPT,
        "partitions": len(meta.partitions), "brokers": len(meta.brokers), "topics": len(meta.topics),
        "partitions_checked": sum(1 for k in meta.partitions if meta.wanted(k)),
        "histories": {name: f"history-{name}.json" for name in stories}}
    return Result(VIOLATION if meta.broken else COMPLETE, seconds, "", "validate-log", verdicts=verdicts,
                  counts={"records": meta.records, "batches": batches, "partitions": len(meta.partitions),
                          "seconds": round(seconds, 2),
                          "records_per_second": round(meta.records / max(seconds, 1e-9))},
                  sections={"details": details, "files": {f"history-{n}.json": d for n, d in stories.items()}},
                  explored_all=True)


def _state(p) -> str:
    if p is None:
        return "(not yet recorded)"
    return (f"leader {p['leader']}, leader epoch {p['leader_epoch']}, partition epoch {p['partition_epoch']}, "
            f"replicas {p['replicas']}, isr {p['isr']}, elr {p['elr']}, last known elr {p['last_known_elr']}, "
            f"recovery {'RECOVERING' if p['recovery'] == 1 else 'RECOVERED'}")
