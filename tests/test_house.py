"""House rules a newcomer can rely on: engines reach the protocol only through the seam, the
mutants live in the catalogue, the project cites only itself and KIPs, and modules stay small."""
from __future__ import annotations

import ast
import re
import subprocess

import pytest

from specs.catalogue import MUTANTS
from tests.conftest import ROOT

SOURCE_PACKAGES = ("specs", "invariants", "verifier", "spark", "bench")


def _files(*patterns: str) -> list:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", *patterns],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / f for f in out if (ROOT / f).exists()]


def _imports(path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


@pytest.mark.parametrize("package", ["verifier", "spark"])
def test_engines_reach_the_protocol_only_through_the_seam(package):
    """`specs` (the Model, Trace, configs, scenarios) and `specs.symbolic` (the z3 engine's seam):
    nothing deeper, and never the properties' own modules."""
    for path in _files(f"{package}/*.py", f"{package}/**/*.py"):
        for name in _imports(path):
            if name.split(".")[0] in ("specs", "invariants"):
                assert name in ("specs", "specs.symbolic"), f"{path.relative_to(ROOT)} imports {name}"


def test_no_mutant_is_named_outside_the_catalogue():
    """Model code reads rule fields; a mutant's name appears only in the catalogue, in its
    tests, and in the documentation generated from the catalogue (docs/mutants.md)."""
    allowed = {ROOT / "specs/catalogue.py", ROOT / "specs/catalogue.toml", ROOT / "docs/mutants.md"}
    for path in _files():
        if path in allowed or path.parts[len(ROOT.parts)] == "tests" or path.suffix in (".png", ".parquet"):
            continue
        text = path.read_text(errors="replace")
        named = [m for m in MUTANTS if re.search(rf"(?<![\w-]){re.escape(m)}(?![\w-])", text)]
        assert not named, f"{path.relative_to(ROOT)} names {named}"


def test_the_project_cites_only_itself_and_kips():
    """No document outside the repository is cited and no path of a particular machine appears."""
    outside = re.compile(r"PROTOCOL\.md|SCENARIO_FORMAT|\.\./shared|seeds/|/work/|notes/kafka|[Ss]eed 00\d")
    for path in _files():
        if path.name == "test_house.py":
            continue
        hit = outside.search(path.read_text(errors="replace"))
        assert hit is None, f"{path.relative_to(ROOT)} cites {hit.group(0)!r}"


def test_markdown_links_resolve_in_a_clone():
    for path in _files("*.md", "**/*.md"):
        for target in re.findall(r"\]\(([^)#\s]+)", path.read_text()):
            if re.match(r"[a-z]+:", target):
                pytest.fail(f"{path.relative_to(ROOT)} links outside the repository: {target}")
            assert (path.parent / target).exists(), f"{path.relative_to(ROOT)}: broken link {target}"


def test_modules_stay_small():
    for path in _files("*.py", "**/*.py"):
        lines = len(path.read_text().splitlines())
        limit = 520 if path.parts[len(ROOT.parts)] == "tests" else 420
        assert lines <= limit, f"{path.relative_to(ROOT)} has {lines} lines (limit {limit})"


def test_the_mutant_table_is_the_catalogue():
    """docs/mutants.md is generated from the catalogue (`kraft-verify list --mutants-markdown`)."""
    from verifier.cli.listing import mutants_markdown
    assert (ROOT / "docs/mutants.md").read_text() == mutants_markdown()
