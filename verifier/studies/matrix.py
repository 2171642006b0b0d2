"""The variant matrix: every preset (releases, the KIP text, the pre-KIP variants) against every
property, under several sets of bounds, each row one exhaustive search (the compiled kernel,
verifier/engines/kernel/, with every violation kept). A row the search cannot exhaust within its budget is then fuzzed
(Hypothesis, verifier/engines/fuzz.py) for the properties the search did not break. The
command line hands the study both engines and the properties (`Engines`). A cell is holds,
violated (with the counterexample's length, the engine that found it, its replay scenario and
the row's report) or "not reached" (neither the search within its budget nor the fuzzing broke
it: not a proof).

Rows are cached: a row's key is the hash of its config and of the model's source (specs/ and
invariants/), so `make matrix` reuses every row whose config and model did not change and
recomputes the rest (an interrupted matrix resumes where it stopped).
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Callable, NamedTuple, Optional

from specs import Model, config_label, make_config
from verifier.core.files import json_text
from verifier.core.settings import Limits, Options, Settings
from verifier.reports.writer import write_pages, write_result

RELEASES = ("kafka-4.4", "kafka-4.3", "kafka-4.2", "kafka-4.1", "kafka-4.1.0", "kafka-4.0", "kafka-3.9", "kip-966",
            "pre-kip-966", "pre-kip-903")
# name -> bounds over the preset's. The first four are sized to be exhausted in seconds to
# minutes per row (the default `kraft-verify matrix`); the last two are `make matrix-extended`.
BOUND_SETS = {
    "default": {},
    "recovery": {},          # the preset composed with the recovery profile (rules and bounds)
    # a min.insync.replicas or unclean.leader.election change; one ISR shrink keeps it small
    "config": {"config_changes": 1, "isr_shrinks": 1},
    # min ISR above the replication factor (Kafka caps the effective min ISR) with a
    # reassignment to a spare broker; no lossy crash keeps it small
    "min-isr-above-rf": {"reassignments": 1, "isr_shrinks": 1, "lossy_crashes": 0},
    "admin+config": {"admin_elections": 1, "config_changes": 1},
    "reassignment": {"reassignments": 1},
    # admin elections with a reassignment to a spare broker (conform's fourth set)
    "admin+reassignment": {"admin_elections": 1, "reassignments": 1},
}
DEFAULT_SETS = ("default", "recovery", "config", "min-isr-above-rf")
SPARE_BROKER = ("reassignment", "min-isr-above-rf", "admin+reassignment")   # sets that add a reassignment target
FUZZ_EXAMPLES = 2500         # per fuzz round on a row the search could not exhaust (the ci profile's size)
HOLDS, VIOLATED, NOT_REACHED = "holds", "violated", "not reached"


class Engines(NamedTuple):
    """What the study runs: the exhaustive search, the fuzzer, the properties they check, and
    how the fuzzer's knobs are made (the fuzz engine's own `Knobs`, handed in like the engine)."""
    search: Callable
    fuzz: Callable
    properties: tuple
    fuzz_knobs: Callable
    search_name: str = "kernel"      # the exhaustive search's engine, named in every row and cell


class Row(NamedTuple):
    preset: str
    bounds: str

    @property
    def id(self) -> str:
        return f"{self.preset}@{self.bounds}"


def _sources() -> list[Path]:
    """The directories whose code decides a row: the model and its properties (specs/,
    invariants/) and the engines that search them with what they share (verifier/engines/,
    verifier/core/), found where Python would import them from (without importing them: a study
    is handed its engines and properties), so a copy of the tree or an installed package hashes
    its own code."""
    import importlib.util
    out = []
    for name in ("specs", "invariants", "verifier.core", "verifier.engines"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(f"matrix: cannot find the source of {name} to key its cache on")
        out.append(Path(list(spec.submodule_search_locations)[0]).resolve())
    return out


def model_hash() -> str:
    """The model's source: a row computed from other rules is never reused. Fails loudly if it
    finds no source file (a hash of nothing would match every tree)."""
    h = hashlib.sha256()
    files = 0
    for top in _sources():
        for path in sorted(top.rglob("*")):
            if path.is_file() and path.suffix in (".py", ".toml"):
                h.update(f"{top.name}/{path.relative_to(top)}".encode())
                h.update(path.read_bytes())
                files += 1
    if files == 0:
        raise RuntimeError("matrix: no model source found to key its cache on")
    return h.hexdigest()[:16]


def row_config(row: Row, brokers: Optional[int] = None):
    """The row's config: replicas 1..brokers (default 3), a spare broker for the sets that
    reassign, min ISR one above the replication factor for min-isr-above-rf."""
    n = brokers or 3
    spare = [n + 1] if row.bounds in SPARE_BROKER else None
    min_isr = n + 1 if row.bounds == "min-isr-above-rf" else None
    preset = f"{row.preset}+recovery" if row.bounds == "recovery" else row.preset
    return make_config(preset, replicas=list(range(1, n + 1)), bounds=dict(BOUND_SETS[row.bounds]),
                       extra_brokers=spare, min_isr=min_isr)


def row_key(cfg, budget: float, mhash: str, fuzz_examples: int = FUZZ_EXAMPLES) -> str:
    text = json.dumps({"config": config_label(cfg), "replicas": list(cfg.replicas), "min_isr": cfg.min_isr,
                       "extra": list(cfg.extra_brokers), "budget": budget, "model": mhash,
                       "fuzz_examples": fuzz_examples}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_row(row: Row, cfg, budget: float, out_dir: Path, command: str, engines: Engines,
            fuzz_examples: int = FUZZ_EXAMPLES) -> dict:
    """One exhaustive search with every violation kept; its report and scenarios under out_dir.
    A search cut short is followed by fuzz rounds of `fuzz_examples` each (the row budget bounds
    the search only: a fuzz round is bounded by its examples, so its verdicts do not depend on
    the machine's speed)."""
    model = Model(cfg, symmetry=False)      # no matrix row is symmetric (every preset elects in replica order)
    invs = engines.properties
    result = engines.search(model, invs, Settings(limits=Limits(time_budget=budget), options=Options(keep_going=True)))
    where = out_dir / row.id.replace("@", "_")
    where.mkdir(parents=True, exist_ok=True)
    by_engine = {}
    if not result.explored_all:
        by_engine.update(_fuzz_rest(engines, model, invs, result.counterexamples, fuzz_examples))
        result.judge(invs)
    # a row keeps each property's scenario, not a separate counterexample.json
    summary = write_result(result, model, where, f"matrix-{row.id}", command, row.id, first=False)
    cells = {}
    for inv in summary["invariants"]:
        if inv["status"] == VIOLATED:
            cex = inv["counterexample"]
            cells[inv["name"]] = {"status": VIOLATED, "length": cex["length"],
                                  "engine": by_engine.get(inv["name"], engines.search_name),
                                  "scenario": f"{where.name}/{cex['scenario']}", "report": f"{where.name}/report.html"}
        else:
            cells[inv["name"]] = {"status": HOLDS if result.explored_all else NOT_REACHED,
                                  "report": f"{where.name}/report.html"}
    return {"preset": row.preset, "bounds": row.bounds, "bound_values": BOUND_SETS[row.bounds],
            "shape": {"replicas": list(cfg.replicas), "spare_brokers": list(cfg.extra_brokers), "min_isr": cfg.min_isr},
            "engine": engines.search_name,
            "states": result.distinct_states, "seconds": round(result.seconds, 1), "complete": result.explored_all,
            "stop_reason": result.stop_reason, "cells": cells}


def _fuzz_rest(engines: Engines, model, invs, traces: dict, examples: int = FUZZ_EXAMPLES) -> dict[str, str]:
    """Fuzz a row the search could not finish, a round per violation found, for the properties
    the search did not break; their traces join `traces`. Returns property -> "fuzz"."""
    found: dict[str, str] = {}
    rest = [inv for inv in invs if inv.name not in traces]
    settings = Settings(knobs=engines.fuzz_knobs(profile="ci", examples=examples, seed=0, database=None))
    while rest:
        res = engines.fuzz(model, rest, settings)
        new = [n for n in res.violated if n not in traces]
        if res.status != "violation" or not new:
            break
        for name in new:
            traces[name] = res.counterexample
            found[name] = "fuzz"
        rest = [inv for inv in rest if inv.name not in new]
    return found


# What a cached row holds, each field of its type (anything else is a damaged file, recomputed).
ROW_FIELDS = {"key": str, "preset": str, "bounds": str, "bound_values": dict, "shape": dict, "engine": str, "states": int,
              "seconds": (int, float), "complete": bool, "stop_reason": str, "cells": dict, "mac": str}
CELL_STATUSES = {HOLDS, VIOLATED, NOT_REACHED}


def cached_rows(path: Path, names: list[str]) -> dict:
    """The rows of an earlier matrix.json that may be reused: by key, each signed with the
    user's key (verifier/core/signing.py), each field of its type, one cell per property and
    no "holds" in a row that was not exhausted. A damaged, foreign or forged row is recomputed."""
    from specs.scenario.checks import Unreadable, read_data
    from verifier.core.signing import signed
    try:
        data = read_data(str(path), lambda raw: json.loads(raw.decode("utf-8")), "matrix")
    except Unreadable:
        return {}
    rows = data.get("rows") if isinstance(data, dict) else None
    out = {}
    for r in rows if isinstance(rows, list) else ():
        if (isinstance(r, dict) and set(r) == set(ROW_FIELDS)
                and all(isinstance(r[k], kind) and not (kind is int and isinstance(r[k], bool))
                        for k, kind in ROW_FIELDS.items())
                and sorted(r["cells"]) == sorted(names) and all(_cell_ok(c, r["complete"]) for c in r["cells"].values())
                and signed({k: v for k, v in r.items() if k != "mac"}, r["mac"])):
            out[r["key"]] = r
    return out


def _cell_ok(cell, complete: bool) -> bool:
    return (isinstance(cell, dict) and cell.get("status") in CELL_STATUSES
            and (cell["status"] != HOLDS or complete) and (cell["status"] != NOT_REACHED or not complete)
            and (cell["status"] != VIOLATED or (type(cell.get("length")) is int and cell["length"] >= 0)))


def build(rows: list[Row], out_dir: Path, budget: float, command: str, engines: Engines, brokers: Optional[int] = None,
          on_row: Optional[Callable[[dict, bool], None]] = None, stopped: Callable[[], bool] = lambda: False,
          fuzz_examples: int = FUZZ_EXAMPLES) -> dict:
    """Every row, reusing the cached ones; matrix.json is rewritten after each row. A row cut
    short by `stopped()` (a signal) is neither kept nor cached, and no later row runs: the
    matrix says which rows it lacks (`missing`)."""
    from verifier.core.signing import mac
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "matrix.json"
    old = cached_rows(path, [p.name for p in engines.properties]) if path.exists() else {}
    mhash = model_hash()
    done: list[dict] = []
    started = time.monotonic()
    for i, row in enumerate(rows):
        cfg = row_config(row, brokers)
        key = row_key(cfg, budget, mhash, fuzz_examples)
        reused = key in old
        try:
            entry = old[key] if reused else dict(run_row(row, cfg, budget, out_dir, command, engines, fuzz_examples),
                                                 key=key)
        except KeyboardInterrupt:          # a signal inside the row's fuzzing (verifier/core/stop.py)
            entry = None
        if entry is None or stopped():
            return {"model": mhash, "budget_seconds": budget, "command": command, "rows": done,
                    "missing": [r.id for r in rows[i:]], "seconds": round(time.monotonic() - started, 1)}
        if not reused:
            entry["mac"] = mac(entry)
        done.append(entry)
        matrix = {"model": mhash, "budget_seconds": budget, "command": command, "rows": done}
        write_pages(out_dir, {path.name: json_text(matrix)})
        if on_row:
            on_row(entry, reused)
    return {"model": mhash, "budget_seconds": budget, "command": command, "rows": done, "missing": [],
            "seconds": round(time.monotonic() - started, 1)}


def properties(matrix: dict) -> list[str]:
    names: list[str] = []
    for r in matrix["rows"]:
        names += [n for n in r["cells"] if n not in names]
    return names
