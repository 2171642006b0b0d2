"""`kraft-verify replay`: run scenario files through the model (docs/SCENARIOS.md)."""
from __future__ import annotations

import argparse
import json
import sys

from specs import ScenarioError
from verifier.cli.binding import engine, knobs, properties
from verifier.cli.common import console, one_line
from verifier.core.settings import Settings
from verifier.core.exitcodes import EXIT_INPUT, EXIT_OK, EXIT_VIOLATION


def run(args: argparse.Namespace) -> int:
    from rich.markup import escape
    from rich.table import Table
    from verifier.reports.story import render
    out = console()
    worst = EXIT_OK
    settings = Settings(knobs=knobs("replay", files=tuple(args.files), preset=args.preset,
                                    force_invariants=args.check_invariants))
    try:                          # every file is checked before any result is printed: one bad
        batch = engine("replay")(None, properties(), settings)    # file is one line and exit 2
    except ScenarioError as exc:
        print(f"kraft-verify: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_INPUT
    for path, result in zip(args.files, batch.facts):
        if args.preset:
            worst = max(worst, _under_preset(result, path, args.preset, out))
            continue
        if result.ok:
            note = ""
            if result.trace.violated:
                note = f" (reproduces {', '.join(result.trace.violated)})"
            elif result.violations:
                names = sorted({n for _, ns in result.violations for n in ns})
                note = f" (note: violated {', '.join(names)}; not checked)"
            out.print(f"PASS {path}: {result.name}, {len(result.trace)} operations{note}", markup=False)
            if args.verbose:
                render(result.trace, out, title=result.name)
            continue
        failure = result.failure
        out.print(f"FAIL {path}: step {failure.step}: {failure.message}", markup=False)
        if failure.diffs:
            table = Table(title=f"{result.name}: step {failure.step}")
            for col in ("field", "expected", "actual"):
                table.add_column(col)
            for name, want, got in failure.diffs:
                table.add_row(name, escape(json.dumps(want)), escape(json.dumps(got)))
            out.print(table)
        render(result.trace, out, title=f"{result.name}: operations up to the failure")
        if worst == EXIT_OK:
            worst = EXIT_VIOLATION
    return worst


def _under_preset(result, path: str, preset: str, out) -> int:
    """`replay --preset P`: does the scenario still happen under P? In words, not as a failed
    expectation: exit 0 when it reproduces, 1 when it does not."""
    if result.ok:
        what = ", ".join(result.trace.violated) or "every expectation holds"
        out.print(f"reproduces under {preset}: {path} ({result.name}: {what})", markup=False)
        return EXIT_OK
    failure = result.failure
    if failure.diffs:
        words = "; ".join(f"{name} is {json.dumps(got)}, not {json.dumps(want)}" for name, want, got in failure.diffs)
    else:
        words = failure.message
    steps = result.trace.steps
    after = f" (after {result.trace.model.describe(steps[-1][0])})" if steps else ""
    out.print(f"does not reproduce under {preset}: {path}: step {failure.step}{after}: {words}", markup=False)
    return EXIT_VIOLATION
