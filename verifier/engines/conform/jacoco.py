"""How much of Kafka's controller code conform's comparisons reach, measured by JaCoCo.

The oracle's JVM runs under JaCoCo's agent (`Oracle(..., coverage=EXEC)`: Maven Central's
org.jacoco.agent runtime jar), which records every probe Kafka's classes hit and writes them
to EXEC when the JVM ends (every oracle of a run appends to the one file). `measure` turns that
into JaCoCo's XML report over the release's own kafka-metadata jar (org.jacoco.cli), then reads
it for the methods in scope (`SCOPE`: the controller code the model claims to describe):
line and branch counters per method, and every line where a branch was never taken, with its
source text (the release's -sources jar, or a reference release's: `borrow`) and the reason it
is never taken where unreached.toml gives one (`classify`).

The XML is another program's output, so it is read as data: the external DTD its DOCTYPE names
is never fetched (expat does not), its numbers are checked, a malformed report is one line of
JacocoError. The jars are fetched into oracle/target/jacoco-VERSION once;
every way that fails is a JacocoError with one line, which the caller turns into exit 2.
"""
from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Optional
from xml.etree import ElementTree

from verifier.core.maven import MAVEN_ARGS, ROOT
from verifier.core.maven import failure as _maven_failure

VERSION = "0.8.15"      # the newest JaCoCo whose runtime agent jar Maven Central serves (0.8.16's is not)
HOME = ROOT / "oracle" / "target" / f"jacoco-{VERSION}"
AGENT = ("org.jacoco:org.jacoco.agent", "runtime")
CLI = ("org.jacoco:org.jacoco.cli", "nodeps")
# The classes the agent instruments: Kafka's controller and metadata packages (the rest of the
# JVM, the driver included, costs nothing and is not reported).
INCLUDES = "org.apache.kafka.controller.*:org.apache.kafka.metadata.*"

# The methods in scope (issue 59): the partition change rules whole; ReplicationControlManager's
# ISR, ELR, election, fence, unfence, shutdown and registration handlers; ClusterControlManager's
# registration; BrokerHeartbeatManager's fencing. A class maps to None (every method, its nested
# classes' too) or to the names of its methods in scope (each with its lambdas); `name(Type)` is
# the overload whose first parameter is of that simple type (replay of one record type).
SCOPE: dict[str, Optional[tuple[str, ...]]] = {
    "org/apache/kafka/controller/PartitionChangeBuilder": None,
    "org/apache/kafka/controller/ReplicationControlManager": (
        "alterPartition", "validateAlterPartitionData", "validateIsrChanges", "isValidIsrChange", "ineligibleReplicasForIsr",
        "electLeaders", "electLeader", "electionIsUnclean", "maybeElectUncleanLeaders", "maybeBalancePartitionLeaders",
        "handleBrokerFenced", "handleBrokerUnfenced", "handleBrokerInControlledShutdown",
        "handleBrokerUncleanShutdown", "handleBrokerShutdown", "generateLeaderAndIsrUpdates",
        "maybeTriggerLeaderChangeForPartitionsWithoutPreferredLeader", "processBrokerHeartbeat",
        "maybeFenceOneStaleBroker", "alterPartitionReassignments", "alterPartitionReassignment",
        "changePartitionReassignment", "cancelPartitionReassignment", "completeReassignmentIfNeeded",
        "replay(TopicRecord)", "replay(PartitionRecord)", "replay(PartitionChangeRecord)", "isElrEnabled",
        "getPartitionElrMinIsr",
    ),
    "org/apache/kafka/controller/ClusterControlManager": (
        "registerBroker", "checkBrokerEpoch", "trackBrokerHeartbeat", "activate", "replay(RegisterBrokerRecord)",
        "replay(FenceBrokerRecord)", "replay(UnfenceBrokerRecord)", "replay(BrokerRegistrationChangeRecord)",
    ),
    "org/apache/kafka/controller/BrokerHeartbeatManager": (
        "fence", "touch", "updateControlledShutdown", "findOneStaleBroker", "calculateNextBrokerState",
    ),
}


class JacocoError(Exception):
    """JaCoCo could not be fetched or run, or wrote what is not its report; str() is the line."""


def _fetch(artifact: tuple[str, str]) -> Path:
    """The jar of (group:artifact, classifier) at VERSION, fetched from Maven Central once."""
    name, classifier = artifact
    jar = HOME / f"{name.split(':')[1]}-{VERSION}-{classifier}.jar"
    if shutil.which("mvn") is None and not jar.is_file():
        raise JacocoError("coverage needs Maven (mvn) to fetch JaCoCo's jars: install maven")
    failed = _copy(f"{name}:{VERSION}:jar:{classifier}", jar)
    if failed is not None:
        raise JacocoError(_maven_failure(failed, "JaCoCo", f"{name}:{VERSION}:{classifier}"))
    return jar


