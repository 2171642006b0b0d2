"""BENCHMARKS.md's matrix table ("The variant matrix") is the recorded run's: every count it
gives a preset under a bound set is the count that run's log prints for that row, and every row
of the log is in the table."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "bench" / "results" / "matrix-250df2d.txt"
SHORT = {"4.4": "kafka-4.4", "4.3": "kafka-4.3", "4.2": "kafka-4.2", "4.1": "kafka-4.1", "4.1.0": "kafka-4.1.0",
         "4.0": "kafka-4.0", "3.9": "kafka-3.9", "kip-966": "kip-966", "pre-kip-966": "pre-kip-966",
         "pre-kip-903": "pre-kip-903"}


def logged() -> dict:
    """(preset, bound set) -> states, from the log's row lines."""
    rows = re.findall(r"^(\S+) @ (\S+): ([\d,]+) states, complete", LOG.read_text(), re.M)
    return {(p, b): int(n.replace(",", "")) for p, b, n in rows}


def tabled() -> dict:
    """(preset, bound set) -> states, from BENCHMARKS.md's table: a cell is 'N' for the column's
    presets or 'A, B: N; C: M' lists."""
    text = (ROOT / "BENCHMARKS.md").read_text()
    start = text.index("| bound set | states (4.2 to 4.4) | states (other presets) |")
    table = text[start:text.index("\n\n", start)].splitlines()[2:]
    out = {}
    for line in table:
        bound, first, other, _ = [c.strip() for c in line.strip("|").split("|")]
        cells = [("4.2, 4.3, 4.4: " + first) if ":" not in first else first, other]
        for cell in cells:
            for part in cell.split("; "):
                names, count = part.rsplit(": ", 1)
                for name in names.split(", "):
                    out[(SHORT[name.strip()], bound)] = int(count.replace(",", ""))
    return out


def test_the_matrix_table_is_the_recorded_runs_every_row():
    log, table = logged(), tabled()
    assert len(log) == 40
    assert table == log
