"""`kraft-verify matrix`: every preset against every property under several bound sets
(verifier/studies/matrix.py), as a terminal table, matrix.md, matrix.json and matrix.html."""
from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

from verifier.cli.common import UsageError, console, make_dir
from verifier.cli.progress import ProgressLine
from verifier.core.exitcodes import EXIT_OK, EXIT_STOPPED, EXIT_VIOLATION
from verifier.reports.matrix import cell_text
from verifier.reports.writer import write_pages


def _rows(args):
    from specs import PRESETS
    from verifier.studies.matrix import BOUND_SETS, Row
    # a name given twice is one row, as a repeated --invariant is checked once elsewhere
    presets = list(dict.fromkeys(p.strip() for p in args.presets.split(",")))
    sets = list(dict.fromkeys(b.strip() for b in args.bound_sets.split(",")))
    for p in presets:
        if p not in PRESETS:
            from specs import unknown
            raise unknown("preset", p, list(PRESETS))
    for b in sets:
        if b not in BOUND_SETS:
            from specs import unknown
            raise unknown("bound set", b, list(BOUND_SETS))
    if not 0 < args.row_budget < float("inf"):
        raise UsageError(f"--row-budget must be a positive finite number, got {args.row_budget}")
    return [Row(p, b) for p in presets for b in sets]


def _search(kernel, progress, model, invs, settings):
    """A row's search, its figures and notes (the kernel compiling, the first time) on the
    progress line."""
    from specs import config_label
    progress.status(f"row {config_label(model.cfg)}")
    return kernel(model, invs, settings, progress)


def run(args: argparse.Namespace) -> int:
    from rich.padding import Padding
    from rich.table import Table
    from verifier.reports.matrix import render_html, render_md
    from verifier.studies.matrix import Engines, build, properties
    rows = _rows(args)
    from verifier.core.signing import key
    key()             # the cache's rows are signed with it: a key that cannot be had stops the matrix now
    out, out_dir = console(), Path(args.out)
    try:
        if out_dir.exists() and not out_dir.is_dir():
            raise UsageError(f"--out {args.out}: not a directory")
    except OSError as exc:                    # a name too long, a path through a file
        raise UsageError(f"--out {args.out}: cannot use it ({exc.strerror})") from None
    make_dir(out_dir, f"--out {args.out}: cannot create it")
    cache = out_dir / "matrix.json"
    if (cache.exists() or cache.is_symlink()) and not cache.is_file():
        raise UsageError(f"--out {args.out}: matrix.json there is not a file (it is rewritten after every row)")
    command = " ".join(["kraft-verify"] + args.argv)

    def on_row(entry, reused):
        how = "reused (config and model unchanged)" if reused else f"{entry['seconds']}s on the {entry['engine']}"
        done = "complete" if entry["complete"] else "NOT complete: " + entry["stop_reason"]
        out.print(f"{entry['preset']} @ {entry['bounds']}: {entry['states']:,} states, {done}, {how}", markup=False)
    from verifier.cli import binding
    from verifier.core import stop
    with stop.polled(), ProgressLine(out, True, what="matrix") as progress:    # a signal stops the row under way
        matrix = build(rows, out_dir, args.row_budget, command,                # (its search polls), then the matrix
                       Engines(partial(_search, binding.engine("kernel"), progress), binding.engine("fuzz"),
                               binding.properties(),
                               partial(binding.knobs, "fuzz"), "kernel"),
                       args.brokers, on_row, stopped=lambda: stop.requested() is not None,
                       fuzz_examples=args.examples)
    names = properties(matrix)
    title = "variant matrix (violated: steps of the shortest counterexample)"
    if _width(matrix, names) > out.width:         # a column per row does not fit: a line per row
        out.print(title, markup=False)
        for r in matrix["rows"]:
            out.print(Padding(narrow(r, names), (0, 0, 0, 2)), markup=False)
    else:
        table = Table(title=title)
        table.add_column("property")
        for r in matrix["rows"]:
            table.add_column(f"{r['preset']}\n{r['bounds']}")
        for name in names:
            table.add_row(name, *(cell_text(r["cells"].get(name)) for r in matrix["rows"]))
        out.print(table)
    write_pages(out_dir, {"matrix.md": render_md(matrix, names), "matrix.html": render_html(matrix, names)})
    out.print(f"matrix: {out_dir}/matrix.md, matrix.json, matrix.html", markup=False)
    if matrix["missing"]:
        out.print(f"INTERRUPTED by {stop.requested()}: {len(matrix['missing'])} row(s) not computed "
                  f"({', '.join(matrix['missing'][:4])}{', ...' if len(matrix['missing']) > 4 else ''}); "
                  "the pages say so (exit 3)", markup=False)
        return EXIT_STOPPED
    return exit_code(matrix)


def _width(matrix: dict, names: list) -> int:
    """The table's natural width: the property column and one column per row."""
    return 4 + max(map(len, names), default=8) + sum(
        3 + max(len(r["preset"]), len(r["bounds"]), *(len(cell_text(r["cells"].get(n))) for n in names))
        for r in matrix["rows"])


def narrow(r: dict, names: list) -> str:
    """A row of the matrix in a line: its properties grouped by what the row found."""
    groups: dict = {}
    for name in names:
        text = cell_text(r["cells"].get(name))
        status = text.split(" (")[0]
        groups.setdefault(status, []).append(name + (f" ({text.split(' (', 1)[1]}" if " (" in text else ""))
    if set(groups) == {"holds"}:
        return f"{r['preset']} @ {r['bounds']}: every property holds ({len(names)})"
    said = [f"{status}: " + (", ".join(found) if status != "holds" else f"the other {len(found)}")
            for status, found in sorted(groups.items(), key=lambda g: g[0] == "holds")]
    return f"{r['preset']} @ {r['bounds']}: " + "; ".join(said)


def exit_code(matrix: dict) -> int:
    """The house codes: 1 if any cell is violated (the older variants' are expected: that is
    what the matrix shows), else 3 if a row was not exhausted, else 0."""
    from verifier.studies.matrix import VIOLATED
    if any(c["status"] == VIOLATED for r in matrix["rows"] for c in r["cells"].values()):
        return EXIT_VIOLATION
    return EXIT_OK if all(r["complete"] for r in matrix["rows"]) else EXIT_STOPPED
