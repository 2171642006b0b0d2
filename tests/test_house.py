"""House rules a newcomer can rely on: imports point one way (specs <- invariants; core <-
engines <- the command line, which alone binds properties to engines), engines reach the
protocol only through the seam, the mutants live in the catalogue, the project cites only
itself and KIPs, and modules stay small. The imports are parsed, not matched by name."""
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
    """Every module `path` imports, at any depth (a function's own imports too), with
    relative imports resolved and `from P import name` counted as P.name."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    package = parts[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[:len(package) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names |= {f"{base}.{a.name}" for a in node.names}
    return names


def _module(path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _within(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _engine_of(module: str):
    """verifier.engines.bfs -> "bfs", verifier.engines.conform.run -> "conform", spark.* -> "spark"."""
    if _within(module, "spark"):
        return "spark"
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["verifier", "engines"] else None


LAYERS = [
    # (which modules, what of the repository they may import, why)
    (("specs",), ("specs",), "specs (the protocol) imports nothing else of the repository"),
    (("invariants",), ("invariants", "specs"), "properties are stated over specs alone"),
    (("verifier.core",), ("verifier.core", "specs"), "core imports no engine, study, report or CLI"),
    (("verifier.engines",), ("verifier.engines", "verifier.core", "specs"),
     "an engine reads core and the protocol's seam, never a report, a study, the CLI or the properties"),
    (("spark",), ("spark", "verifier.core", "specs.kernel"),
     "spark is an engine that imports only core and the kernel (its kernel executors run the compiled rules)"),
    (("verifier.reports",), ("verifier.reports", "verifier.core", "specs"), "reports render results"),
    (("verifier.studies",), ("verifier.studies", "verifier.reports", "verifier.core", "specs"),
     "studies are handed their engines and properties by the command line"),
]
REPOSITORY = ("specs", "invariants", "verifier", "spark", "bench", "tests")


@pytest.mark.parametrize("layer", LAYERS, ids=[layer[0][0] for layer in LAYERS])
def test_imports_point_one_way(layer):
    owners, allowed, why = layer
    checked = 0
    for path in _files("*.py", "**/*.py"):
        module = _module(path)
        if not _within(module, *owners):
            continue
        checked += 1
        for name in _imports(path):
            if _within(name, *REPOSITORY):
                assert _within(name, *allowed), f"{module} imports {name}: {why}"
    assert checked, f"no module of {owners}"


def test_engines_do_not_import_each_other():
    for path in _files("verifier/engines/*.py", "verifier/engines/**/*.py", "spark/*.py"):
        mine = _engine_of(_module(path))
        for name in _imports(path):
            other = _engine_of(name)
            assert other in (None, mine), f"{_module(path)} (engine {mine}) imports {name} (engine {other})"


def test_engines_reach_the_protocol_only_through_the_seam():
    """`specs` (the Model, Trace, configs), `specs.symbolic` (the z3 engine's seam),
    `specs.scenario` (the scenario format, for the replay engine) and `specs.kernel` (the model
    and its properties compiled over rows, for the compiled search): nothing deeper."""
    seams = ("specs.symbolic", "specs.scenario", "specs.kernel")
    for path in _files("verifier/*.py", "verifier/**/*.py", "spark/*.py"):
        for name in _imports(path):
            if _within(name, "specs") and not _within(name, *seams):
                assert name.count(".") <= 1 and name.split(".")[-1] not in SPECS_MODULES, \
                    f"{_module(path)} imports {name}"


SPECS_MODULES = {p.stem for p in (ROOT / "specs").glob("*.py")} | {p.name for p in (ROOT / "specs").iterdir()
                                                                    if p.is_dir()}


def test_only_the_command_line_binds_properties_to_engines():
    """The one module of verifier/ and spark/ that imports invariants/ is verifier/cli/binding.py."""
    for path in _files("verifier/*.py", "verifier/**/*.py", "spark/*.py"):
        if _module(path) == "verifier.cli.binding":
            continue
        bad = [n for n in _imports(path) if _within(n, "invariants")]
        assert not bad, f"{_module(path)} imports {bad[0]}: only verifier/cli/binding.py binds the properties"


def test_no_mutant_is_named_outside_the_catalogue():
    """Model code reads rule fields; a mutant's name appears only in the catalogue, in its
    tests, in the documentation generated from the catalogue (docs/mutants.md), and in the
    measurements bench/ records about them (bench/results/: output, like reports/) and the rows
    of BENCHMARKS.md's rule-flip table rendered from them (test_ruleflip holds each row to its
    JSON and every broker-side mutant to a row)."""
    allowed = {ROOT / "specs/catalogue.py", ROOT / "specs/catalogue.toml", ROOT / "docs/mutants.md"}
    flip_row = re.compile(r"^\| \d+\.\d+\.\d+ \| `\w+=(true|false)` \(", re.M)
    for path in _files():
        top = path.relative_to(ROOT).parts
        if path in allowed or top[0] == "tests" or top[:2] == ("bench", "results") \
                or path.suffix in (".png", ".parquet"):
            continue
        text = path.read_text(errors="replace")
        if path == ROOT / "BENCHMARKS.md":
            text = "\n".join(line for line in text.splitlines() if not flip_row.match(line))
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


def test_the_command_line_reaches_spark_only_through_the_binding():
    """verifier/cli names the spark engine in binding.ENGINES (a string, imported on first use)
    and imports no spark module: its knobs and checks come through the binding like any engine's."""
    for path in _files("verifier/cli/*.py"):
        bad = [n for n in _imports(path) if _within(n, "spark")]
        assert not bad, f"{_module(path)} imports {bad[0]}: the command line reaches spark through binding.py"


