"""`kraft-verify list`: what a config can name: presets, rules (--flag) with their defaults and
meaning, bounds (--bound) with their defaults, invariants, mutants and actions."""
from __future__ import annotations

import argparse
from dataclasses import fields

from specs import MUTANTS, PRESETS, RULE_FIELDS, Bounds, Model, make_config, outside_z3, rule_doc
from verifier.exitcodes import EXIT_OK

def add_parser(sub) -> None:
    p = sub.add_parser("list", help="list presets, rules, bounds, invariants, mutants and actions")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    model = Model(make_config())
    print("presets (--preset):")
    for name, preset in PRESETS.items():
        print(f"  {name:14} {preset.doc}")
    print("rules (--flag NAME=VALUE; default in brackets):")
    for name, f in RULE_FIELDS.items():
        default = "unset" if f.default is None else str(f.default).lower()
        z3 = f" [not in prove: {outside_z3(name)}]" if outside_z3(name) else ""
        print(f"  {name:36} [{default}] {rule_doc(name)}{z3}")
    print("bounds (--bound NAME=N; default in brackets):")
    for f in fields(Bounds):
        print(f"  {f.name:22} [{f.default}] {f.metadata['doc']}")
    print("invariants (--invariant NAME):")
    for inv in model.properties:
        print(f"  {inv.name:48} ({inv.kind})")
    print("mutants (--mutant NAME):")
    for name, mutant in MUTANTS.items():
        print(f"  {name:36} {mutant.description}")
    print("actions:")
    for name in model.action_names:
        print(f"  {name:26} {model.action_docs[name]}")
    return EXIT_OK
