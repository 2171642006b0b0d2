"""How z3's steps and states read to a person, in the words of the model's actions."""
from __future__ import annotations

from specs.config import Config
from specs.symbolic.abstraction import Abstract, describe, members


def _names(cfg: Config, bits: int) -> str:
    return "[" + ",".join(str(b) for b in members(cfg, bits)) + "]"


# action -> its sentence, from the step's fields: b (the one broker it names), m (its members),
# v (its value), f (its flag), p (the broker a recovery round picks)
_TEXT = {
    "alter_partition": "AlterPartition isr={m}",
    "crash": "crash broker={b} ({f})",
    "set_min_isr": "set_min_isr value={v}",
    "set_unclean": "set_unclean value={f}",
    "advance_hwm": "advance_hwm (non-ISR replicas keeping up: {m})",
    "unclean_recovery": "unclean_recovery round elects broker={p}",
    "fetch": "fetch by {m}",
    **{a: a + " broker={b}" for a in ("fence", "unfence", "controlled_shutdown", "clean_shutdown", "restart",
                                      "elect_designated")},
}


def step_text(cfg: Config, step) -> str:
    """A symbolic step (verifier.engines.prove.Step) as a sentence."""
    who, chosen = members(cfg, step.broker), members(cfg, step.pick)
    flag = str(step.flag).lower()
    if step.action == "crash":
        flag = "loses unflushed records" if step.flag else "keeps its log"
    return _TEXT.get(step.action, step.action).format(
        b=who[0] if len(who) == 1 else None, m=_names(cfg, step.members), v=step.value, f=flag,
        p=chosen[0] if chosen else None)


def state_changes(cfg: Config, before: Abstract, after: Abstract) -> str:
    a, b = describe(cfg, before), describe(cfg, after)
    return "; ".join(f"{k}={v}" for k, v in b.items() if a[k] != v) or "(no change)"
