"""Availability, quantified: seeded random fault schedules per protocol variant.

Each run is a random walk over a `Model` in three parts:
- **warm-up** (not measured): steps a healthy cluster takes on its own until a record is
  acknowledged, so that faults hit a partition that holds acknowledged data;
- **fault phase**: up to `fault_steps` steps, each chosen uniformly among every enabled
  successor (faults, lagging followers, producers, replication, the controller); it ends
  early once the config's fault budgets are spent;
- **healing phase**: exactly `heal_steps` steps in which only what a cluster does on its own
  is chosen: no fault, no lagging follower (`shrink_isr`) and no operator action (admin
  elections, config changes, reassignments). A stopped broker's session timing out (a fence
  of a broker that is not running) is healing, not a fault. When no healing step is enabled
  the state stays as it is until the end of the phase.

Per run it records the steps without a live leader, the steps from the last fault until
the partition has a live leader again (or never, within the run), and whether an
acknowledged record was lost. docs/availability.md states the definitions.

Run `i` of seed `S` draws from `random.Random(f"{S}/{i}")` in every variant, so a seed
gives the same JSON on every machine. The study reads no Kafka field: what it measures (a live
leader, lost records, KIP-966's tolerance, which steps are faults or healing) are the Model's
hooks, written once in specs/facts.py.
"""
from __future__ import annotations

import random
from typing import Callable, NamedTuple, Optional

import specs
from verifier.core.levels import random_step

# The bounds every variant runs with (the command's defaults; `--bound` overrides them): two
# records, two network partitions, one crash keeping the page cache, one crash losing the
# unflushed suffix (KIP-966's tolerance at min ISR 2), two lagging followers, three recovery
# rounds, and epoch caps a run never reaches: leaderless episodes and unclean elections happen.
DEFAULT_BOUNDS = {"records": 2, "fences": 2, "crashes": 1, "lossy_crashes": 1, "isr_shrinks": 2,
                  "unclean_recoveries": 3, "max_leader_epoch": 40, "max_partition_epoch": 80}
WARMUP_LIMIT = 50         # warm-up steps at most (two records are acknowledged in about ten)

# Steps to recover, in buckets (a histogram a design document can show); "never" is separate.
BUCKETS = ((1, 1), (2, 2), (3, 4), (5, 8), (9, 16), (17, 32), (33, None))


class Variant(NamedTuple):
    name: str
    preset: str
    flags: dict
    unclean_leader_election: bool
    doc: str


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("kafka", "kafka", {}, False,
            "Kafka 4.4.0: ELR on, unclean.leader.election.enable off, no recovery rounds"),
    Variant("kafka+unclean_leader_election", "kafka", {}, True,
            "Kafka 4.4.0 with unclean.leader.election.enable=true"),
    Variant("pre-kip-966", "pre-kip-966", {}, False, "before KIP-966: no ELR, unclean elections off"),
    Variant("pre-kip-966+unclean_leader_election", "pre-kip-966", {}, True,
            "before KIP-966 with unclean.leader.election.enable=true"),
    Variant("kafka+recovery=aggressive", "kafka", {"unclean_recovery_strategy": "aggressive"}, False,
            "KIP-966 unclean recovery rounds, strategy Aggressive: a round elects the most complete live replica"),
    Variant("kafka+recovery=balanced", "kafka", {"unclean_recovery_strategy": "balanced"}, False,
            "KIP-966 unclean recovery rounds, strategy Balanced: a round waits for the last known ELR members, "
            "then elects the most complete replica"),
    Variant("kafka+recovery=none", "kafka", {"unclean_recovery_strategy": "none"}, False,
            "KIP-966 unclean recovery rounds, strategy None: a round never elects"),
)}


def variant_config(variant: Variant, bounds: dict, replicas=None, min_isr=None) -> specs.Config:
    return specs.make_config(variant.preset, flags=variant.flags, bounds=bounds, replicas=replicas,
                             min_isr=min_isr, unclean_leader_election=variant.unclean_leader_election)


# ---------------------------------------------------------------- one run

class Stopped(Exception):
    """The run under way was stopped (a signal): it is dropped, the finished ones are kept."""


def run_once(model, rng: random.Random, fault_steps: int, heal_steps: int, should_stop=lambda: False) -> dict:
    budget = model.fault_budget()
    s = model.init_states()[0]
    warmup = 0
    while not model.acknowledged(s) and warmup < WARMUP_LIMIT:
        step = random_step(model, s, rng, model.heals)
        if step is None:
            break
        s, warmup = step[1], warmup + 1
    faults, last_fault, lost = 0, None, set()
    up: list[bool] = [model.live_leader(s)]         # up[t]: a live leader after step t
    t = 0
    while t < fault_steps and faults < budget:
        if t % 1024 == 1023 and should_stop():
            raise Stopped()
        step = random_step(model, s, rng)
        if step is None:
            break
        label, nxt = step
        t += 1
        if model.is_fault(s, label):
            faults, last_fault = faults + 1, t
        s = nxt
        up.append(model.live_leader(s))
        lost |= model.lost_records(s)
    fault_len, stuck_at = t, None
    leaderless = sum(1 for ok in up[1:] if not ok)
    outage = last_fault is not None and not up[last_fault]
    recover: Optional[int] = None
    if last_fault is not None:
        recover = next((i - last_fault for i in range(last_fault, len(up)) if up[i]), None)
    heal = 0
    while heal < heal_steps:              # the healing phase, counted as it goes (no per-step list)
        if heal % 1024 == 1023 and should_stop():
            raise Stopped()
        if stuck_at is None:
            step = random_step(model, s, rng, model.heals)
            if step is not None:
                s = step[1]
                lost |= model.lost_records(s)
            else:
                stuck_at = t
        t, heal = t + 1, heal + 1
        live = model.live_leader(s)
        leaderless += not live
        if recover is None and last_fault is not None and live:
            recover = t - last_fault
        if stuck_at is not None:          # nothing changes any more: the rest of the phase is this step again
            rest, heal = heal_steps - heal, heal_steps
            t, leaderless = t + rest, leaderless + rest * (not live)
    return {"warmup": warmup, "faults": faults, "fault_phase": fault_len, "steps": t, "leaderless": leaderless,
            "last_fault": last_fault, "outage": outage, "recover": recover,
            "stuck": recover is None and stuck_at is not None and last_fault is not None,
            "acked": model.acknowledged(s), "lost": sorted(lost), "unclean_elections": model.unclean_elections(s),
            "within_tolerance": model.within_tolerance(s)}


