"""Field-by-field comparison of the model's controller view with Kafka's report (the model's
kafka_view names the fields; broker epochs arrive from the oracle already translated to the
model's, docs/conform.md)."""
from __future__ import annotations

from typing import Any, NamedTuple



class Diff(NamedTuple):
    field: str          # "leader", "isr", "broker 2 fenced", "error", ...
    model: Any
    kafka: Any


def diff(model: dict[str, Any], kafka: dict[str, Any], set_fields=frozenset()) -> list[Diff]:
    """Every field where the two disagree, in a fixed order (partition, brokers, config, error);
    the partition fields in `set_fields` are compared as sets. A view of several partitions
    (specs/partitions_kafka.py) holds each under `partitions`, its fields named with it."""
    out: list[Diff] = []
    if "partitions" in model:
        theirs = kafka.get("partitions") if isinstance(kafka.get("partitions"), dict) else {}
        for p in sorted(set(model["partitions"]) | set(theirs), key=int):
            if p not in theirs or p not in model["partitions"]:
                out.append(Diff(f"partition {p}", p in model["partitions"], p in theirs))
            else:
                out += _partition(model["partitions"][p], theirs[p], set_fields, f"partition {p} ")
    else:
        out += _partition(model["partition"], kafka["partition"], set_fields, "")
    mb, kb = model["brokers"], kafka["brokers"]
    for b in sorted(set(mb) | set(kb), key=int):
        if b not in kb:
            out.append(Diff(f"broker {b} registered", True, False))
            continue
        if b not in mb:
            out.append(Diff(f"broker {b} registered", False, True))
            continue
        (m_epoch, m_fenced, m_down), (k_epoch, k_fenced, k_down, raw) = mb[b], kb[b]
        if m_epoch != k_epoch:
            out.append(Diff(f"broker {b} epoch", m_epoch,
                            k_epoch if k_epoch is not None else f"Kafka epoch {raw} (no model epoch maps to it)"))
        if m_fenced != k_fenced:
            out.append(Diff(f"broker {b} fenced", m_fenced, k_fenced))
        if m_down != k_down:
            out.append(Diff(f"broker {b} in controlled shutdown", m_down, k_down))
    if "partitions" in model:
        theirs = kafka["elr_index"] if isinstance(kafka["elr_index"], dict) else {}
        for p, mine in model["elr_index"].items():
            if mine != theirs.get(p, {}):
                out.append(Diff(f"ELR index entries of partition {p}", mine, theirs.get(p, {})))
    elif model["elr_index"] != kafka["elr_index"]:
        out.append(Diff("ELR index entries", model["elr_index"], kafka["elr_index"]))
    for name in ("min_isr", "unclean", "error"):
        if model[name] != kafka[name]:
            out.append(Diff(name, model[name], kafka[name]))
    if "epoch_mapping" in kafka:
        out.append(Diff("broker epoch mapping", "a bijection", kafka["epoch_mapping"]))
    return out


def _partition(mine: dict, theirs: dict, set_fields, prefix: str) -> list[Diff]:
    out = []
    for name, want in mine.items():
        got = theirs.get(name)
        if name in set_fields:
            if sorted(want) != sorted(got or []):
                out.append(Diff(prefix + name, sorted(want), sorted(got or [])))
        elif want != got:
            out.append(Diff(prefix + name, want, got))
    return out
