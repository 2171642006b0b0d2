"""Two `kraft-verify matrix` runs side by side: per row its states before and after, and every
cell whose verdict or shortest length moved (what a model change did to the matrix). Later
files patch earlier ones row by row (a row rerun with a larger --row-budget replaces the one
cut short), so `--before A.json B.json` reads A with B's rows over it.

    .venv/bin/python bench/matrix_diff.py --before OLD/matrix.json [RERUN/matrix.json] \
        --after NEW/matrix.json [RERUN/matrix.json] > bench/results/issueNN/matrix-before-after.txt
"""
from __future__ import annotations

import argparse
import json
import sys


def rows(paths: list[str]) -> dict:
    out: dict = {}
    for path in paths:
        with open(path) as fh:
            for row in json.load(fh)["rows"]:
                out[(row["preset"], row["bounds"])] = row
    return out


def cell(c: dict) -> str:
    return f"{c['status']} in {c['length']}" if c.get("length") is not None else c["status"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", nargs="+", required=True)
    ap.add_argument("--after", nargs="+", required=True)
    args = ap.parse_args()
    before, after = rows(args.before), rows(args.after)
    moved = 0
    for key in sorted(set(before) | set(after), key=lambda k: (k[1], k[0])):
        b, a = before.get(key), after.get(key)
        if b is None or a is None:
            print(f"{key[0]} @ {key[1]}: only {'after' if b is None else 'before'}")
            continue
        text = f"{key[0]} @ {key[1]}: {b['states']:,} -> {a['states']:,} states"
        if not (b["complete"] and a["complete"]):
            text += f" (complete: {b['complete']} -> {a['complete']})"
        changes = [f"{name}: {cell(b['cells'][name])} -> {cell(a['cells'][name])}"
                   for name in sorted(set(b["cells"]) & set(a["cells"]))
                   if cell(b["cells"][name]) != cell(a["cells"][name])]
        moved += len(changes)
        print(text + ("; " + "; ".join(changes) if changes else ""))
    print(f"# {moved} cells moved")
    return 0


if __name__ == "__main__":
    sys.exit(main())
