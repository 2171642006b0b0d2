"""Hold the compiled kernel (specs/kernel, invariants/rows.py) to the NamedTuple model, state by
state: the same successors in the same order with the same labels, the same step by label,
the same deadlocks, and the same verdict of every property on every state and step.

`differential(cfg, limit)` walks the model's own BFS (specs.actions.successors) from the
initial state over at most `limit` states and raises AssertionError at the first
difference, naming the state and what differs. Run as a script it checks named configs:
    python tests/specs/kernel_diff.py [limit]
"""
from __future__ import annotations

import sys
from collections import deque

from specs import actions as A
from specs.kernel import Kernel


def _masks(cfg, s, props):
    from invariants.rows import STATE
    return sum(1 << STATE.index(p.name) for p in props if not p.check(cfg, s))


def differential(cfg, limit: int | None = None, step_labels: bool = True) -> int:
    """Compare the kernel with the model on up to `limit` states; the number compared."""
    import numpy as np

    from invariants import REGISTRY
    from invariants.rows import STATE, STEP, state_violations, step_violations
    k = Kernel(cfg)
    lay = k.layout.lay
    state_props = [p for p in REGISTRY if p.kind == "state"]
    step_props = [p for p in REGISTRY if p.kind == "step"]
    assert {p.name for p in state_props} == set(STATE) and {p.name for p in step_props} == set(STEP)
    start = A.init_state(cfg)
    seen, queue, n = {start}, deque([start]), 0
    while queue and (limit is None or n < limit):
        s = queue.popleft()
        n += 1
        row = k.pack(s)
        assert k.unpack(row) == s, f"unpack(pack(s)) != s for {s}"
        py = list(A.successors(cfg, s))
        ke = k.successors(s)
        if py != ke:
            raise AssertionError(_difference(s, py, ke))
        want = _masks(cfg, s, state_props)
        got = int(state_violations(row, lay, k.tables.facts, (1 << len(STATE)) - 1))
        assert got == want, f"state properties differ on {s}: model {bin(want)}, kernel {bin(got)}"
        for label, t in py:
            want = sum(1 << STEP.index(p.name) for p in step_props if not p.check(cfg, s, label, t))
            trow = k.pack(t)
            got = int(step_violations(row, A.ACTION_NAMES.index(label[0]), trow, lay, k.tables.facts,
                                      (1 << len(STEP)) - 1))
            assert got == want, f"step properties differ on {label} from {s}: model {bin(want)}, kernel {bin(got)}"
            if step_labels:
                assert k.step(s, label) == A.step(cfg, s, label)[0], f"step {label} differs from {s}"
            assert np.array_equal(k.pack(k.unpack(trow)), trow)
        if not py:
            model_stuck = next(A.successors(cfg, s, True), None) is None
            assert model_stuck == (not k.successors(s, True)), f"deadlock verdicts differ on {s}"
        for _, t in py:
            if t not in seen:
                seen.add(t)
                queue.append(t)
    return n


def _difference(s, py, ke) -> str:
    pl, kl = [label for label, _ in py], [label for label, _ in ke]
    if pl != kl:
        return f"labels differ from {s}:\n model  {pl}\n kernel {kl}"
    for (label, a), (_, b) in zip(py, ke):
        if a != b:
            return f"{label} from {s}:\n model  {a}\n kernel {b}"
    return "?"


def configs():
    """The configs the kernel is held to: every preset, every mutant, and bounds that switch on
    every action (named, for test ids)."""
    from specs.catalogue import MUTANTS, PRESETS
    from specs.config import make_config
    out = [(f"preset-{p}", make_config(p)) for p in PRESETS]
    out += [(f"mutant-{m}", make_config(mutant=m)) for m in MUTANTS]
    every = {"crashes": 1, "clean_shutdowns": 1, "admin_elections": 1, "config_changes": 1}
    out += [
        ("every-budget", make_config(bounds=every)),
        ("reassign", make_config(extra_brokers=(4,), bounds={"reassignments": 1})),
        ("recovery-every-budget", make_config("recovery", bounds={**every, "unclean_recoveries": 1})),
        ("kip-966-designated", make_config("kip-966", bounds={"admin_elections": 1})),
        ("any-candidate", make_config(flags={"any_candidate_elections": True}, bounds=every)),
        ("records-2", make_config(bounds={"records": 2})),
        ("brokers-4", make_config(replicas=(1, 2, 3, 4))),
        ("unclean-enabled", make_config(unclean_leader_election=True, bounds={"config_changes": 1})),
        ("kafka-3.9-every-budget", make_config("kafka-3.9", bounds=every)),
    ]
    return out


if __name__ == "__main__":
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    names = sys.argv[2:]
    bad = 0
    for name, cfg in configs():
        if names and name not in names:
            continue
        try:
            print(name, differential(cfg, limit), "states the same", flush=True)
        except AssertionError as exc:
            bad += 1
            print(name, "DIFFERS:", exc, flush=True)
    sys.exit(1 if bad else 0)
