"""One source run two ways: the kernel's functions compiled by numba and run by CPython
(NUMBA_DISABLE_JIT=1) must agree on everything the model answers.

`digest(cfg, limit)` walks the model's BFS from the initial state over at most `limit` states
and records, per state: its row and fingerprint, that unpack(pack(s)) == s, its successors'
labels, rows and fingerprints (each from its parent's, asserted equal to its own), what each
action's guard enables, every property's verdict on the state and on each step, each step by
label with its error, and whether it is stuck. Run in two
processes, one compiled and one interpreted, the digests must be equal:
    python tests/specs/kernel_diff.py LIMIT NAME...    # prints the digests' JSON
"""
from __future__ import annotations

import json
import sys
from collections import deque


def digest(cfg, limit: int) -> list:
    import numpy as np

    from invariants import REGISTRY
    from specs.kernel.properties import STATE, STEP, state_violations, step_verdict, step_violations
    from specs import actions as A
    from specs.kernel import kernel_of
    from verifier.core.rowhash import child_hash, row_hash
    k = kernel_of(cfg)
    lay = k.layout.lay
    names = {p.name for p in REGISTRY}
    assert names == set(STATE) | set(STEP), "every registered property has a row form"
    hashes = {}

    def fingerprint(row):
        # row_hash is a pure function of the row's values, so each distinct row is hashed once
        # (interpreted, row_hash was three quarters of the run: a state's hash was made again for
        # each of its steps, and most successors are reached from several states)
        key = row.tobytes()
        if key not in hashes:
            hashes[key] = [int(v) for v in row_hash(row)]
        return hashes[key]

    start = A.init_state(cfg)
    seen, queue, out = {start}, deque([start]), []
    while queue and len(out) < limit:
        s = queue.popleft()
        row = k.pack(s)
        assert k.unpack(row) == s, f"unpack(pack(s)) != s for {s}"
        steps = list(A.successors(cfg, s))
        own = fingerprint(row)
        entry = {"row": [int(v) for v in row], "fp": own,
                 "state": int(state_violations(row, lay, k.tables.facts, (1 << len(STATE)) - 1)),
                 "guards": {a: [list(map(repr, p)) for p in k.enabled(s, a)] for a in A.ACTION_NAMES},
                 "steps": []}
        for label, t in steps:
            trow = k.pack(t)
            fp = [int(v) for v in child_hash(row, *map(np.uint64, own), trow)]
            assert fp == fingerprint(trow), "a successor's fingerprint from its parent's is its own"
            after, error = A.step(cfg, s, label)
            action = A.ACTION_NAMES.index(label[0])
            verdict = int(step_violations(row, action, trow, lay, k.tables.facts, (1 << len(STEP)) - 1))
            assert int(step_verdict(row, action, trow, lay, k.tables.facts, (1 << len(STEP)) - 1)) == verdict, \
                f"the searches' step_verdict answers {label} otherwise than step_violations"
            entry["steps"].append({
                "label": repr(label), "row": [int(v) for v in trow], "fp": fp, "error": error, "same": after == t,
                "step": verdict})
            assert np.array_equal(k.pack(k.unpack(trow)), trow)
        if not steps:
            entry["stuck"] = next(A.successors(cfg, s, True), None) is None
        out.append(entry)
        for _, t in steps:
            if t not in seen:
                seen.add(t)
                queue.append(t)
    return out


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
        ("metadata-lag", make_config(bounds={**every, "metadata_lag": 1})),
    ]
    return out


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore")          # numpy's integer overflow warnings in the interpreted hashes
    import dataclasses
    limit, wanted = int(sys.argv[1]), set(sys.argv[2:])
    # presets that are one model (today kafka, kafka-4.3 and kafka-4.4; kafka-4.1 and 4.2: the
    # config less the preset's name, a name kept for reports) have one digest, made once
    made, out = {}, {}
    for name, cfg in configs():
        if not wanted or name in wanted:
            model = repr(sorted((k, v) for k, v in dataclasses.asdict(cfg).items() if k != "preset"))
            out[name] = made[model] if model in made else made.setdefault(model, digest(cfg, limit))
    print(json.dumps(out))