# ---------------------------------------------------------------- aggregates

def nearest_rank(sorted_values: list, q: float):
    """The q-quantile by nearest rank (an observed value, so integers stay integers)."""
    if not sorted_values:
        return None
    rank = -(-round(q * 1000) * len(sorted_values) // 1000)       # ceil(q * n), in integers
    return sorted_values[min(max(rank, 1), len(sorted_values)) - 1]


def bucket_label(lo: int, hi: Optional[int]) -> str:
    return f">{lo - 1}" if hi is None else (str(lo) if lo == hi else f"{lo}-{hi}")


def summarize(runs: list[dict]) -> dict:
    n = len(runs)
    fractions = [r["leaderless"] / r["steps"] for r in runs if r["steps"]]
    faulted = [r for r in runs if r["faults"]]
    outages = [r for r in faulted if r["outage"]]
    times = sorted(r["recover"] for r in outages if r["recover"] is not None)
    never = [r for r in outages if r["recover"] is None]
    hist = {bucket_label(lo, hi): sum(1 for x in times if x >= lo and (hi is None or x <= hi)) for lo, hi in BUCKETS}
    hist["never"] = len(never)
    lossy = [r for r in runs if r["lost"]]
    return {
        "runs": n,
        "runs_with_faults": len(faulted),
        "mean_faults": round(sum(r["faults"] for r in runs) / n, 4) if n else None,
        "leaderless_fraction": round(sum(fractions) / len(fractions), 4) if fractions else None,
        "runs_with_leaderless_steps": sum(1 for r in runs if r["leaderless"]),
        "recovery": {
            "outages": len(outages),
            "recovered": len(times),
            "min": times[0] if times else None,
            "median": nearest_rank(times, 0.5),
            "p90": nearest_rank(times, 0.9),
            "max": times[-1] if times else None,
            "never": len(never),
            "never_stuck": sum(1 for r in never if r["stuck"]),
            "histogram": hist,
        },
        "data_loss_runs": len(lossy),
        "data_loss_fraction": round(len(lossy) / n, 4) if n else None,
        "data_loss_runs_within_tolerance": sum(1 for r in lossy if r["within_tolerance"]),
        "runs_with_unclean_election": sum(1 for r in runs if r["unclean_elections"]),
    }


# ---------------------------------------------------------------- the measurement

class Measurement:
    """Runs variants one after another and keeps every finished run, so that an interrupt
    still leaves a report of what was measured (marked partial)."""

    def __init__(self, variants: list[str], runs: int, seed: int, fault_steps: int, heal_steps: int,
                 bounds: dict, replicas=None, min_isr=None):
        self.variants, self.runs, self.seed = variants, runs, seed
        self.fault_steps, self.heal_steps = fault_steps, heal_steps
        self.bounds = dict(bounds)
        self.configs = {v: variant_config(VARIANTS[v], self.bounds, replicas, min_isr) for v in variants}
        self.results: dict[str, list[dict]] = {v: [] for v in variants}

    def run(self, progress: Optional[Callable[[str, int], None]] = None,
            stop: Callable[[], bool] = lambda: False) -> bool:
        """Measures what is missing; False if `stop()` said to stop first (between two runs)."""
        for name in self.variants:
            model = specs.Model(self.configs[name], symmetry=False)
            done = self.results[name]
            for i in range(len(done), self.runs):
                if stop():
                    return False
                rng = random.Random(f"{self.seed}/{i}")
                try:
                    done.append(dict(run=i, **run_once(model, rng, self.fault_steps, self.heal_steps, stop)))
                except Stopped:
                    return False
                if progress:
                    progress(name, i + 1)
        return True

    @property
    def complete(self) -> bool:
        return all(len(r) == self.runs for r in self.results.values())

    def report(self, command: str) -> dict:
        cfg = next(iter(self.configs.values()))
        out = {"schema": "kraft-verify-availability/1", "command": command, "partial": not self.complete,
               "seed": self.seed, "runs": self.runs, "warmup_limit": WARMUP_LIMIT, "fault_steps": self.fault_steps,
               "heal_steps": self.heal_steps, "replicas": list(cfg.replicas), "min_isr": cfg.min_isr,
               "bounds": {b: getattr(cfg.bounds, b) for b in specs.BOUND_NAMES}, "variants": []}
        for name in self.variants:
            v, runs = VARIANTS[name], self.results[name]
            out["variants"].append({
                "name": name, "doc": v.doc, "preset": v.preset, "flags": v.flags,
                "unclean_leader_election": v.unclean_leader_election, "config": specs.config_label(self.configs[name]),
                "complete": len(runs) == self.runs, "summary": summarize(runs), "runs": runs})
        return out
