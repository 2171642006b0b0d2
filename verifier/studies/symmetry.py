"""Is the symmetry reduction sound for this config? The same search with and without it:
the states it saved, and whether every verdict (and each counterexample's length) agrees."""
from __future__ import annotations


def compare(engine_run, reduced, plain_model, properties, settings) -> dict:
    """`reduced` is the result with symmetry; `plain_model` the same config without it."""
    plain = engine_run(plain_model, properties, settings)
    same = (plain.status == reduced.status and
            {n: len(t) for n, t in plain.counterexamples.items()} ==
            {n: len(t) for n, t in reduced.counterexamples.items()})
    return {"states_without_symmetry": plain.distinct_states,
            "states_saved": plain.distinct_states - reduced.distinct_states,
            "seconds_without_symmetry": round(plain.seconds, 3), "same_verdict": same}