def _copy(artifact: str, jar: Path) -> Optional[str]:
    """Fetch `artifact` (group:name:version:jar[:classifier]) from Maven Central into HOME as
    `jar`, unless it is there: None, or Maven's output when it could not."""
    if jar.is_file():
        return None
    HOME.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mvn", "-B", "-q", *MAVEN_ARGS, "dependency:copy", f"-Dartifact={artifact}",
                           f"-DoutputDirectory={HOME}"], capture_output=True, text=True, cwd=HOME)
    return None if proc.returncode == 0 and jar.is_file() else (proc.stdout + proc.stderr or "no output")


def agent_option(exec_file: Path) -> str:
    """The JVM option that runs a JVM under JaCoCo's agent, writing its probes to exec_file."""
    return (f"-javaagent:{_fetch(AGENT)}=destfile={exec_file},append=true,includes={INCLUDES},"
            f"output=file,dumponexit=true,jmx=false")


def _metadata_jar(classpath: list[str], version: str) -> Path:
    """The release's kafka-metadata jar (the controller's classes) on the oracle's classpath."""
    name = f"kafka-metadata-{version}.jar"
    found = next((Path(p) for p in classpath if Path(p).name == name), None)
    if found is None or not found.is_file():
        raise JacocoError(f"the oracle for Kafka {version} has no {name} on its classpath: run `make oracle`")
    return found


def sources_jar(version: str) -> Optional[Path]:
    """The release's kafka-metadata -sources jar (fetched once), or None where Maven Central
    serves none (4.4.0 and 4.2.2: their lines then take a reference release's text, `borrow`)."""
    jar = HOME / f"kafka-metadata-{version}-sources.jar"
    none = HOME / f"kafka-metadata-{version}-sources.none"
    if not jar.is_file() and (none.is_file() or shutil.which("mvn") is None):
        return None
    failed = _copy(f"org.apache.kafka:kafka-metadata:{version}:jar:sources", jar)
    if failed is not None:
        if "could not find artifact" in failed.lower():
            none.write_text("Maven Central serves none\n")
        return None
    return jar


def xml_report(exec_file: Path, classpath: list[str], version: str, out: Path) -> Path:
    """JaCoCo's XML report of exec_file over the release's kafka-metadata classes."""
    if not exec_file.is_file() or exec_file.stat().st_size == 0:
        raise JacocoError(f"no coverage data in {exec_file}: the oracle's JVM did not end normally")
    java = shutil.which("java")
    if java is None:
        raise JacocoError("coverage needs Java 17 (java): install a JDK")
    proc = subprocess.run([java, "-jar", str(_fetch(CLI)), "report", str(exec_file), "--classfiles",
                           str(_metadata_jar(classpath, version)), "--xml", str(out), "--quiet"],
                          capture_output=True, text=True)
    if proc.returncode != 0 or not out.is_file():
        said = (proc.stderr or proc.stdout).strip().splitlines()
        raise JacocoError(f"JaCoCo's report of {exec_file.name} failed: {said[-1][:300] if said else 'no output'}")
    return out


def measure(exec_file: Path, classpath: list[str], version: str, out_dir: Path) -> dict:
    """The coverage of the methods in scope (see `read`), from a run's execution data, each
    branch never taken classified (`classify`). A release Maven Central serves no -sources jar
    of takes its lines' text from the newest older release that has one, where the method is the
    same (`borrow`)."""
    xml = xml_report(exec_file, classpath, version, out_dir / f"kafka-{version}-coverage.xml")
    sources = sources_jar(version)
    got = read(xml, version, sources)
    ref = None if sources is not None else _reference(version)
    if ref is not None:
        ref_xml = xml_report(exec_file, [str(_metadata(ref))], ref, out_dir / f"kafka-{ref}-classes.xml")
        borrow(got, read(ref_xml, ref, sources_jar(ref)), sources_jar(ref))
    return classify(got)


def _reference(version: str) -> Optional[str]:
    """The newest release older than `version` whose -sources jar Maven Central serves."""
    from specs import RELEASES
    key = lambda v: tuple(int(p) for p in v.split("."))  # noqa: E731
    older = sorted((v for v in RELEASES if key(v) < key(version)), key=key, reverse=True)
    return next((v for v in older if sources_jar(v) is not None), None)


