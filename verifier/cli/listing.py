"""`kraft-verify list`: what a config can name: presets, rules (--flag) with their defaults and
meaning, bounds (--bound) with their defaults, invariants, mutants and actions."""
from __future__ import annotations

import argparse
import shutil
import sys
import textwrap
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


def _width() -> int:
    """The terminal's columns, or 0 off a terminal (a log keeps each entry on one line, greppable)."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else 0


def item(name: str, column: int, text: str, width: int) -> str:
    """One entry: its name in a column, its text beside it, wrapped to `width` under itself (never
    cut); a name wider than the column, or a terminal too narrow for both, puts the text below."""
    line = f"  {name:{column}} {text}"
    if not width or len(line) <= width:
        return line
    if len(name) <= column and width - (column + 3) >= 30:
        return textwrap.fill(text, width=width, initial_indent=f"  {name:{column}} ",
                             subsequent_indent=" " * (column + 3), break_on_hyphens=False)
    return f"  {name}\n" + textwrap.fill(text, width=width, initial_indent=" " * 6, subsequent_indent=" " * 6,
                                         break_on_hyphens=False)


def run(args: argparse.Namespace) -> int:
    if args.mutants_markdown:
        print(mutants_markdown(), end="")
        return EXIT_OK
    model, w = Model(make_config()), _width()
    print("presets (--preset):")
    for name, preset in PRESETS.items():
        print(item(name, 14, preset.doc, w))
    print("Kafka releases (conform --kafka VERSION):")
    for version, rel in RELEASES.items():
        print(item(version, 14, f"preset {rel.preset}; rules read from its {rel.read}", w))
    print("rules (--flag NAME=VALUE; default in brackets):")
    for name, f in RULE_FIELDS.items():
        default = "unset" if f.default is None else str(f.default).lower()
        z3 = f" [not in prove: {outside_z3(name)}]" if outside_z3(name) else ""
        print(item(name, 36, f"[{default}] {rule_doc(name)}{z3}", w))
    print("bounds (--bound NAME=N; default in brackets):")
    for f in fields(Bounds):
        print(item(f.name, 22, f"[{f.default}] {f.metadata['doc']}", w))
    print("invariants (--invariant NAME):")
    from verifier.cli.binding import properties
    for inv in properties():
        print(item(inv.name, 48, f"({inv.kind})", w))
    print("mutants (--mutant NAME):")
    for name, mutant in MUTANTS.items():
        print(item(name, 36, mutant.description, w))
    print("actions:")
    for name in model.action_names:
        print(item(name, 26, model.action_docs[name], w))
    return EXIT_OK
