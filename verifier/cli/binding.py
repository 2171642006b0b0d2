"""Where the command line binds the three parts: the model (specs), the properties
(invariants) and the engines (verifier/engines, spark). The only module of verifier/ that
imports invariants/: engines and studies are handed the properties they check.
"""
from __future__ import annotations

import functools
import importlib

from specs import unknown

# Engine name -> the module whose run(model, properties, settings, progress=None) it is.
ENGINES = {
    "bfs": "verifier.engines.bfs", "kernel": "verifier.engines.kernel", "simulate": "verifier.engines.simulate",
    "fuzz": "verifier.engines.fuzz", "liveness": "verifier.engines.liveness", "prove": "verifier.engines.prove",
    "replay": "verifier.engines.replay", "conform": "verifier.engines.conform.run", "spark": "spark.engine",
    "cluster-conform": "verifier.engines.cluster.run", "kernel-simulate": "verifier.engines.kernel.walks",
    "validate-log": "verifier.engines.cluster.validate",
}


def engine(name: str):
    """The engine's run function (imported on first use: a command pays only for its engine),
    which also notes on a search's result the run's peak resident set (the process's peak
    started over before the run, where Linux allows it: summary.json's bytes a state)."""
    run = importlib.import_module(ENGINES[name]).run

    @functools.wraps(run)
    def measured(*args, **kwargs):
        from verifier.core.machine import peak_resident_bytes, reset_peak_resident
        from verifier.core.result import SearchResult
        own = reset_peak_resident()
        result = run(*args, **kwargs)
        if isinstance(result, SearchResult):
            result.peak_resident_bytes, result.peak_resident_own = peak_resident_bytes(), own
        return result
    return measured


def knobs(name: str, **values):
    """The engine's own knobs (its `Knobs` class, checked as they are made: KnobError), or
    None for an engine that has none."""
    kind = getattr(importlib.import_module(ENGINES[name]), "Knobs", None)
    return kind(**values) if kind is not None else None


def refuse(name: str, model, properties, settings) -> None:
    """The engine's checks before a run starts (`refuse(model, properties, settings)`, raising
    InputError), if it has any."""
    check = getattr(importlib.import_module(ENGINES[name]), "refuse", None)
    if check is not None:
        check(model, properties, settings)


def properties() -> tuple:
    """Every safety property (state and step invariants), in registry order."""
    import invariants
    return tuple(invariants.REGISTRY)


def select(names) -> tuple:
    """The properties to check: all, or the named ones (each once, in the order named)."""
    by_name = {inv.name: inv for inv in properties()}
    for n in names or []:
        if n not in by_name:
            raise unknown("invariant", n, list(by_name))
    names = list(dict.fromkeys(names or []))
    return tuple(by_name[n] for n in names) if names else properties()


def liveness_properties() -> tuple:
    from invariants.liveness import LIVENESS
    return LIVENESS


def symbolic() -> dict:
    """The z3 engine's properties: name -> twin or lemma, and the default sets."""
    from invariants import symbolic as S
    return {"by_name": S.BY_NAME, "invariants": S.INVARIANTS, "more": S.MORE_INVARIANTS, "lemmas": S.LEMMAS,
            "default": S.DEFAULT}
