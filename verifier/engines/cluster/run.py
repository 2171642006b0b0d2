"""The cluster-conform engine: the model's traces acted out on a real KRaft cluster of one
release, compared after every step (docs/cluster.md).

A case is a scenario file's steps or a seeded random walk chosen online among the steps the
harness can cause (steps.DRIVEN), each on a fresh cluster. After each driven step the harness
observes the cluster and `explain` finds the model's silent steps around it; the model's state
moves along that run, so a walk is always a run of the model. The first step nothing explains
is the divergence (exit 1); a case whose next step the cluster cannot be made to take is not
drivable (exit 2). What the properties say along the way is kept: the finding a case shows on
a real cluster (an acknowledged record lost, an unclean election) is the model's verdict on the
states the cluster agreed with, plus the cluster's own facts (what every replica holds, what a
consumer reads).
"""
from __future__ import annotations

import random
import time
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from verifier.core import knobs
from verifier.engines.cluster import steps as ST
from verifier.engines.cluster import wire as W
from verifier.engines.cluster.explain import Diff, divergence, kafka_view, model_view, parts, plain, search, view_diffs
from verifier.engines.cluster.harness import TOPIC, Harness


@dataclass
class Step:
    label: tuple
    silent: list[tuple]                 # the steps the cluster took on its own around it
    records: list[list[str]]            # the record types of the batches it wrote
    seconds: float
    taken: bool = True                  # False: the cluster did not take it, the silent ones did (only a
                                        # step of explain.MAY_BE_LEFT_OUT: a shrink, a fetch, ...)
    index: int = 0                      # its place among the file's steps (1-based; a walk's: its number)


@dataclass
class CaseOutcome:
    name: str
    initial: Any
    steps: list[Step] = field(default_factory=list)
    path: list[tuple] = field(default_factory=list)      # every model step, driven or silent: (label, state)
    divergence: Optional[dict] = None
    not_drivable: Optional[str] = None
    skipped: list[str] = field(default_factory=list)      # scripted steps the cluster had taken on its own
    lost: list[str] = field(default_factory=list)          # acknowledged records no replica holds at the end
    readable: Optional[list[str]] = None                   # what a consumer reads from the leader at the end
    violated: dict[str, int] = field(default_factory=dict)  # property -> the driven step after which it first fails
    kept: list[str] = field(default_factory=list)          # acknowledged records some replica still holds
    cut: Optional[str] = None                              # a scenario the model stops early: where
    step_of: list[int] = field(default_factory=list)       # for each entry of `path`, the driven step it belongs to
    metadata_log: str = ""                                  # where the controller's metadata log was kept
    setup_seconds: float = 0.0
    seconds: float = 0.0


def _violations(model, properties, path: list[tuple], initial, step_of: list[int]) -> dict[str, int]:
    """Property -> the driven step (1-based) after whose run the model first violates it."""
    out: dict[str, int] = {}
    prev = initial
    for i, (label, s) in enumerate(path):
        for p in properties:
            if p.name in out:
                continue
            ok = p.check(model.cfg, s) if p.kind == "state" else p.check(model.cfg, prev, label, s)
            if not ok:
                out[p.name] = step_of[i]
        prev = s
    return out