def _metadata(version: str) -> Path:
    """Release `version`'s kafka-metadata jar, fetched once (the classes a reference's lines are in)."""
    jar = HOME / f"kafka-metadata-{version}.jar"
    failed = _copy(f"org.apache.kafka:kafka-metadata:{version}:jar", jar)
    if failed is not None:
        raise JacocoError(_maven_failure(failed, f"Kafka {version}", f"org.apache.kafka:kafka-metadata:{version}"))
    return jar


def borrow(got: dict, ref: dict, ref_sources: Optional[Path]) -> dict:
    """Give got's lines without text the text of the same line in `ref`'s source: the same method
    (class, name and descriptor) with the same numbers of lines and branches, at the same offset
    from its first line. Where the method differs, the line keeps no text."""
    methods = {m["jvm"]: m for m in ref["methods"]}
    mine = {m["jvm"]: m for m in got["methods"]}
    files: dict = {}
    for x in got["missed"]:
        theirs, ours = methods.get(x["owner"]), mine.get(x["owner"])
        if x["text"] is not None or theirs is None or ours is None:
            continue
        if (theirs["lines"][1], theirs["branches"][1]) != (ours["lines"][1], ours["branches"][1]):
            continue
        text = files.setdefault(theirs["file"], _source_lines(ref_sources, theirs["file"]))
        at = theirs["line"] + x["offset"]
        if text and 0 < at <= len(text):
            x["text"] = text[at - 1].strip()[:160]
    got["text_from"] = ref["release"]
    return got


REASONS = Path(__file__).with_name("unreached.toml")


