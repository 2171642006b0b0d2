"""Every relative link in the project's Markdown resolves in a clone, and none leaves the
repository (the KIPs and the shared protocol notes are inputs of the project, not part of it)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").glob("*.md")),
        *sorted(ROOT.glob("reports/README.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_relative_link_resolves_inside_the_repository():
    checked, broken = 0, []
    for doc in DOCS:
        for target in LINK.findall(doc.read_text()):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            path = (doc.parent / target.split("#")[0]).resolve()
            checked += 1
            if not path.exists() or ROOT not in path.parents and path != ROOT:
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not broken, broken
    assert checked > 5


def test_no_document_points_at_the_shared_inputs():
    for doc in DOCS:
        assert "/".join(("..", "shared")) not in doc.read_text(), doc.name
