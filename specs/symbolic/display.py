"""How z3's steps and states read to a person, in the words of the model's actions."""
from __future__ import annotations

from specs.config import Config
from specs.symbolic.abstraction import Abstract, describe, members


def _names(cfg: Config, bits: int) -> str:
    return "[" + ",".join(str(b) for b in members(cfg, bits)) + "]"


def step_text(cfg: Config, step) -> str:
    """A symbolic step (verifier.engines.prove.Step) as a sentence."""
    who = members(cfg, step.broker)
    b = who[0] if len(who) == 1 else None
    a = step.action
    if a == "alter_partition":
        return f"AlterPartition isr={_names(cfg, step.members)}"
    if a == "crash":
        return f"crash broker={b}" + (" (loses unflushed records)" if step.flag else " (keeps its log)")
    if a in ("fence", "unfence", "controlled_shutdown", "clean_shutdown", "restart", "elect_designated"):
        return f"{a} broker={b}"
    if a == "set_min_isr":
        return f"set_min_isr value={step.value}"
    if a == "set_unclean":
        return f"set_unclean value={str(step.flag).lower()}"
    if a == "advance_hwm":
        return f"advance_hwm (non-ISR replicas keeping up: {_names(cfg, step.members)})"
    if a == "unclean_recovery":
        chosen = members(cfg, step.pick)
        return f"unclean_recovery round elects broker={chosen[0] if chosen else None}"
    if a == "fetch":
        return f"fetch by {_names(cfg, step.members)}"
    return a


def state_changes(cfg: Config, before: Abstract, after: Abstract) -> str:
    a, b = describe(cfg, before), describe(cfg, after)
    return "; ".join(f"{k}={v}" for k, v in b.items() if a[k] != v) or "(no change)"
