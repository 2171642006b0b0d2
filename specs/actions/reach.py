"""Which actions a config can never enable, and what would enable the others.

Coverage (verifier/reports/summary.py) tells three cases apart: an action the config switches off
("off by config": a zero budget, a strategy that never elects, an event no allowed fault can
cause), an action that is on but was never enabled in the run (a warning, with the bound that
would enable it), and an action that ran. The reasoning here is deliberately conservative: an
action is declared off only when no run of the config can enable it, and coverage ignores the
claim whenever the run did enable the action.
"""
from __future__ import annotations

from specs.config import Config


def _unclean_shutdowns(cfg: Config) -> int:
    return cfg.bounds.crashes + cfg.bounds.lossy_crashes


def _isr_and_elr_can_empty(cfg: Config) -> bool:
    """ISR and ELR both empty: the last effective-min-ISR members leave the ISR into ELR and
    leave ELR only by an unclean shutdown, unless a min ISR change clears ELR (or a
    reassignment rewrites the replicas)."""
    if not cfg.rules.elr:
        return False
    return (_unclean_shutdowns(cfg) >= cfg.effective_min_isr or cfg.bounds.config_changes > 0
            or cfg.bounds.reassignments > 0)


def _needs_unclean_shutdowns(cfg: Config) -> str:
    m = cfg.effective_min_isr
    return (f"it needs ISR and ELR without an acceptable member, which needs >= min ISR ({m}) unclean "
            f"shutdowns: raise crashes or lossy_crashes so that crashes + lossy_crashes >= {m}")


def _rounds_can_elect(cfg: Config) -> bool:
    r = cfg.rules
    return (r.unclean_recovery_strategy not in (None, "none") and r.recovery_round_elects
            and cfg.bounds.unclean_recoveries > 0)


def off_by_config(cfg: Config, actions) -> dict[str, str]:
    """Action name -> why no run of this config can enable it."""
    off = {}
    for action in actions:
        name = action.fixed_budget
        if name is not None and getattr(cfg.bounds, name) == 0:
            off[action.name] = f"bound {name} = 0"
        if action.switch is not None and not getattr(cfg.rules, action.switch):
            off[action.name] = f"flag {action.switch} is not set"
    if cfg.bounds.metadata_lag == 0:
        for name in ("deliver_metadata", "stale_produce", "stale_advance_hwm"):
            off[name] = "follows hold_metadata (bound metadata_lag = 0)"
    if cfg.bounds.clean_shutdowns == 0:
        off["clean_shutdown"] = "follows controlled_shutdown (bound clean_shutdowns = 0)"
    strategy = cfg.rules.unclean_recovery_strategy
    if strategy is not None:
        off["periodic_unclean_election"] = f"recovery rounds ({strategy}) replace unclean.leader.election"
    elif not cfg.unclean_leader_election and cfg.bounds.config_changes == 0:
        off["periodic_unclean_election"] = "unclean.leader.election.enable is false and config_changes = 0"
    if strategy is None:
        off["unclean_recovery"] = "flag unclean_recovery_strategy is not set"
    elif strategy == "none":
        off.setdefault("unclean_recovery", "strategy none: a round never elects; the partition waits for an "
                                           "operator (a designated election)")
    return off


def enable_hints(cfg: Config) -> dict[str, str]:
    """Action name -> what would enable it, for actions that are on but a run never enabled."""
    hints = {"unclean_recovery": _needs_unclean_shutdowns(cfg)
             if not _isr_and_elr_can_empty(cfg) else
             "no run left the partition leaderless with the strategy's conditions met "
             "(raise crashes, lossy_crashes or fences)",
             "periodic_unclean_election": "it needs a leaderless partition: raise fences, crashes or lossy_crashes",
             "periodic_preferred_election": "it needs a leader other than the preferred replica: raise fences, "
                                            "crashes, lossy_crashes or clean_shutdowns",
             "elect": "raise admin_elections", "reassign": "it needs a spare broker (TOML brokers) and "
                                                           "reassignments > 0"}
    return hints
