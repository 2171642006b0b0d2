"""The one HTML page builder: every page kraft-verify writes (a run's report.html, the
matrix, the availability study) is a view that gives its title, its body and its own few CSS
rules; the page, its shared style and its tables are built here. A page is self-contained:
no script, font or image comes from the network."""
from __future__ import annotations

from html import escape
from typing import Any, Iterable

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:.2em .5em;font-size:.9em;vertical-align:top}
th{background:#f3f3f3}
code{background:#f4f4f4;padding:2px 4px}
.num{text-align:right}
"""


def page(title: str, parts: Iterable[str], css: str = "") -> str:
    """A whole page: the title as its heading, then the parts (empty ones left out)."""
    body = "\n".join(p for p in parts if p)
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>"
            f"<style>{CSS}{css}</style></head><body><h1>{escape(title)}</h1>\n{body}</body></html>\n")


def table(head: Iterable[str], rows: Iterable[Iterable[Any]], cls: str = "", ident: str = "", raw: bool = False,
          row_heads: bool = False) -> str:
    """A table of text cells (escaped; `raw`: cells are HTML already; `row_heads`: each row's
    first cell names the row, a header cell)."""
    attrs = (f' class="{cls}"' if cls else "") + (f' id="{ident}"' if ident else "")
    out = [f"<table{attrs}><tr>" + "".join(f"<th>{escape(str(h))}</th>" for h in head) + "</tr>"]
    for row in rows:
        cells = [c if raw else escape(str(c)) for c in row]
        out.append("<tr>" + "".join(f"<th>{c}</th>" if row_heads and i == 0 else f"<td>{c}</td>"
                                    for i, c in enumerate(cells)) + "</tr>")
    return "\n".join(out) + "</table>"