def _reasons() -> list[dict]:
    import tomllib
    try:
        data = tomllib.loads(REASONS.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise JacocoError(f"{REASONS.name} cannot be read ({str(exc)[:200]})") from None
    rows = data.get("reason")
    if not isinstance(rows, list) or not all(isinstance(r, dict) and {"in", "text", "kind", "why"} <= set(r)
                                             and all(isinstance(r[k], str) for k in ("in", "text", "kind", "why"))
                                             and r["kind"] in KINDS and isinstance(r.get("releases", []), list)
                                             and isinstance(r.get("line", 0), int)
                                             for r in rows):
        raise JacocoError(f"{REASONS.name}: every [[reason]] needs in, text, kind ({' or '.join(KINDS)}) and why "
                          f"(and releases, if given, a list; line, if given, a number)")
    return rows


KINDS = ("outside the model", "not behaviour")


def classify(got: dict) -> dict:
    """Each branch never taken with the first reason of unreached.toml whose method (`in`: a
    scope entry, Class.method, or "*") and text (a part of the line) match it, among those for
    its release (`releases`, where a reason holds for some releases only), or none:
    "unreached" counts the branches never taken, with a reason and without. A reason may name
    the line of one release's class file instead (`line`, with `releases`): for a release with
    no -sources jar whose method differs from every release that has one, so no text is borrowed."""
    rows = [r for r in _reasons() if got["release"] in r.get("releases", [got["release"]])]
    said = unsaid = 0
    for x in got["missed"]:
        hit = next((r for r in rows if (r["in"] == "*" or x["method"] == r["in"])
                    and (x["line"] == r["line"] if "line" in r else x["text"] and r["text"] in x["text"])), None)
        x["kind"], x["why"] = (hit["kind"], hit["why"]) if hit else (None, None)
        said, unsaid = (said + x["missed"], unsaid) if hit else (said, unsaid + x["missed"])
    got["unreached"] = {"with_a_reason": said, "without": unsaid}
    return got


def _counter(node, kind: str) -> tuple[int, int]:
    """(covered, total) of one JaCoCo counter under node."""
    for c in node.findall("counter"):
        if c.get("type") == kind:
            missed, covered = _int(c.get("missed")), _int(c.get("covered"))
            return covered, missed + covered
    return 0, 0


def _int(text) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise JacocoError(f"JaCoCo's report holds a counter that is not a number ({str(text)[:40]!r})") from None
    if value < 0:
        raise JacocoError(f"JaCoCo's report holds a negative counter ({value})")
    return value


def _in_scope(cls: str, method: str, desc: str = "") -> Optional[str]:
    """The scope entry of a class's method (its name, or name(Type) for an overload; lambdas by
    their enclosing method), or None."""
    top = cls.split("$", 1)[0]
    if top not in SCOPE:
        return None
    names = SCOPE[top]
    base = method.split("$")[1] if method.startswith("lambda$") and method.count("$") >= 2 else method
    if names is None:
        return base
    if base in names:
        return base
    first = desc[1:].split(";", 1)[0].rsplit("/", 1)[-1] if desc.startswith("(L") else ""
    overload = f"{base}({first})"
    return overload if first and not method.startswith("lambda$") and overload in names else None


def read(xml: Path, version: str, sources: Optional[Path] = None) -> dict:
    """{"release", "methods": [{class, method, line, lines: [covered, total], branches: [...]}],
    "lines", "branches" (totals in scope), "missed": [{file, line, missed, branches, method, text}],
    "scope": the classes and methods asked for, "sources": whether lines carry text}."""
    try:
        root = ElementTree.parse(xml, parser=ElementTree.XMLParser()).getroot()
    except (ElementTree.ParseError, OSError) as exc:
        raise JacocoError(f"{xml.name} is not JaCoCo's XML report ({str(exc)[:200]})") from None
    methods, ranges = [], {}
    for pkg in root.iter("package"):
        for cls in pkg.findall("class"):
            name, source = cls.get("name", ""), cls.get("sourcefilename", "")
            for m in cls.findall("method"):
                scoped = _in_scope(name, m.get("name", ""), m.get("desc", ""))
                if scoped is None:
                    continue
                first = _int(m.get("line", 0))
                row = {"class": name.rsplit("/", 1)[-1], "method": scoped if "(" in scoped else m.get("name", ""),
                       "in": scoped, "line": first, "jvm": f"{name}#{m.get('name', '')}{m.get('desc', '')}",
                       "file": f"{pkg.get('name')}/{source}",
                       "lines": list(_counter(m, "LINE")), "branches": list(_counter(m, "BRANCH"))}
                methods.append(row)
                ranges.setdefault(f"{pkg.get('name')}/{source}", []).append((first, row))
    missed = _missed_lines(root, ranges, sources)
    total = lambda key: [sum(m[key][0] for m in methods), sum(m[key][1] for m in methods)]  # noqa: E731
    return {"release": version, "jacoco": VERSION, "methods": methods, "lines": total("lines"),
            "branches": total("branches"), "missed": missed, "sources": sources is not None, "text_from": None,
            "scope": {cls.rsplit("/", 1)[-1]: (list(names) if names else "every method") for cls, names in SCOPE.items()}}


def _missed_lines(root, ranges: dict, sources: Optional[Path]) -> list[dict]:
    """Every line of a method in scope with a branch never taken. A line belongs to the method
    in scope that starts last at or before it (JaCoCo names a method's first line only), named
    by its scope entry: a lambda's lines and those of its method after it are its method's either
    way; lines of methods out of scope in the same file are told apart by their own start lines."""
    every_start = {}
    for pkg in root.iter("package"):
        for cls in pkg.findall("class"):
            key = f"{pkg.get('name')}/{cls.get('sourcefilename', '')}"
            every_start.setdefault(key, set()).update(_int(m.get("line", 0)) for m in cls.findall("method"))
    out = []
    for pkg in root.iter("package"):
        for sf in pkg.findall("sourcefile"):
            key = f"{pkg.get('name')}/{sf.get('name')}"
            if key not in ranges:
                continue
            scoped = sorted(ranges[key], key=lambda r: r[0])
            starts = sorted(every_start.get(key, ()))
            text = _source_lines(sources, key)
            for ln in sf.findall("line"):
                nr, mb, cb = _int(ln.get("nr")), _int(ln.get("mb", 0)), _int(ln.get("cb", 0))
                if not mb:
                    continue
                owner_start = max((s for s in starts if s <= nr), default=None)
                row = next((r for s, r in scoped if s == owner_start), None)
                if row is None:
                    continue
                # placed in its enclosing method, not in a lambda that starts before it: a
                # lambda's number differs between releases (lambda$m$6, lambda$m$0), so the
                # enclosing method is what a release without sources borrows text by (borrow)
                base_start, base = next(((s, r) for s, r in reversed(scoped) if s <= nr and r["in"] == row["in"]
                                         and r["class"] == row["class"] and "#lambda$" not in r["jvm"]),
                                        (owner_start, row))
                out.append({"file": sf.get("name"), "line": nr, "missed": mb, "branches": mb + cb,
                            "method": f"{row['class']}.{row['in']}", "owner": base["jvm"], "offset": nr - base_start,
                            "text": text[nr - 1].strip()[:160] if text and nr <= len(text) else None})
    return out


def _source_lines(sources: Optional[Path], key: str) -> Optional[list[str]]:
    """The lines of one source file of the -sources jar, or None."""
    if sources is None:
        return None
    try:
        with zipfile.ZipFile(sources) as z:
            return z.read(key).decode("utf-8", "replace").splitlines()
    except (KeyError, OSError, zipfile.BadZipFile):
        return None


def percent(pair) -> str:
    covered, total = pair
    return f"{100 * covered / total:.1f}% ({covered:,} of {total:,})" if total else "-"
