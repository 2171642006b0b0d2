"""A command that runs one engine by its name: how a new engine reaches the command line
without a module of its own. options.toml declares the command (`run = "verifier.cli.run:run"`,
`engine = "NAME"`, and the model and search options it takes); verifier/cli/binding.py names
the engine's module. The run is reported like any other: summary.json, report.md,
report.html, JUnit and the counterexample files, through the one run writer."""
from __future__ import annotations

import argparse

from specs import Model
from verifier.cli.binding import engine
from verifier.cli.common import console, header_line, run_dir, write_result
from verifier.cli import options
from verifier.cli.search import search_inputs
from verifier.core import stop
from verifier.core.settings import Options, Settings


def run(args: argparse.Namespace) -> int:
    name = options.table()["command"][args.command]["engine"]
    inputs = search_inputs(args)
    model = Model(inputs.cfg, symmetry=inputs.symmetry)
    settings = Settings(limits=inputs.limits, options=Options(check_deadlock=inputs.deadlock,
                                                              keep_going=not inputs.stop_at_first))
    out = console()
    run_id, out_dir = run_dir(args.out, args.command, inputs.cfg)
    out.print(header_line(args.command, inputs.cfg, f"engine={name}"), markup=False)
    with stop.polled():
        result = engine(name)(model, inputs.invariants, settings)
    summary = write_result(result, model, out_dir, run_id, args, inputs.cfg.preset, out)
    for row in summary["invariants"]:
        out.print(f"{row['name']}: {row['status']}", markup=False)
    out.print(f"{summary['result']} (exit {summary['exit_code']})", markup=False)
    return summary["exit_code"]
