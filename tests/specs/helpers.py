"""Shared helpers for the protocol rule tests in tests/specs/.

Every test drives the model only through the public transition function
`specs.scenario.apply_op(cfg, state, op)` (which returns (state, error, label)) from
`specs.scenario.initial_state(cfg, initial)`, the same path `kraft-verify replay` takes.
The op builders below write the scenario ops of docs/SCENARIOS.md.
"""
from __future__ import annotations

from specs import actions as A
from specs import brokers as B
from specs.config import config_from_dict
from specs.scenario import apply_op, initial_state
from specs.state import RECOVERY_NAMES


def conf(replicas=(1, 2, 3), min_isr=2, **extra):
    """A scenario `config` block -> Config."""
    return config_from_dict({"replicas": list(replicas), "min_isr": min_isr, **extra})


class Sim:
    """A partition driven step by step through apply_op."""

    def __init__(self, config, initial=None, universe=()):
        self.cfg, self.s = initial_state(config, initial or {}, tuple(universe))
        self.error = None

    def do(self, *ops):
        for op in ops:
            self.s, self.error, _ = apply_op(self.cfg, self.s, op)
        return self.error

    @property
    def p(self):
        return self.s.ctrl.partition

    def log(self, b):
        return B.replica_of(self.cfg, self.s, b).log

    def replica(self, b):
        return B.replica_of(self.cfg, self.s, b)

    def set_log(self, b, log):
        r = self.replica(b)
        self.s = B.set_replica(self.cfg, self.s, b, r._replace(log=tuple(log)))

    def hwm(self, b=None):
        return self.replica(self.p.leader if b is None else b).hwm

    def expect(self, **exp):
        expect(self.s, **exp)


def run(config, initial=None, *ops, universe=()):
    """Apply `ops` from `initial`; returns (state, error of the last op)."""
    sim = Sim(config, initial, universe)
    err = sim.do(*ops)
    return sim.s, err


_ALIASES = {"lke": "last_known_elr", "le": "leader_epoch", "pe": "partition_epoch",
            "rec": "leader_recovery_state", "adding": "adding_replicas", "removing": "removing_replicas"}


def expect(s, **exp):
    """Compare partition fields: ISR/ELR/last_known_elr as sets (sorted lists, so duplicates
    show), replica lists in order, recovery state by name, plus controller fields."""
    p = s.ctrl.partition
    for key, want in exp.items():
        name = _ALIASES.get(key, key)
        if name in ("isr", "elr", "last_known_elr"):
            actual, want = sorted(getattr(p, name)), sorted(want)
        elif name in ("replicas", "adding_replicas", "removing_replicas"):
            actual, want = list(getattr(p, name)), list(want)
        elif name == "leader_recovery_state":
            actual = RECOVERY_NAMES[p.leader_recovery_state]
        elif name == "fenced":
            actual, want = sorted(s.ctrl.fenced), sorted(want)
        elif name == "shutting_down":
            actual, want = sorted(s.ctrl.shutting_down), sorted(want)
        elif name == "effective_min_isr":
            actual = s.ctrl.effective_min_isr
        else:
            actual = getattr(p, name)
        assert actual == want, f"{key}: expected {want!r}, got {actual!r}"


def fence(b):
    return {"op": "fence", "broker": b}


def unfence(b):
    return {"op": "unfence", "broker": b}


def cshut(b):
    return {"op": "controlled_shutdown", "broker": b}


def register(b, **kw):
    return {"op": "register", "broker": b, **kw}


def alter(le, pe, isr, epochs=None, **kw):
    op = {"op": "alter_partition", "leader_epoch": le, "partition_epoch": pe, "isr": list(isr)}
    if epochs is not None:
        op["broker_epochs"] = {str(k): v for k, v in epochs.items()}
    op.update(kw)
    return op


def elect(kind, leader=None):
    op = {"op": "elect", "type": kind}
    if leader is not None:
        op["leader"] = leader
    return op


def set_min_isr(v):
    return {"op": "set_min_isr", "value": v}


def set_unclean(v):
    return {"op": "set_unclean", "value": v}


PERIODIC = {"op": "periodic_unclean_election"}
REBALANCE = {"op": "periodic_preferred_election"}


def reassign(rs):
    return {"op": "reassign", "replicas": list(rs)}


def recover(strategy):
    return {"op": "unclean_recovery", "strategy": strategy}


PRODUCE = {"op": "produce"}
ADVANCE = {"op": "advance_hwm"}
DELIVER = {"op": "deliver_alter_partition"}


def fetch(b):
    return {"op": "fetch", "broker": b}


def expand(b):
    return {"op": "expand_isr", "broker": b}


def shrink(b):
    return {"op": "shrink_isr", "broker": b}


def crash(b):
    return {"op": "crash", "broker": b}


def crash_lossy(b, keep):
    return {"op": "crash_lossy", "broker": b, "keep": keep}


def restart(b):
    return {"op": "restart", "broker": b}


def clean_shutdown(b):
    return {"op": "clean_shutdown", "broker": b}


def random_runs(cfg, walks: int, depth: int, seed):
    """Steps (prev, label, next) of seeded random walks through the model's successors."""
    import random
    rng = random.Random(seed)
    for _ in range(walks):
        s = A.init_state(cfg)
        for _ in range(depth):
            succ = list(A.successors(cfg, s))
            if not succ:
                break
            label, nxt = rng.choice(succ)
            yield s, label, nxt
            s = nxt
