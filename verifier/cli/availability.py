"""`kraft-verify availability`: seeded random fault schedules per protocol variant, measured
(verifier/studies/availability.py; docs/availability.md). A measurement, not a verdict: exit 0 when it
completes, 3 when interrupted (the report it still writes says it is partial), 2 on bad input."""
from __future__ import annotations

import argparse
import json
import signal
import time

from specs import unknown
from verifier.studies.availability import DEFAULT_BOUNDS, VARIANTS, Measurement
from verifier.reports.availability import COLUMNS, DEFINITIONS, html, markdown, partial_note, row
from verifier.cli.common import UsageError, console, run_dir
from verifier.cli.progress import ProgressLine
from verifier.core.exitcodes import EXIT_OK, EXIT_STOPPED
from verifier.reports.writer import write_pages

DEFAULTS = {"runs": 500, "seed": 0, "fault_steps": 20, "heal_steps": 40}


def _options(args: argparse.Namespace) -> tuple[list[str], dict, list[str]]:
    """(variants, bounds, the command that reproduces the numbers: every option but --out)."""
    for name, least in (("runs", 1), ("fault_steps", 0), ("heal_steps", 0)):
        if getattr(args, name) < least:
            raise UsageError(f"--{name.replace('_', '-')} must be >= {least}, got {getattr(args, name)}")
    variants = []
    for name in args.variant or VARIANTS:
        if name not in VARIANTS:
            raise unknown("variant", name, VARIANTS)
        if name not in variants:
            variants.append(name)
    bounds = dict(DEFAULT_BOUNDS)
    extra = []
    for text in args.bound or []:
        name, _, value = text.partition("=")
        try:
            bounds[name.strip()] = int(value)
        except ValueError:
            raise UsageError(f"--bound takes NAME=N, got '{text}'") from None
        extra += ["--bound", f"{name.strip()}={int(value)}"]
    command = ["kraft-verify", "availability"]
    for flag, key in (("--runs", "runs"), ("--seed", "seed"), ("--fault-steps", "fault_steps"),
                      ("--heal-steps", "heal_steps")):
        if getattr(args, key) != DEFAULTS[key]:
            command += [flag, str(getattr(args, key))]
    if args.variant:
        command += [word for name in variants for word in ("--variant", name)]
    for flag, value in (("--brokers", args.brokers), ("--min-isr", args.min_isr)):
        if value is not None:
            command += [flag, str(value)]
    return variants, bounds, command + extra


def run(args: argparse.Namespace) -> int:
    variants, bounds, command = _options(args)
    replicas = list(range(1, args.brokers + 1)) if args.brokers is not None else None
    m = Measurement(variants, args.runs, args.seed, args.fault_steps, args.heal_steps, bounds,
                    replicas=replicas, min_isr=args.min_isr)     # a bad bound or min ISR: ConfigError, exit 2
    out = console()
    _, out_dir = run_dir(args.out, "availability", m.configs[variants[0]])
    start = time.monotonic()
    requests: list[int] = []

    def on_sigint(signum, frame):      # the first Ctrl-C ends the measurement after the current run
        requests.append(signum)
        if len(requests) > 1:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        out.print(f"kraft-verify availability: {len(variants)} variants x {args.runs} runs, seed {args.seed}, "
                  f"fault steps {args.fault_steps}, heal steps {args.heal_steps}", markup=False)
        with ProgressLine(out, True, what="availability: measuring") as line:
            m.run(progress=lambda name, i: line.status(f"{name}: run {i} of {args.runs}"), stop=lambda: bool(requests))
    except KeyboardInterrupt:
        requests.append(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)
    rep = m.report(" ".join(command))
    rep["definitions"] = dict(DEFINITIONS)
    _show(out, rep)
    write_pages(out_dir, {"availability.json": json.dumps(rep, indent=1) + "\n", "report.md": markdown(rep),
                          "availability.html": html(rep)})
    out.print(f"{time.monotonic() - start:.1f}s; report: {out_dir}", markup=False)
    return EXIT_STOPPED if rep["partial"] else EXIT_OK


WIDE = 150                 # the table's natural width; a narrower terminal gets a block per variant


def _show(out, rep: dict) -> None:
    """The table, or on a terminal narrower than it one block per variant (twelve columns in 80
    had left every header and most cells empty)."""
    from rich.padding import Padding
    from rich.table import Table
    title = "availability per variant" + (" (PARTIAL)" if rep["partial"] else "")
    if out.width < WIDE:
        out.print(title, markup=False)
        for v in rep["variants"]:
            cells = row(v)
            out.print(cells[0], markup=False)
            out.print(Padding(", ".join(f"{c} {x}" for c, x in zip(COLUMNS[1:], cells[1:])), (0, 0, 0, 2)),
                      markup=False)
    else:
        table = Table(title=title)
        for c in COLUMNS:
            table.add_column(c, justify="left" if c == "variant" else "right", no_wrap=c in ("variant", "data loss"))
        for v in rep["variants"]:
            table.add_row(*row(v))
        out.print(table)
    note = partial_note(rep)
    if note:
        out.print(note, markup=False)