# Modules outside verifier/reports that write files of their own that are not a run's reports:
# a checkpoint, a broker's configuration, a build stamp, a divergence's debug dump, the test
# cluster's configuration and the packed project.
OWN_FILES = {"verifier.engines.kernel.checkpoint": "the compiled search's checkpoint (resume data)",
             "verifier.engines.cluster.cluster": "a broker's server.properties and log4j files",
             "verifier.engines.cluster.dist": "the distribution's build stamp",
             "verifier.engines.conform.oracle": "the oracle's build stamp",
             "verifier.engines.conform.jacoco": "a note that Maven Central serves no -sources jar of a release",
             "verifier.core.compiling": "the last compile's length, beside numba's cache",
             "verifier.engines.cluster.run": "KRAFT_VERIFY_CLUSTER_DEBUG's per-step dump",
             "spark.cluster": "the namespace cluster's configuration", "spark.package": "the packed project",
             "spark.s3": "the S3 connector's pom", "spark.standalone": "a daemon's pid and log",
             "spark.exchange": "a level's successor blocks on their way to their owners (local masters)",
             "spark.catalogue": "the texts of the controller values the successor blocks name by digest (local masters)",
             "spark.local_files": "an owner's visited runs and its chunks of a level (local masters)",
             "spark.seqfile": "an owner's level file on the driver's disk, on its way to the store (local masters)",
             "verifier.engines.kernel.narrow": "check --visited disk's levels and candidates, as narrowed chunks",
             "verifier.engines.kernel.levelfiles": "check --visited disk's visited runs and links",
             "verifier.engines.kernel.diskpoint": "check --visited disk's checkpoint (resume data)"}
WRITERS = {"write_atomic", "write_text", "write_bytes", "dump", "write_pages", "write_run", "save_scenario"}


def _writes(path) -> list[str]:
    """The calls in `path` that write a file: write_atomic, Path.write_text/bytes, json.dump,
    open(..., "w"/"a"/"x") (not os.devnull); and the report writers' own helpers."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in WRITERS - {"write_pages", "write_run", "save_scenario"}:
            found.append(f"{name} (line {node.lineno})")
        elif name in ("open", "fdopen") and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                and any(c in str(node.args[1].value) for c in "wax") \
                and "devnull" not in ast.unparse(node.args[0]):
            found.append(f"open for writing (line {node.lineno})")
    return found


def test_only_reports_write_report_files():
    """Every report file (summary, reports, JUnit, counterexample and divergence scenarios, a
    study's pages, estimate.json) is written by verifier/reports; the command line, the studies,
    the engines and spark hand it their results. The exceptions write files that are not
    reports (OWN_FILES, each with its reason)."""
    checked = 0
    for path in _files("verifier/cli/*.py", "verifier/studies/*.py", "verifier/engines/*.py",
                       "verifier/engines/**/*.py", "spark/*.py"):
        module = _module(path)
        checked += 1
        writes = _writes(path)
        assert not writes or module in OWN_FILES, \
            f"{module} writes a file itself ({writes[0]}): report files go through verifier/reports/writer.py"
    assert checked > 40


def test_no_engine_reads_another_engines_knobs():
    """An engine's own settings are its `Knobs` (verifier/core/knobs.py), read only by
    `Knobs.of(settings)` on a class of its own package; the shared Settings holds no engine's
    fields."""
    from dataclasses import fields
    from verifier.core.settings import Settings
    assert [f.name for f in fields(Settings)] == ["limits", "options", "knobs"]
    owners = 0
    for path in _files("verifier/engines/*.py", "verifier/engines/**/*.py", "spark/*.py"):
        tree = ast.parse(path.read_text())
        mine = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "knobs" \
                    and ast.unparse(node.value).endswith("settings"):
                pytest.fail(f"{_module(path)} reads settings.knobs itself: read them with Knobs.of(settings)")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "of" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id.endswith("Knobs"):
                assert node.func.value.id in mine, f"{_module(path)} reads the knobs {node.func.value.id} of another"
                owners += 1
    assert owners >= 8, "every engine with knobs reads them with Knobs.of"
