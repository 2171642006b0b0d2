"""Small text helpers the writers share: flags and bounds on one line, JSON spellings, the
counterexample as plain text, the symmetry note."""
from __future__ import annotations

from typing import Any, Iterable, Optional

Row = tuple[int, str, str]


def kv(mapping: Optional[dict]) -> str:
    """`a=1, b=true`: flags and bounds on one line, in a stable order."""
    if not mapping:
        return "(defaults)"
    return ", ".join(f"{k}={scalar(v)}" for k, v in sorted(mapping.items()))


def scalar(v: Any) -> str:
    """JSON spelling for bools/None so reports match summary.json and the CLI."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return "none" if v is None else str(v)


def plain_table(table_rows: Iterable[Row]) -> str:
    """The counterexample as aligned plain text: JUnit failure bodies are shown verbatim."""
    body = [("#", "action", "what changed")] + [(str(n), a, d) for n, a, d in table_rows]
    w0 = max(len(r[0]) for r in body)
    w1 = max(len(r[1]) for r in body)
    return "\n".join(f"{n:>{w0}}  {a:<{w1}}  {d}".rstrip() for n, a, d in body)


def symmetry_text(sym: dict) -> str:
    if not sym:
        return "-"
    if not sym.get("enabled"):
        return "off" + (f" ({sym['note']})" if sym.get("note") else "")
    text = f"on, group size {sym.get('group_size', '?')}"
    if "states_saved" in sym:
        text += (f", saved {sym['states_saved']:,} of {sym['states_without_symmetry']:,} states "
                 f"(same verdict without it: {'yes' if sym.get('same_verdict') else 'NO'})")
    else:
        text += ", states saved: not measured (run with --compare-symmetry)"
    return text + (f" ({sym['note']})" if sym.get("note") else "")
