"""Trace validation: what the model says a real cluster may have done in one step.

A real cluster takes some of the model's steps on its own (an HWM advance after a fetch, an ISR
expansion, an ISR shrink once a follower lags, an AlterPartition delivered at once, a stopped
broker's session lapsing, a heartbeat that unfences a broker that can reach the controller, a
clean stop after a controlled shutdown, RECOVERED after an unclean election). `explain` searches
the model for a run of such silent steps around the step the harness drove whose controller
states are, one for one, the states the metadata log went through, and whose last state holds
what the replicas' files, the leader and the producers show. None found is a divergence, said
field by field against the driven step alone (after the silent steps that best match).
The method is published trace validation's (Cirstea, Kuppe, Loillier, Merz, 2024), with the
model in place of TLC and the metadata log in place of instrumentation.

With several partitions (the lifted model, specs/partitions.py) two things a real cluster does
at once are one step each in the model: a leader's ISR changes of several partitions travel in
one AlterPartition, which the controller writes as one batch (so the model's deliveries of each
partition's may meet one of the log's states together, `_search`'s `mid`), and a follower
fetches every partition it follows from a leader once the harness opens the link to it (so a
driven fetch in one partition lets the others led there fetch too, `fetches`).
"""
from __future__ import annotations

from collections import deque
from typing import Any, NamedTuple, Optional

from specs import Model, Partitions, partition_labels
from verifier.engines.cluster.harness import Data, Observation

# Steps a cluster takes by itself; fence and unfence only where the harness let them happen.
ON_ITS_OWN = ("advance_hwm", "expand_isr", "shrink_isr", "deliver_alter_partition",
              "clean_shutdown", "periodic_unclean_election", "stale_advance_hwm")
SET_FIELDS = ("elr", "last_known_elr", "adding", "removing")
MAX_STEPS, MAX_NODES = 8, 30000


class Diff(NamedTuple):
    field: str
    model: Any
    kafka: Any


class Explanation(NamedTuple):
    path: list[tuple]                   # [(label, state after, error)] the driven step among them
    state: Any                          # the model state after the path


def model_incarnation(b, epoch: int) -> int:
    """A model broker epoch as the incarnation it numbers (100 + id, then + 1000 per registration)."""
    return (epoch - 100 - int(b)) // 1000


def parts(s) -> tuple:
    """A model state's partitions: the lifted model's `Partitions`, or the one `State`."""
    return tuple(s) if isinstance(s, Partitions) else (s,)


def partition_of(label: tuple, partitions: int) -> int:
    """The partition a lifted label's own step is in (0 for a broker's or the topic's event)."""
    each = partition_labels(label, partitions) if partitions > 1 else [label]
    return next((p for p, mine in enumerate(each) if mine is not None), 0)


def plain(label: tuple) -> tuple:
    """A lifted broker event whose partitions took it differently (a lossy crash's kept prefix,
    `("each", labels)`) as its first partition's label: the broker and the event are theirs."""
    if len(label) == 2 and isinstance(label[1], tuple) and label[1][:1] == ("each",):
        return next(mine for mine in label[1][1] if mine is not None)
    return label


def model_view(s) -> dict:
    """The model's controller state in the harness's vocabulary (conform's, `Model.kafka_view`):
    broker epochs as incarnation numbers (model_incarnation), each partition's registration."""
    views = [Model.kafka_view(part, None) for part in parts(s)]
    v = views[0]
    return {"partitions": [w["partition"] for w in views],
            "brokers": {b: [model_incarnation(b, epoch), fenced, shutting_down]
                        for b, (epoch, fenced, shutting_down) in v["brokers"].items()},
            "min_isr": v["min_isr"], "unclean": bool(v["unclean"])}


def kafka_view(view: dict, incarnation) -> dict:
    """A folded view (or conform's, of one partition) with Kafka's broker epochs as incarnation
    numbers and set fields sorted."""
    out = []
    for part in view.get("partitions") or [view["partition"]]:
        p = dict(part)
        for f in SET_FIELDS:
            p[f] = sorted(p[f])
        out.append(p)
    return {"partitions": out,
            "brokers": {b: [incarnation(int(b), e), f, d] for b, (e, f, d) in view["brokers"].items()},
            "min_isr": view["min_isr"], "unclean": view["unclean"]}


def _named(field: str, p: int, partitions: int) -> str:
    """A partition's field as a divergence names it (as it always did, with one partition)."""
    return field if partitions == 1 else f"partition {p} {field}"


