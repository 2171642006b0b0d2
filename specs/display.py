"""How the model shows itself to people and tools: a step's name, a state's fields as short
strings (the counterexample table shows what changed), and a state as ITF values. Engines
and writers reach these only through the Model (specs/model.py)."""
from __future__ import annotations

from typing import Any

from specs.config import Config
from specs.state import NO_LEADER, RECOVERY_NAMES, State

ITF_VARS = ("ctrl", "replicas", "followers", "inflight", "hist")


def _ids(xs) -> str:
    return "[" + ",".join(str(x) for x in xs) + "]"


def _log(log) -> str:
    return "[" + " ".join(f"e{ep}:r{rec}" for ep, rec in log) + "]"


def view(cfg: Config, s: State) -> dict[str, str]:
    """The fields a reader cares about, rendered as short strings."""
    p = s.ctrl.partition
    out = {
        "leader": str(p.leader) if p.leader != NO_LEADER else "-1",
        "leader_epoch": str(p.leader_epoch),
        "partition_epoch": str(p.partition_epoch),
        "isr": _ids(p.isr),
        "elr": _ids(p.elr),
        "last_known_elr": _ids(p.last_known_elr),
        "recovery": RECOVERY_NAMES[p.leader_recovery_state],
        "replicas": _ids(p.replicas),
        "fenced": _ids(s.ctrl.fenced),
        "shutting_down": _ids(s.ctrl.shutting_down),
        "min_isr": str(s.ctrl.min_isr),
        "unclean_enabled": str(s.ctrl.unclean_leader_election).lower(),
    }
    for b, r, fs in zip(cfg.brokers, s.replicas, s.followers):
        out[f"b{b}"] = ("up" if r.alive else "down") + f" log={_log(r.log)} hwm={r.hwm}"
        epoch = s.ctrl.broker_epoch(b)
        out[f"b{b}.epoch"] = str(epoch) if epoch is not None else "-"
        out[f"b{b}.fetched"] = f"leo={fs.leo} epoch={fs.broker_epoch}" if fs.leo >= 0 else "-"
    req = s.inflight
    out["in_flight"] = "-" if req is None else (
        f"AlterPartition(from={req.broker} le={req.leader_epoch} pe={req.partition_epoch} "
        f"isr={_ids(req.isr)} epochs={_ids(req.member_epochs)})")
    if cfg.bounds.metadata_lag:
        v = s.view
        out["held"] = "-" if v is None else (f"b{v.broker} acts on leader_epoch={v.leader_epoch} isr={_ids(v.isr)}"
                                             + (f" maximal={_ids(v.maximal_isr)}" if v.maximal_isr != v.isr else ""))
    out["acked"] = _ids(s.hist.acked)
    out["visible"] = _ids(s.hist.visible)
    # a promise kept below the current min ISR (docs/protocol.md, "Durability"); "-" while none is
    out["promised_min_isr"] = str(s.hist.promised_min_isr) if s.hist.promised_min_isr else "-"
    out["least_min_isr"] = str(s.hist.least_min_isr) if s.hist.least_min_isr else "-"
    return out


def headline(cfg: Config, s: State) -> str:
    """The partition in one line (what a generic explanation of a failure shows)."""
    p = s.ctrl.partition
    ids = "[" + ",".join(f"b{x}" for x in p.isr) + "]", "[" + ",".join(f"b{x}" for x in p.elr) + "]"
    return f"leader={p.leader}, isr={ids[0]}, elr={ids[1]}, acked={list(s.hist.acked)}"


def timeline(cfg: Config, s: State) -> dict[str, dict[str, str]]:
    """Per broker, what a timeline row shows: role, ISR/ELR membership, process and controller
    status, log and HWM (report.html draws one row per step, one column group per broker)."""
    p, ctrl = s.ctrl.partition, s.ctrl
    out = {}
    for b, r in zip(cfg.brokers, s.replicas):
        status = ["up" if r.alive else "down"] + (["fenced"] if b in ctrl.fenced else []) + (
            ["shutting down"] if b in ctrl.shutting_down else [])
        held = s.view is not None and s.view.broker == b
        role = "leader" if b == p.leader else ("spare" if b not in p.replicas else
                                               "follower" if p.leader != NO_LEADER else "replica, no leader")
        out[f"b{b}"] = {
            "role": (f"leader, its metadata held at epoch {s.view.leader_epoch}" if b == p.leader else
                     f"deposed: acts as leader at epoch {s.view.leader_epoch} (metadata held)") if held else role,
            "member": "ISR" if b in p.isr else ("ELR" if b in p.elr else "-"),
            "status": ", ".join(status), "log": _log(r.log), "hwm": str(r.hwm)}
    return out


def partition(cfg: Config, s: State) -> dict[str, str]:
    """The partition's columns of a timeline row: the controller's record (a leaderless partition
    says so), min ISR, the AlterPartition in flight and the unclean-election switch."""
    p, ctrl, req = s.ctrl.partition, s.ctrl, s.inflight
    effective = ctrl.effective_min_isr
    return {"leader": f"b{p.leader}" if p.leader != NO_LEADER else "none (leaderless)",
            "leader_epoch": str(p.leader_epoch), "partition_epoch": str(p.partition_epoch),
            "isr": _ids(p.isr), "elr": _ids(p.elr), "last_known_elr": _ids(p.last_known_elr),
            "min_isr": str(ctrl.min_isr) + (f" (effective {effective})" if effective != ctrl.min_isr else ""),
            "in_flight": "-" if req is None else f"AlterPartition from b{req.broker}: isr={_ids(req.isr)}",
            "recovery": RECOVERY_NAMES[p.leader_recovery_state],
            "unclean_elections": "on" if ctrl.unclean_leader_election else "off"}


START_FIELDS = ("leader", "isr", "elr", "leader_epoch", "partition_epoch")   # the table's first row


def itf_value(v: Any) -> Any:
    """ITF encoding: NamedTuple -> record, tuple -> sequence, big ints -> #bigint."""
    if isinstance(v, bool) or isinstance(v, str):
        return v
    if isinstance(v, int):
        return v if abs(v) < 2 ** 53 else {"#bigint": str(v)}
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return {k: itf_value(x) for k, x in zip(v._fields, v)}
    if isinstance(v, (tuple, list)):
        return [itf_value(x) for x in v]
    raise TypeError(f"no ITF encoding for {type(v).__name__}: {v!r}")


def itf_option(v: Any) -> dict:
    """Quint's Option as an ITF variant: None has the unit value, an empty tuple."""
    if v is None:
        return {"tag": "None", "value": {"#tup": []}}
    return {"tag": "Some", "value": itf_value(v)}


def itf_state(s: State, held: bool = False) -> dict:
    """`held`: the config can hold a leader's metadata (bound metadata_lag), so a state has a view."""
    out = {"ctrl": itf_value(s.ctrl), "replicas": itf_value(s.replicas), "followers": itf_value(s.followers),
           "inflight": itf_option(s.inflight), "hist": itf_value(s.hist)}
    if held:
        out["view"] = itf_option(s.view)
    return out