def run_case(h: Harness, model, properties, name: str, script: Optional[list[tuple]], rng: Optional[random.Random],
             depth: int, progress: Optional[Callable] = None) -> CaseOutcome:
    """One case on a started harness: `script` (a scenario's labels) or a walk drawn by `rng`."""
    s = model.init_states()[0]
    out = CaseOutcome(name, s)
    first = h.observe()
    diffs = view_diffs(model_view(s), kafka_view(h.view, h.epoch_index))
    if diffs:
        out.divergence = _divergence(0, None, diffs, first)
        return out
    taken: list[tuple] = []
    queue = list(script) if script is not None else None
    n = index = 0
    while n < depth:
        if queue is not None:
            if not queue:
                break
            label = queue.pop(0)
            index += 1
            if not model.allows(s, label):
                if label in taken:
                    taken.remove(label)
                    out.skipped.append(f"{model.describe(label)} (the cluster took it on its own)")
                    continue
                out.not_drivable = f"step {n + 1} ({model.describe(label)}): the model does not allow it here"
                break
        else:
            choices = [lbl for lbl, _ in model.successors(s) if lbl[0] in ST.DRIVEN and not ST.not_drivable(model, s, lbl)]
            if not choices:
                break
            label = rng.choice(choices)
        why = ST.not_drivable(model, s, label)
        if why:
            out.not_drivable = f"step {n + 1} ({model.describe(label)}): {why}"
            break
        n += 1
        if queue is None:
            index = n
        start = time.monotonic()
        after, _ = model.apply(s, label)
        precut = _precut(model, s, label, queue or [])
        error = ST.drive(h, model, s, label, after, precut)
        obs = h.observe(error)
        cut = _cut_links(h)
        found = search(model, s, label, obs, h.epoch_index, cut)
        if found.found is None and label[0] in ST.WAIT_PAST:
            # a step the cluster takes on its own, not taken yet: wait past the Kafka timing that
            # could explain it, then the whole observation again (not taken by then: a divergence)
            ST.pause(ST.WAIT_PAST[label[0]])
            later = h.observe()
            obs = obs._replace(views=obs.views + later.views, records=obs.records + later.records, data=later.data)
            cut = _cut_links(h)
            found = search(model, s, label, obs, h.epoch_index, cut)
        exp = found.found
        if exp is None:
            _debug_dump(s, label, obs, h, cut)
            t, diffs, where = divergence(model, s, label, obs, found)
            shown = [(lbl, st) for lbl, st, _ in found.best_path]
            if all(lbl != label for lbl, _ in shown) and t is not (shown[-1][1] if shown else s):
                shown.append((label, t))          # the divergent step itself, in the model's values
            out.path += shown
            out.step_of += [n] * len(shown)
            out.divergence = _divergence(n, model.describe(label), diffs, obs, where,
                                         [model.describe(lbl) for lbl, _, _ in found.best_path], index)
            break
        silent = [lbl for lbl, _, _ in exp.path if lbl != label]
        taken += silent
        out.path += [(lbl, st) for lbl, st, _ in exp.path]
        out.step_of += [n] * len(exp.path)
        driven = any(lbl == label for lbl, _, _ in exp.path)
        out.steps.append(Step(label, silent, obs.records, time.monotonic() - start, driven, index))
        s = exp.state
        if progress:
            progress(_step_note(out, model.describe))
    out.violated = _violations(model, properties, out.path, out.initial, out.step_of)
    _facts(h, model, s, out)
    return out


def _cut_links(h: Harness) -> set:
    """The brokers whose link to the controller the harness has cut now."""
    return {b for b in h.cluster.brokers if h.cluster.controller_cut(b)}


def _step_note(case: CaseOutcome, describe):
    """The step just acted out, in the core `Progress` (the line is its note)."""
    from verifier.core.result import Progress
    st = case.steps[-1]
    silent = ", ".join(lbl[0] for lbl in st.silent)
    line = (f"  {case.name}: step {len(case.steps)} {describe(st.label)}"
            + ("" if st.taken else " (not taken: the cluster changed nothing it would)")
            + (f" (on its own: {silent})" if silent else "") + f" {st.seconds:.1f}s")
    return Progress(len(case.steps), 0, len(case.steps), 0, st.seconds, note=line)


def _debug_dump(s, label, obs, h, cut) -> None:
    """KRAFT_VERIFY_CLUSTER_DEBUG=FILE: the step nothing explained, as data to replay the search
    offline (the model state, the label, the observation, Kafka's incarnations, the cut links),
    and each node's server.log."""
    import json
    import os
    path = os.environ.get("KRAFT_VERIFY_CLUSTER_DEBUG")
    if path:
        from verifier.core.values import to_data
        with open(path, "w") as f:
            json.dump({"state": to_data(s), "label": list(label), "views": obs.views, "records": obs.records,
                       "data": obs.data._asdict(), "error": obs.error, "incarnations": h.incarnations,
                       "cut": sorted(cut)}, f, default=str)
        import shutil                        # and every node's server.log beside it (FILE.<node>.log)
        for node in [h.cluster.controller, *h.cluster.nodes.values()]:
            log = node.dir / "server.log"
            if log.exists():
                shutil.copyfile(log, f"{path}.{node.id}.log")


