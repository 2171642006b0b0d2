"""A trace in the ITF format (Apalache / Quint's Informal Trace Format), so their tooling (the
ITF trace viewer, Quint's test runner) can read what kraft-verify found. Which fields a state
has and how a step is named come from the model (specs/display.py)."""
from __future__ import annotations

import json

from verifier.core.files import PathLike, write_atomic


def itf_trace(trace) -> dict:
    model, cfg = trace.model, trace.config
    source = f"kraft-verify {trace.engine} preset={cfg.preset}" + (f" mutant={cfg.mutant}" if cfg.mutant else "")
    what = f"violates {', '.join(trace.violated)}" if trace.violated else "violates no invariant"
    states = [{"#meta": {"index": 0}, **model.itf(trace.initial), "action": "init"}]
    states += [{"#meta": {"index": i}, **model.itf(s), "action": model.describe(label)}
               for i, (label, s) in enumerate(trace.steps, 1)]
    return {"#meta": {"format": "ITF", "source": source,
                      "description": f"kraft-verify {trace.engine} trace of {len(trace)} steps; {what}"},
            "vars": list(model.itf_vars) + ["action"],
            "states": states}


def write_itf(trace, path: PathLike) -> None:
    write_atomic(path, json.dumps(itf_trace(trace), indent=1) + "\n")
