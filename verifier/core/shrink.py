"""Shrinking a failing run, for every engine that finds long ones (Hypothesis, random walks):
delete steps while the same property still fails and every step stays enabled. A shrunk run
is a real run of the model, re-checked step by step."""
from __future__ import annotations

from typing import Optional

from verifier.core.properties import state_violations, step_violations


def replay_failure(model, initial, labels: list, names: set, invariants) -> Optional[list]:
    """Run `labels` from `initial`; the steps up to the first violation of one of `names`, or
    None if a label is not enabled where it stands or no such violation happens."""
    cfg = model.cfg
    s, steps = initial, []
    for label in labels:
        new = next((t for lb, t in model.action_successors(s, label[0]) if lb == label), None)
        if new is None:
            return None
        bad = set(step_violations(invariants, cfg, s, label, new)) | set(state_violations(invariants, cfg, new))
        steps.append((label, new))
        if bad & names:
            return steps
        s = new
    return None


def shrink_steps(model, initial, steps: list, names: list[str], invariants) -> list:
    """Delete steps while the same invariant still fails and every step stays enabled: halving
    chunks, then every window of 1-4 steps, then every pair of steps (a fence and its unfence
    only go together), until no deletion helps."""
    wanted = set(names)

    def attempt(labels):
        return replay_failure(model, initial, labels, wanted, invariants) if labels else None

    best = attempt([label for label, _ in steps]) or steps
    labels = [label for label, _ in best]
    chunk = max(len(labels) // 2, 1)
    while chunk > 4:                                   # coarse: halving chunks
        i = 0
        while i < len(labels):
            found = attempt(labels[:i] + labels[i + chunk:])
            if found is not None:
                best, labels = found, [label for label, _ in found]
            else:
                i += chunk
        chunk //= 2
    changed = True
    while changed:
        changed = False
        for size in (4, 3, 2, 1):                      # every window, at every offset
            i = 0
            while i + size <= len(labels):
                found = attempt(labels[:i] + labels[i + size:])
                if found is not None:
                    best, labels, changed = found, [label for label, _ in found], True
                else:
                    i += 1
        for a in range(len(labels)):                   # every pair of separate steps
            for b in range(a + 2, len(labels)):
                found = attempt(labels[:a] + labels[a + 1:b] + labels[b + 1:])
                if found is not None:
                    best, labels, changed = found, [label for label, _ in found], True
                    break
            if changed:
                break
    return best


def violated_at_end(cfg, initial, steps: list, invariants) -> list[str]:
    """The properties broken by the last step of `steps` (or in the state it reaches)."""
    prev = steps[-2][1] if len(steps) > 1 else initial
    label, last = steps[-1]
    return [inv.name for inv in invariants
            if not (inv.check(cfg, last) if inv.kind == "state" else inv.check(cfg, prev, label, last))]