def _precut(model, s, label, rest: list[tuple]) -> tuple:
    """Before a crash of b: the running brokers a scenario fences before b's own fence, whose
    sessions must lapse first (the controller fences stale brokers in heartbeat order)."""
    if label[0] not in ("crash", "crash_lossy"):
        return ()
    b, out = plain(label)[1], []
    for nxt in rest:
        if nxt[0] == "fence" and nxt[1] == b:
            break
        if nxt[0] == "fence" and nxt[1] != b and nxt[1] not in parts(s)[0].ctrl.fenced:
            out.append(nxt[1])
    return tuple(out)


def _divergence(step: int, label: Optional[str], diffs: list[Diff], obs, where: str = "the start",
                matched: Optional[list[str]] = None, index: int = 0) -> dict:
    return {"step": step, "index": index, "label": label, "where": where, "matched_steps": matched or [],
            "fields": [{"field": d.field, "model": d.model, "kafka": d.kafka} for d in diffs],
            "kafka_records": [k for ks in obs.records for k in ks]}


def _facts(h: Harness, model, s, out: CaseOutcome) -> None:
    """What the cluster holds at the end: each acknowledged record lost or kept, what a consumer
    reads from each partition's leader (with several partitions, a record is named with its
    partition: "p1/r2")."""
    each = h.data().each()
    readable: Optional[list[str]] = []
    for p, data in enumerate(each):
        name = (lambda r: f"r{r}") if len(each) == 1 else (lambda r, p=p: f"p{p}/r{r}")
        held = {r for log in data.logs.values() for _, r in log}
        out.lost += [name(r) for r in data.acked if r not in held]
        out.kept += [name(r) for r in data.acked if r in held]
        got = None
        leader = h.fold.parts[p]["leader"]
        if data.alive.get(leader):
            try:
                got = W.read(h.cluster.nodes[leader].port, TOPIC, 5, p)
            except W.WireError:
                got = None
        if got is None or readable is None:
            readable = None
        else:
            readable += [(f"p{p}/" if len(each) > 1 else "") + v.decode("ascii", "replace") for v in got]
    out.readable = readable


def shrink(dist, model, properties, case: CaseOutcome, budget: int, progress=None) -> CaseOutcome:
    """A shorter case with a divergence on the same field: each driven step before the divergent
    one is left out in turn, last first, and the rest acted out again on a fresh cluster (each
    attempt costs one, so at most `budget` attempts). Returns `case` if none was shorter."""
    from verifier.engines.cluster.cluster import ClusterError
    from verifier.engines.cluster.harness import Stopped
    field_ = case.divergence["fields"][0]["field"]
    labels = [st.label for st in case.steps]
    divergent = next(lbl for lbl, _ in reversed(case.path) if model.describe(lbl) == case.divergence["label"])
    best, attempts = case, 0
    i = len(labels) - 1
    while i >= 0 and attempts < budget:
        candidate = labels[:i] + labels[i + 1:]
        i -= 1
        attempts += 1
        cfg = model.cfg
        try:
            with Harness(dist, cfg.brokers, cfg.replicas, cfg.min_isr, cfg.unclean_leader_election,
                         elr=cfg.rules.elr, partitions=cfg.partitions) as h:
                tried = run_case(h, model, properties, f"{case.name}, shrunk", candidate + [divergent], None,
                                 len(candidate) + 1, progress)
        except (ClusterError, Stopped):
            break
        if tried.divergence and tried.divergence["fields"][0]["field"] == field_:
            tried.name = f"{case.name}, shrunk from {len(labels) + 1} to {len(tried.steps) + 1} steps"
            best, labels = tried, candidate
            i = min(i, len(labels) - 1)
    return best


@dataclass
class Outcome:
    version: str
    cases: list[CaseOutcome] = field(default_factory=list)
    stopped: Optional[str] = None
    error: Optional[str] = None          # a cluster that failed to start or a tool that failed: exit 2
    ops: dict[str, int] = field(default_factory=dict)     # driven steps compared, per action
    silent: dict[str, int] = field(default_factory=dict)  # steps the cluster took on its own, per action
    seconds: float = 0.0
    models: dict = field(default_factory=dict)            # id(case) -> the model it ran

    @property
    def steps(self) -> int:
        return sum(len(c.steps) for c in self.cases)

    @property
    def divergence(self) -> Optional[CaseOutcome]:
        return next((c for c in self.cases if c.divergence), None)


PROPERTY = "ClusterAgreesWithModel"