def view_diffs(mine: dict, theirs: dict) -> list[Diff]:
    n = len(mine["partitions"])
    out = []
    for p, (m, k) in enumerate(zip(mine["partitions"], theirs["partitions"] + [{}] * n)):
        out += [Diff(_named(f, p, n), v, k.get(f)) for f, v in m.items() if v != k.get(f)]
    for b in sorted(set(mine["brokers"]) | set(theirs["brokers"]), key=int):
        m, k = mine["brokers"].get(b), theirs["brokers"].get(b)
        if m is None or k is None:
            out.append(Diff(f"broker {b} registered", m is not None, k is not None))
            continue
        for name, x, y in zip(("incarnation", "fenced", "in controlled shutdown"), m, k):
            if x != y:
                out.append(Diff(f"broker {b} {name}", x, y))
    out += [Diff(k, mine[k], theirs[k]) for k in ("min_isr", "unclean") if mine[k] != theirs[k]]
    return out


def data_diffs(cfg, s, d: Data) -> list[Diff]:
    """Where the model's replicas, leader HWMs and acknowledgements differ from the cluster's,
    partition by partition."""
    each = parts(s)
    if len(each) == 1:
        return _data_diffs(cfg, s, d)
    return [Diff(f"partition {p} {x.field}", x.model, x.kafka)
            for p, (part, mine) in enumerate(zip(each, d.each())) for x in _data_diffs(cfg, part, mine)]


def _data_diffs(cfg, s, d: Data) -> list[Diff]:
    out = []
    for b, r in zip(cfg.brokers, s.replicas):
        if b not in d.alive:
            continue
        if r.alive != d.alive[b]:
            out.append(Diff(f"b{b} running", r.alive, d.alive[b]))
        log = [tuple(e) for e in r.log]
        if log != [tuple(e) for e in d.logs[b]]:
            out.append(Diff(f"b{b} log", _log(log), _log(d.logs[b])))
    leader = s.ctrl.partition.leader
    for b, seen in (d.hwms or {}).items():
        r = s.replicas[cfg.brokers.index(b)] if b in cfg.brokers else None
        if b != leader and seen is not None and r is not None and r.alive and r.hwm != seen:
            out.append(Diff(f"b{b}'s high watermark (its checkpoint)", r.hwm, seen))
    if d.hwm is not None and leader in cfg.brokers:
        r = s.replicas[cfg.brokers.index(leader)]
        if r.alive and r.hwm != d.hwm:
            out.append(Diff(f"the leader b{leader}'s high watermark", r.hwm, d.hwm))
    if tuple(sorted(s.hist.acked)) != tuple(d.acked):
        out.append(Diff("acknowledged records", [f"r{x}" for x in sorted(s.hist.acked)], [f"r{x}" for x in d.acked]))
    return out


def _log(log) -> str:
    return "[" + ",".join(f"e{e}:r{r}" for e, r in log) + "]"


def silent_steps(model, s, cut: set, running: dict, link: Optional[tuple] = None):
    """The model's steps the cluster may have taken on its own in `s` (budgets aside). `link`:
    (follower, leader) whose data link the harness opened: the follower's fetches of every
    partition that leader leads (`fetches`)."""
    for label, t in model.successors(s, unbounded=True):
        name = label[0]
        if name in ON_ITS_OWN:
            yield label, t
        elif name == "fetch" and link is not None and fetches(s, label, link):
            yield label, t
        elif name == "fence":
            b = label[1]
            if not running.get(b, False) or b in cut:
                yield label, t
        elif name == "unfence" and running.get(label[1], False) and label[1] not in cut:
            yield label, t


def fetches(s, label: tuple, link: tuple) -> bool:
    """Whether `label` is a fetch the open data link (follower, leader) lets happen: the
    follower's, in a partition that leader leads in `s`."""
    each = parts(s)
    p = partition_of(label, len(each))
    return label[1] == link[0] and each[p].ctrl.partition.leader == link[1]


def opened(s, driven: Optional[tuple]) -> Optional[tuple]:
    """The data link (follower, leader) a driven fetch opens (None for any other step)."""
    if driven is None or driven[0] != "fetch":
        return None
    each = parts(s)
    return driven[1], each[partition_of(driven, len(each))].ctrl.partition.leader


class Search(NamedTuple):
    found: Optional[Explanation]
    matched: int                        # how many of the log's controller states the best run matched
    best: Any                           # that run's last state
    best_path: list[tuple]
    views: list[dict]


