"""How a state of several partitions (specs/partitions.py) shows itself: what the brokers and
the topic share once, each partition's own fields under its number (`p0.isr`, `p1.b2`), so a
counterexample's row says which partition a step changed. Built from the one-partition views
(specs/display.py): no field is rendered twice in two ways."""
from __future__ import annotations

from specs import display as D
from specs.config import Config

# the one-partition view's fields that the brokers and the topic share (specs/partitions.shared)
SHARED = ("fenced", "shutting_down", "min_isr", "unclean_enabled")


def view(cfg: Config, s) -> dict[str, str]:
    """The shared fields once, then every partition's own, each under `p<n>.`. A broker's
    `b<id>` is its process (up or down, shared); its log and HWM are a partition's own."""
    views = [D.view(cfg, part) for part in s]
    first = views[0]
    out = {k: first[k] for k in SHARED}
    for b in cfg.brokers:
        out[f"b{b}"] = first[f"b{b}"].split(" ", 1)[0]
        out[f"b{b}.epoch"] = first[f"b{b}.epoch"]
    for n, v in enumerate(views):
        for k, value in v.items():
            if k in SHARED or k.endswith(".epoch"):
                continue
            if k in out and k.startswith("b") and "." not in k:        # the broker's log and HWM here
                value = value.split(" ", 1)[1]
            out[f"p{n}.{k}"] = value
    return out


def start_fields(partitions: int) -> tuple:
    return tuple(f"p{n}.{k}" for n in range(partitions) for k in D.START_FIELDS)


def headline(cfg: Config, s) -> str:
    return "; ".join(f"partition {n}: {D.headline(cfg, part)}" for n, part in enumerate(s))


def partition_cells(cfg: Config, s) -> dict[str, str]:
    """report.html's partition columns, one group per partition."""
    return {f"p{n}.{k}": v for n, part in enumerate(s) for k, v in D.partition(cfg, part).items()}


def timeline(cfg: Config, s) -> dict[str, dict[str, str]]:
    """Per broker: its process once, its role, membership, log and HWM per partition."""
    out: dict[str, dict[str, str]] = {}
    for n, part in enumerate(s):
        for b, cells in D.timeline(cfg, part).items():
            row = out.setdefault(b, {"status": cells["status"]})
            row.update({f"p{n}.{k}": v for k, v in cells.items() if k != "status"})
    return out


def itf(s) -> dict:
    """An ITF state: one record per partition (`p0`, `p1`...), each the one-partition state's."""
    return {f"p{n}": D.itf_state(part) for n, part in enumerate(s)}


def scenario(trace, one: Config, name: str, source: str) -> dict:
    """A record of the run in the scenario format, each step naming its partitions (`partition`,
    or `each`: one operation per partition, null where it took none). `kraft-verify replay`
    refuses it yet (its config says partitions = N): it runs one partition."""
    from specs.actions import label_to_op
    from specs.config import config_to_dict
    from specs.partitions import labels_of
    from specs.scenario.export import initial_block, scenario_of
    n = len(trace.initial)
    ops: list[dict] = []
    for label, _ in trace.steps:
        each = labels_of(label, n)
        mine = [p for p, x in enumerate(each) if x is not None]
        if len(mine) == 1 and n > 1:
            ops.append({**label_to_op(each[mine[0]]), "partition": mine[0]})
        elif all(x == each[0] for x in each):
            ops.append(label_to_op(each[0]))
        else:
            ops.append({"op": label[0], "each": [None if x is None else label_to_op(x) for x in each]})
    return scenario_of(trace, name, source, {**config_to_dict(one), "partitions": n},
                       {"partitions": [initial_block(one, part) for part in trace.initial]}, ops,
                       expectation_of(trace.final))


def expectation_of(s) -> dict:
    """The `expect` block of a state of several partitions: each partition's."""
    from specs.scenario.export import expectation
    return {"partitions": [expectation(part) for part in s]}
