"""`kraft-verify list`: what a config can name: presets, rules (--flag) with their defaults and
meaning, bounds (--bound) with their defaults, invariants, mutants and actions."""
from __future__ import annotations

import argparse
from dataclasses import fields

from specs import MUTANTS, PRESETS, RELEASES, RULE_FIELDS, Bounds, Model, make_config, outside_z3, rule_doc
from verifier.core.exitcodes import EXIT_OK

def mutants_markdown() -> str:
    """The catalogue's mutants as a Markdown page: what each breaks, and how."""
    lines = ["# Mutants", "",
             "Generated from the catalogue (`specs/catalogue.py`) by `kraft-verify list --mutants-markdown`;",
             "a test checks that this page is the catalogue. Each mutant replaces rule fields of",
             "`specs/rules.py` (docs/protocol.md, \"Rule switches\"); the mutation gate",
             "(`kraft-verify check --mutants`, `fuzz --mutants`, `prove --mutants`) must kill every one.", "",
             "| mutant | broken rule | rules replaced | z3 |", "|---|---|---|---|"]
    for name, m in MUTANTS.items():
        changes = ", ".join(f"`{k}={str(v).lower()}`" for k, v in m.changes.items())
        z3 = "; ".join(m.outside_z3()) or "encoded"
        lines.append(f"| `{name}` | {m.description.replace('|', chr(92) + '|')} | {changes} | {z3} |")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    if args.mutants_markdown:
        print(mutants_markdown(), end="")
        return EXIT_OK
    model = Model(make_config())
    print("presets (--preset):")
    for name, preset in PRESETS.items():
        print(f"  {name:14} {preset.doc}")
    print("Kafka releases (conform --kafka VERSION):")
    for version, rel in RELEASES.items():
        print(f"  {version:14} preset {rel.preset}; rules read from its {rel.read}")
    print("rules (--flag NAME=VALUE; default in brackets):")
    for name, f in RULE_FIELDS.items():
        default = "unset" if f.default is None else str(f.default).lower()
        z3 = f" [not in prove: {outside_z3(name)}]" if outside_z3(name) else ""
        print(f"  {name:36} [{default}] {rule_doc(name)}{z3}")
    print("bounds (--bound NAME=N; default in brackets):")
    for f in fields(Bounds):
        print(f"  {f.name:22} [{f.default}] {f.metadata['doc']}")
    print("invariants (--invariant NAME):")
    from verifier.cli.binding import properties
    for inv in properties():
        print(f"  {inv.name:48} ({inv.kind})")
    print("mutants (--mutant NAME):")
    for name, mutant in MUTANTS.items():
        print(f"  {name:36} {mutant.description}")
    print("actions:")
    for name in model.action_names:
        print(f"  {name:26} {model.action_docs[name]}")
    return EXIT_OK