# Driven steps a run may leave out when none with them agrees, each with why Kafka may not have
# taken it: an ISR shrink may come in other requests than the model's one; a fetch may have
# changed nothing observable (the follower's log was already the leader's and it had not
# fetched again when the link was cut); the periodic unclean election runs every 5 minutes
# (QuorumController's uncleanLeaderElectionCheckIntervalMs), longer than a step waits. Any other
# step the model drives and the cluster does not take is a divergence (run.py first waits past
# the Kafka timing that could explain it, steps.WAIT_PAST).
MAY_BE_LEFT_OUT = {
    "shrink_isr": "the cluster may shrink the ISR in other requests than the model's one",
    "fetch": "a fetch may change nothing observable (the follower already held the leader's log)",
    "periodic_unclean_election": "the controller's electUnclean task runs every 5 minutes",
}


def search(model, s, driven: Optional[tuple], obs: Observation, incarnation, cut: set) -> Search:
    """The shortest run of silent steps around `driven` that the observation agrees with; if none,
    the run that matched the most of the log's controller states (for the divergence report).
    A run without the driven step is tried only for the steps of MAY_BE_LEFT_OUT."""
    first = _search(model, s, driven, obs, incarnation, cut, optional=driven is None)
    if first.found or driven is None or driven[0] not in MAY_BE_LEFT_OUT:
        return first
    second = _search(model, s, driven, obs, incarnation, cut, optional=True)
    return second if second.found or second.matched > first.matched else first


def _search(model, s, driven, obs, incarnation, cut, optional: bool) -> Search:
    cfg = model.cfg
    views = [kafka_view(v, incarnation) for v in obs.views]
    running = obs.data.alive
    many = len(parts(s)) - 1            # the partitions beyond the first: room for their steps
    link = opened(s, driven)
    # `mid`: the deliveries of several partitions' AlterPartition taken so far have not yet
    # reached the log's next state, which they may only reach together (one batch)
    queue = deque([(s, 0, optional, (), False)])
    seen = {(s, 0, optional, False)}
    best = (-1, s, ())
    nodes = 0
    while queue and nodes < MAX_NODES * (1 + many):
        x, i, done, path, mid = queue.popleft()
        nodes += 1
        if done and not mid and i == len(views) and not data_diffs(cfg, x, obs.data):
            return Search(Explanation(list(path), x), i, x, list(path), views)
        if not mid and (i, done) > (best[0], bool(best[2]) and any(lbl == driven for lbl, _, _ in best[2])):
            best = (i, x, path)
        if len(path) >= MAX_STEPS + 6 * many:
            continue
        steps = [(label, t, None) for label, t in silent_steps(model, x, cut, running, link)
                 if label != driven or done]
        if not done and model.allows(x, driven):
            t, error = model.apply(x, driven)
            if error == obs.error or obs.error is None and driven[0] not in ADMIN:
                steps.insert(0, (driven, t, error))
        vx = model_view(x)
        for label, t, error in steps:
            if mid and label[0] != "deliver_alter_partition":
                continue
            vt = model_view(t)
            j, now_mid = i, False
            if vt != vx:
                if i < len(views) and not view_diffs(vt, views[i]):
                    j = i + 1
                elif many and label[0] == "deliver_alter_partition" and i < len(views):
                    now_mid = True
                else:
                    continue
            now_done = done or label == driven
            key = (t, j, now_done, now_mid)
            if key not in seen:
                seen.add(key)
                queue.append((t, j, now_done, path + ((label, t, error),), now_mid))
    return Search(None, max(best[0], 0), best[1], list(best[2]), views)


ADMIN = ("set_min_isr", "set_unclean", "elect", "reassign")


def explain(model, s, driven: Optional[tuple], obs: Observation, incarnation, cut: set) -> Optional[Explanation]:
    return search(model, s, driven, obs, incarnation, cut).found


def divergence(model, s, driven: Optional[tuple], obs: Observation, found: Search) -> tuple[Any, list[Diff], str]:
    """For a step nothing explains: (the model's state to show, where it differs from what the
    cluster shows, which of the cluster's states that is). The best run matched the log's first
    `matched` controller states; the next one is compared with the model's state after the
    driven step taken from there (or the best run's state), else the data."""
    x = found.best
    done = any(label == driven for label, _, _ in found.best_path)
    t, error = x, None
    if not done and driven is not None and model.allows(x, driven):
        t, error = model.apply(x, driven)
    if found.matched < len(found.views):
        diffs = view_diffs(model_view(t), found.views[found.matched])
        where = f"the controller state after Kafka's record batch {found.matched + 1} of {len(found.views)}"
    else:
        diffs, where = data_diffs(model.cfg, t, obs.data), "the replicas, the leader and the producers"
    if driven is not None and driven[0] in ADMIN and obs.error != error:
        diffs.append(Diff("error", error, obs.error))
    if not diffs:
        diffs = [Diff("steps", "a run of the model's steps (silent ones around the driven one) that the cluster "
                               "went through", f"none within {MAX_STEPS} steps")]
    return t, diffs, where
