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
    the partition fields in `set_fields` are compared as sets."""
    out: list[Diff] = []
    mp, kp = model["partition"], kafka["partition"]
    for name, want in mp.items():
        got = kp[name]
        if name in set_fields:
            if sorted(want) != sorted(got):
                out.append(Diff(name, sorted(want), sorted(got)))
        elif want != got:
            out.append(Diff(name, want, got))
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
    if model["elr_index"] != kafka["elr_index"]:
        out.append(Diff("ELR index entries", model["elr_index"], kafka["elr_index"]))
    for name in ("min_isr", "unclean", "error"):
        if model[name] != kafka[name]:
            out.append(Diff(name, model[name], kafka[name]))
    if "epoch_mapping" in kafka:
        out.append(Diff("broker epoch mapping", "a bijection", kafka["epoch_mapping"]))
    return out
