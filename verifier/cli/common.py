"""What every command shares: reading the config (flags and TOML), the run directory and its
name, the console, and writing a run's report files (the progress line: verifier/cli/progress.py)."""
from __future__ import annotations

import argparse
import os
import re
import time
import tomllib
from pathlib import Path
from typing import Any, Optional

from specs import config_label, make_config, unknown
from verifier.core import stop


class UsageError(Exception):
    """Bad command-line input: one line on stderr and exit 2."""


def one_line(text: str) -> str:
    """An error message is one line, whatever the user's input it quotes: a newline, a line or
    paragraph separator or an escape sequence in a name is shown escaped, never acted on."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:   # one line, exit 2, no usage dump
        raise UsageError(message)


# ---------------------------------------------------------------- config

TOML_KEYS = {"preset", "mutant", "replicas", "min_isr", "unclean_leader_election", "spare_brokers", "flags", "bounds",
             "check", "partitions"}


def _parse_bound(text: str) -> tuple[str, int]:
    if "=" not in text:
        raise UsageError(f"--bound takes NAME=VALUE, got '{text}'")
    name, value = text.split("=", 1)
    if not re.fullmatch(r"[+-]?[0-9]+", value.strip(" ")):    # int() would take "1\n", "1_0" or "\u0661"
        raise UsageError(f"--bound {name}: '{value[:40]}' is not an integer")
    if len(value.strip(" +-").lstrip("0")) > 18:              # no bound is that large (int() refuses 4,300 digits)
        raise UsageError(f"--bound {name}: a value of {len(value.strip(' +-'))} digits is out of range")
    return name.strip(" "), int(value)


def parse_flag(text: str) -> tuple[str, Any]:
    if "=" not in text:
        return text, True
    name, value = text.split("=", 1)
    lowered = value.strip(" ").lower()
    if lowered in ("true", "false"):
        return name.strip(" "), lowered == "true"
    return name.strip(" "), value.strip(" ")


def read_toml(path: str) -> dict:
    from specs.scenario.checks import Unreadable, read_data
    try:                 # TOMLDecodeError, UnicodeDecodeError, an integer of 5000 digits: one line
        data = read_data(path, lambda raw: tomllib.loads(raw.decode("utf-8")), "config")
    except Unreadable as exc:
        raise UsageError(f"config file {path}: {exc}") from None
    if "brokers" in data:
        raise UsageError(f"config file {path}: 'brokers' is now 'spare_brokers' (registered brokers that are not "
                         "replicas, the reassignment targets); the replicas themselves are 'replicas = [...]'")
    for key in data:
        if key not in TOML_KEYS:
            raise unknown(f"key in config file {path}:", key, sorted(TOML_KEYS))
    for table in ("flags", "bounds", "check"):
        if not isinstance(data.get(table, {}), dict):
            raise UsageError(f"config file {path}: [{table}] must be a table")
    return data


def build_config(args: argparse.Namespace, default_bounds: Optional[dict] = None, partitions: bool = False):
    """(Config, the TOML file's [check] table). Flags win over the file, the file over
    `default_bounds` (an engine's own defaults). `partitions`: the command searches several
    partitions (`check`'s exhaustive search, `conform`'s and `cluster-conform`'s walks); any other refuses a file that
    asks for more than one, in one line, rather than check one partition and call it the config."""
    data: dict[str, Any] = read_toml(args.config) if getattr(args, "config", None) else {}
    count = getattr(args, "topic_partitions", None)
    count = data.get("partitions") if count is None else count
    if not partitions and count not in (None, 1):
        raise UsageError(f"partitions = {count}: several partitions are searched only by `kraft-verify check`'s "
                         f"exhaustive search and walked by `conform` and `cluster-conform` yet; this one holds one "
                         f"partition")
    flags = dict(data.get("flags", {}))
    bounds = dict(default_bounds or {})
    bounds.update(data.get("bounds", {}))
    for text in getattr(args, "flag", None) or []:
        name, value = parse_flag(text)
        flags[name] = value
    for text in getattr(args, "bound", None) or []:
        name, value = _parse_bound(text)
        bounds[name] = value
    replicas = data.get("replicas")
    if getattr(args, "brokers", None) is not None and getattr(args, "replicas", None):
        raise UsageError("--brokers and --replicas both name the replicas: give one")
    if getattr(args, "brokers", None) is not None:          # its range is options.toml's
        replicas = list(range(1, args.brokers + 1))
    replicas = _ids(args, "replicas", replicas)
    min_isr = args.min_isr if getattr(args, "min_isr", None) is not None else data.get("min_isr")
    spare = _ids(args, "spare_brokers", data.get("spare_brokers"))
    return make_config(getattr(args, "preset", None) or data.get("preset", "kafka"), replicas=replicas,
                       min_isr=min_isr, unclean_leader_election=data.get("unclean_leader_election"),
                       extra_brokers=spare, flags=flags, bounds=bounds,
                       mutant=getattr(args, "mutant", None) or data.get("mutant"), partitions=count), data.get("check", {})


def _ids(args, name: str, otherwise):
    """A comma-separated list of broker ids given as --NAME, else `otherwise`."""
    text = getattr(args, name, None)
    if not text:
        return otherwise
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise UsageError(f"--{name.replace('_', '-')} takes a comma-separated list of broker ids, "
                         f"got '{text}'") from None


def make_dir(path: Path, failure: str) -> None:
    """Create a report directory and make sure a file can be written in it (an existing
    directory on a read-only file system is found now, not after the search), or one line:
    `failure` and the system's reason."""
    import tempfile
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise UsageError(f"{failure} ({exc.strerror})") from None


def header_line(command: str, cfg, extra: str = "") -> str:
    return (f"kraft-verify {command}: {config_label(cfg)} replicas={list(cfg.replicas)} min_isr={cfg.min_isr}"
            + (f" {extra}" if extra else ""))


# The run under way, so that an interrupt anywhere still leaves a report (write_interrupted).
RUN: dict[str, Any] = {}


def run_dir(base: str, kind: str, cfg) -> tuple[str, Path]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    label = re.sub(r"[^A-Za-z0-9_.=+,-]", "_", config_label(cfg))[:120]
    run_id = f"{kind}-{label}-{stamp}-{os.getpid()}"
    path = Path(base) / run_id
    make_dir(path, f"--out {base}: cannot create the report directory")
    RUN.update(run_id=run_id, dir=path, kind=kind, cfg=cfg)
    return run_id, path


def begin_junit(path: Optional[str]) -> None:
    """Before any work: a JUnit file left at `path` by an earlier run is replaced by one that
    says this run has not finished (an error), so CI never reads an old green result, even if
    this run is killed. Also finds an unwritable path before the run, not after it."""
    if not path:
        return
    from verifier.reports import write_junit
    pending = {"engine": "?", "result": "stopped", "exit_code": 3, "invariants": [], "config": {},
               "stop_reason": "the run has not finished (killed, or still running)"}
    replaceable("--junit", path)
    try:
        if Path(path).is_dir():
            raise UsageError(f"--junit {path}: is a directory")
        write_junit(pending, path)
    except OSError as exc:
        raise UsageError(f"--junit {path}: cannot write it ({exc.strerror})") from None
    RUN["junit"] = path


def replaceable(option: str, path: str) -> None:
    """A report file is written beside its path and renamed over it (verifier/core/files.py). Over
    anything but a regular file that would replace the thing itself: --junit /dev/null, run
    as root, would make /dev/null a regular file; /dev/stdout (a symlink) would lose its link."""
    if os.path.lexists(path) and not os.path.isdir(path) and not os.path.isfile(path):
        raise UsageError(f"{option} {path}: not a regular file (a report replaces its file; give a file name)")


def distinct_paths(args: argparse.Namespace) -> None:
    """An output named like an input or another output: --junit c.toml with --config c.toml
    replaced the config with a placeholder before reading it, then removed it on the error."""
    named = [(opt, getattr(args, attr, None)) for opt, attr in
             (("--config", "config"), ("--junit", "junit"), ("--dump-graph", "dump_graph"))]
    seen: dict[str, str] = {}
    for opt, path in named:
        if not path:
            continue
        real = os.path.realpath(path)
        if real in seen:
            raise UsageError(f"{seen[real]} and {opt} name the same file ({path}): the report would replace it")
        seen[real] = opt


def abandon_run() -> None:
    """After a usage error: no placeholder JUnit and no empty run directory are left behind."""
    junit, where = RUN.pop("junit", None), RUN.pop("dir", None)
    for target, remove in ((junit, os.remove), (where, os.rmdir)):
        try:
            if target is not None:
                remove(target)
        except OSError:
            pass        # not empty, or gone: nothing to take back


def write_interrupted(name: str, command: str, code: int = 3) -> Optional[Path]:
    """An interrupt (or, with exit `code` 2, an internal error) that reached the command line:
    the run's report says so."""
    from verifier.reports.summary import header
    if "dir" not in RUN:
        return None
    summary = header(RUN["kind"], RUN["cfg"], RUN["run_id"], command)
    summary.update(result="stopped", exit_code=code, invariants=[], violated=[], counterexamples={},
                   counterexample=None, counts={}, warnings=[],
                   stop_reason=f"{'interrupted by ' if code == 3 else 'stopped by '}{name} before the run could "
                               "report partial results")
    write_run(summary, RUN["dir"], RUN.get("junit"), console())
    return RUN["dir"]


# ---------------------------------------------------------------- output

def console():
    """Rich console: on a terminal every line wrapped at its width; in a log (not a terminal)
    wide and without wrapping, so lines stay greppable."""
    from rich.console import Console
    out = Console(highlight=False)
    if not out.is_terminal:
        out = Console(highlight=False, soft_wrap=True, width=160)
    return out


def write_run(summary: dict, out_dir: Path, junit: Optional[str], console_) -> None:
    """The run writer (verifier/reports/writer.py), with the JUnit path this run claimed."""
    from verifier.reports.writer import JunitError
    from verifier.reports.writer import write_run as write
    try:
        write(summary, out_dir, junit or RUN.get("junit"), console_)
    except JunitError as exc:
        raise UsageError(exc.strerror) from None
    stop.reported()


def write_result(result, model, out_dir: Path, run_id: str, args, name: str, console_,
                 also: Optional[str] = None) -> dict:
    """Any engine's result to its files, through the one run writer (verifier/reports/writer.py:
    counterexamples, summary, reports), with the command line and the JUnit path this run claimed."""
    from verifier.reports.writer import JunitError
    from verifier.reports.writer import write_result as write
    try:
        summary = write(result, model, out_dir, run_id, "kraft-verify " + " ".join(args.argv), name,
                        getattr(args, "junit", None) or RUN.get("junit"), console_, also)
    except JunitError as exc:
        raise UsageError(exc.strerror) from None
    stop.reported()           # the verdict is written: a late signal keeps its exit code
    return summary


def gate_command(args, engine: str, base, names: list, run_one_for, title: str, columns: tuple = (),
                 details=None, note: str = "", run_liveness=None) -> int:
    """A mutation gate's whole run (verifier/studies/gate.py): the run directory, the header,
    every mutant (`run_one_for(console, run directory)` gives the engine's run_one), the table
    and the files. Returns the gate's exit code."""
    from specs import Model
    from verifier.studies import gate
    out = console()
    kind = {"kernel": "mutants", "z3": "prove-mutants"}.get(engine, f"{engine}-mutants")
    run_id, out_dir = run_dir(args.out, kind, base)
    run_one = run_one_for(out, out_dir)
    out.print(header_line(f"{args.command} --mutants", base, note), markup=False)
    from verifier.cli.progress import ProgressLine
    with ProgressLine(out, not getattr(args, "quiet", False), what=f"{engine} mutation gate") as progress:
        rows, code = gate.run_gate(engine, base, names, run_one, out, title, columns, run_liveness=run_liveness,
                                   starting=lambda i, name: progress.status(f"mutant {i + 1} of {len(names)}: {name}"))
    write_result(gate.gate_result(engine, rows, code, details), Model(base), out_dir, run_id, args, base.preset, out)
    return code

