"""A command that runs one engine by its name: how a new engine reaches the command line
without a module of its own. options.toml declares the command (`run = "verifier.cli.run:run"`,
`engine = "NAME"`, and the model, search and engine options it takes); verifier/cli/binding.py
names the engine's module. An option whose name is a field of the engine's `Knobs` (--max-children
for `max_children`) is handed to the engine there, checked as the knobs are made (one line and
exit 2 when out of range). Progress reaches the console as for every engine; the run is
reported like any other: summary.json, report.md, report.html, JUnit and the counterexample
files, through the one run writer."""
from __future__ import annotations

import argparse
from dataclasses import fields

from specs import Model
from verifier.cli.binding import engine, knobs
from verifier.cli.common import console, header_line, run_dir, write_result
from verifier.cli.progress import ProgressLine
from verifier.cli import options
from verifier.cli.search import search_inputs
from verifier.core import stop
from verifier.core.settings import Options, Settings


def run(args: argparse.Namespace) -> int:
    name = options.table()["command"][args.command]["engine"]
    inputs = search_inputs(args)
    model = Model(inputs.cfg, symmetry=inputs.symmetry)
    defaults = knobs(name)
    own = knobs(name, **{f.name: getattr(args, f.name) for f in fields(defaults)
                         if getattr(args, f.name, None) is not None}) if defaults is not None else None
    settings = Settings(limits=inputs.limits, options=Options(check_deadlock=inputs.deadlock,
                                                              keep_going=not inputs.stop_at_first), knobs=own)
    out = console()
    run_id, out_dir = run_dir(args.out, args.command, inputs.cfg)
    out.print(header_line(args.command, inputs.cfg, f"engine={name}"), markup=False)
    with ProgressLine(out, not getattr(args, "quiet", False)) as progress, stop.polled():
        result = engine(name)(model, inputs.invariants, settings, progress)
    summary = write_result(result, model, out_dir, run_id, args, inputs.cfg.preset, out)
    for row in summary["invariants"]:
        out.print(f"{row['name']}: {row['status']}", markup=False)
    out.print(f"{summary['result']} (exit {summary['exit_code']})", markup=False)
    return summary["exit_code"]