@knobs.declare("cluster-conform")
class Knobs(knobs.Knobs):
    """Which release's brokers, and what is acted out on them."""
    version: str = ""  # the Kafka release
    dist: Any = None  # its distribution (dist.build)
    # (name, model, labels, cut): scenario files, each with the model its file configures and
    # where that model stops it, if early
    cases: tuple = ()
    walks: int = knobs.knob(0, least=0)  # seeded random walks of the model, each on a fresh cluster
    depth: int = knobs.knob(30, least=1)  # steps per walk at the most
    seed: int = 0  # walk i of seed S is the same on every run
    shrink: int = knobs.knob(4, least=0)  # attempts at a shorter divergence, each on a fresh cluster
    keep_logs: str = ""  # a directory: each case's controller metadata log copied to case-N/ there


def run(model, properties=(), settings=None, progress=None):
    """The engine interface: what is acted out is its `Knobs`, the time budget the settings'
    own. Every case runs on a fresh cluster of its model's shape. Returns a Result whose facts
    is the Outcome."""
    from verifier.core import stop
    from verifier.core.result import COMPLETE, SAMPLED_STATUS, STOPPED, VIOLATED, VIOLATION, Result, Verdict
    from verifier.engines.cluster.cluster import ClusterError
    from verifier.engines.cluster.harness import Stopped
    e = Knobs.of(settings)
    out = Outcome(e.version)
    start = time.monotonic()
    budget = settings.limits.time_budget
    jobs = [(name, m, labels, None, cut) for name, m, labels, cut in e.cases]
    jobs += [(f"walk {i} (seed {e.seed})", model, None, random.Random(e.seed * 1_000_003 + i), None)
             for i in range(e.walks)]
    with stop.polled():
        for name, m, labels, rng, cut in jobs:
            out.stopped = stop.cut(start, budget, lambda: f"time budget of {budget:g} s spent after "
                                                          f"{len(out.cases)} case(s)")
            if out.stopped:
                break
            t0 = time.monotonic()
            try:
                cfg = m.cfg
                with Harness(e.dist, cfg.brokers, cfg.replicas, cfg.min_isr, cfg.unclean_leader_election,
                             elr=cfg.rules.elr, partitions=cfg.partitions) as h:
                    setup = time.monotonic() - t0
                    case = run_case(h, m, properties, name, labels, rng, e.depth, progress)
                    case.setup_seconds, case.cut = setup, cut
                    if e.keep_logs:
                        case.metadata_log = str(h.keep_metadata(Path(e.keep_logs) / f"case-{len(out.cases) + 1}"))
            except Stopped as exc:
                out.stopped = str(exc)
                break
            except ClusterError as exc:
                out.error = str(exc)
                break
            case.seconds = time.monotonic() - t0
            out.cases.append(case)
            out.models[id(case)] = m
            for st in case.steps:
                key = st.label[0] if st.taken else f"{st.label[0]} (not taken by the cluster)"
                out.ops[key] = out.ops.get(key, 0) + 1
                for lbl in st.silent:
                    out.silent[lbl[0]] = out.silent.get(lbl[0], 0) + 1
            if case.divergence and e.shrink > 0 and not stop.requested():
                shrunk = shrink(e.dist, m, properties, case, e.shrink, progress)
                if shrunk is not case:
                    out.models[id(shrunk)] = m
                    out.cases[-1] = shrunk
            if case.divergence or case.not_drivable:
                break
    out.seconds = time.monotonic() - start
    d = out.divergence
    trace = None
    if d is not None:
        from specs import Trace
        trace = Trace(out.models[id(d)], d.initial, list(d.path), engine="cluster-conform")
    verdict = Verdict(PROPERTY, "conformance", VIOLATED if d else SAMPLED_STATUS, trace=trace,
                      quote=f"after every step the model's state (controller, replica logs, the leader's high "
                            f"watermark, acknowledgements) is one the model reaches by that step and steps a real "
                            f"Kafka {out.version} cluster takes on its own")
    status = VIOLATION if d else (STOPPED if out.stopped or out.error else COMPLETE)
    result = Result(status, out.seconds, out.stopped or out.error or "", "cluster-conform", facts=out,
                    verdicts=[verdict],
                    counts={"samples": len(out.cases), "steps_compared": out.steps,
                            "seconds": round(out.seconds, 2)})
    if out.error:
        result.exit_code = 2
    elif not d and any(c.not_drivable for c in out.cases):
        result.exit_code = 2
    return result
