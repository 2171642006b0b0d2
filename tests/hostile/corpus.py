"""A corpus of malformed inputs, as a careless or unlucky user gives them: argument lists,
TOML config files and replay scenarios. Every case must end in exit 2 with one line naming the
problem, no traceback, and no report under a final name (tests/hostile/test_corpus.py).

`python -m tests.hostile.corpus DIR` writes the files and prints the argument lists, so the
corpus can be run by hand against any build.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Callable, NamedTuple, Optional

GOOD_SCENARIO = {"name": "ok", "config": {"replicas": [1, 2, 3], "min_isr": 2},
                 "steps": [{"op": "fence", "broker": 3}, {"expect": {"isr": [1, 2]}}]}


class Case(NamedTuple):
    name: str
    argv: list[str]              # {dir} is replaced by the case's directory
    files: dict[str, Optional[bytes]]   # name -> content, written into that directory first; None: a FIFO


def _args() -> list[Case]:
    out = []
    numbers = ["0", "-1", "nan", "inf", "-inf", "abc", "", "1e9", "99999999999999999999", "0x10", "1.5"]
    options = {"check": ["--brokers", "--min-isr", "--max-depth", "--max-states", "--time-budget", "--simulate",
                         "--depth", "--workers", "--estimate", "--checkpoint-every"],
               "fuzz": ["--examples", "--steps", "--brokers", "--min-isr", "--time-budget"],
               "prove": ["--max-brokers", "--min-isr", "--depth", "--bmc-max-brokers", "--time-budget",
                         "--self-check-samples"],
               "availability": ["--runs", "--steps", "--seed"],
               "matrix": ["--examples"]}
    bad_for = {"--seed": ["abc", "", "nan", "1.5"], "--estimate": ["0", "-1", "nan", "inf", "abc", ""],
               "--time-budget": ["0", "-1", "nan", "inf", "-inf", "abc", ""]}
    for command, opts in options.items():
        for opt in opts:
            for value in bad_for.get(opt, numbers):
                if opt in ("--min-isr",) and value in ("1e9",):
                    continue
                if (command, opt, value) in (("prove", "--depth", "0"), ("prove", "--bmc-max-brokers", "0")):
                    continue     # no BMC at all: a valid choice
                if value in ("1e9", "99999999999999999999") and opt in ("--max-states", "--max-depth",
                                                                         "--examples", "--runs", "--steps",
                                                                         "--self-check-samples", "--checkpoint-every",
                                                                         "--depth", "--simulate", "--seed"):
                    continue     # large, but valid
                out.append(Case(f"{command} {opt}={value!r}", [command, opt, value, "--out", "{dir}/r"], {}))
    for command in ("check", "fuzz", "prove"):
        for extra in (["--preset", "nope"], ["--preset", ""], ["--preset", "kafka+"], ["--preset", "+"],
                      ["--preset", "kafka+nope"], ["--mutant", "nope"], ["--mutant", ""], ["--flag", "nope=1"],
                      ["--flag", "elr=maybe"], ["--flag", "unclean_recovery_strategy=fast"], ["--flag", "="],
                      ["--flag", "elr=true=false"], ["--bound", "records=-1"], ["--bound", "record=1"],
                      ["--bound", "records=x"], ["--bound", "records="], ["--bound", "=1"], ["--bound", "records"],
                      ["--bound", "records=1e3"], ["--replicas", "-1,2"], ["--replicas", "1,1"],
                      ["--replicas", "a,b"], ["--replicas", ""], ["--replicas", "1,,2"],
                      ["--replicas", "99999999999999999999"], ["--brokers", "3", "--replicas", "1,2"],
                      ["--nope"], ["--config"], ["--config", "{dir}"], ["--config", "{dir}/missing.toml"]):
            if command == "prove" and extra[0] in ("--replicas", "--brokers", "--bound", "--config"):
                continue
            out.append(Case(f"{command} {' '.join(extra)}", [command, *extra, "--out", "{dir}/r"], {}))
    out += [Case("no command", [], {}), Case("unknown command", ["nope"], {}),
            Case("check --out is a file", ["check", "--out", "{dir}/f"], {"f": b"x"}),
            Case("check --junit is a directory", ["check", "--junit", "{dir}", "--out", "{dir}/r"], {}),
            Case("check --junit in a missing directory",
                 ["check", "--junit", "{dir}/no/j.xml", "--out", "{dir}/r"], {}),
            Case("check --dump-graph bad suffix", ["check", "--dump-graph", "{dir}/g.txt", "--out", "{dir}/r"], {}),
            Case("check --dump-graph missing dir", ["check", "--dump-graph", "{dir}/no/g.dot", "--out", "{dir}/r"], {}),
            Case("check --only without --mutants", ["check", "--only", "x", "--out", "{dir}/r"], {}),
            Case("prove --mutants with --preset", ["prove", "--mutants", "--preset", "kafka", "--out", "{dir}/r"], {}),
            Case("prove --invariant nope", ["prove", "--invariant", "Nope", "--out", "{dir}/r"], {}),
            Case("check --invariant nope", ["check", "--invariant", "Nope", "--out", "{dir}/r"], {}),
            Case("spark-check --master bad port", ["spark-check", "--master", "spark://host:notaport", "--out",
                                                   "{dir}/r"], {}),
            Case("spark-check --executor-memory", ["spark-check", "--executor-memory", "-1g", "--out", "{dir}/r"], {}),
            Case("replay missing file", ["replay", "{dir}/missing.json"], {}),
            Case("replay an empty file name", ["replay", ""], {}),
            Case("check --out empty", ["check", "--out", ""], {}),
            Case("check --junit empty", ["check", "--junit", "", "--out", "{dir}/r"], {}),
            Case("check --dump-graph empty", ["check", "--dump-graph", "", "--out", "{dir}/r"], {}),
            Case("check --workers 0", ["check", "--workers", "0", "--out", "{dir}/r"], {}),
            Case("check --mutants --only nope", ["check", "--mutants", "--only", "nope", "--out", "{dir}/r"], {}),
            Case("check --liveness with --simulate",
                 ["check", "--liveness", "--simulate", "5", "--out", "{dir}/r"], {}),
            Case("check --resume without a directory", ["check", "--resume", "--out", "{dir}/r"], {}),
            Case("fuzz --profile nope", ["fuzz", "--profile", "nope", "--out", "{dir}/r"], {}),
            Case("availability --runs 0", ["availability", "--runs", "0", "--out", "{dir}/r"], {}),
            Case("spark-check --partitions 0", ["spark-check", "--partitions", "0", "--out", "{dir}/r"], {}),
            Case("spark-check --partitions huge", ["spark-check", "--partitions", "99999999999", "--out", "{dir}/r"], {}),
            Case("spark-check --master nope", ["spark-check", "--master", "nope", "--out", "{dir}/r"], {}),
            Case("list with an argument", ["list", "extra"], {}),
            Case("check --estimate with --junit", ["check", "--estimate", "2", "--junit", "{dir}/j.xml",
                                                   "--out", "{dir}/r"], {}),
            Case("replay a directory", ["replay", "{dir}"], {}),
            Case("replay --preset nope", ["replay", "--preset", "nope", "{dir}/s.json"],
                 {"s.json": json.dumps(GOOD_SCENARIO).encode()}),
            Case("replay a FIFO", ["replay", "{dir}/s.json"], {"s.json": None}),
            Case("replay /dev/zero", ["replay", "/dev/zero"], {}),
            Case("check --config a FIFO", ["check", "--config", "{dir}/c.toml", "--out", "{dir}/r"], {"c.toml": None}),
            Case("check --config /dev/zero", ["check", "--config", "/dev/zero", "--out", "{dir}/r"], {}),
            Case("replay two malformed files", ["replay", "{dir}/a.json", "{dir}/b.json"],
                 {"a.json": b"{", "b.json": b"["}),
            Case("replay a good file, then a malformed one", ["replay", "{dir}/a.json", "{dir}/b.json"],
                 {"a.json": json.dumps(GOOD_SCENARIO).encode(), "b.json": b"{"}),
            Case("check --out not UTF-8", ["check", "--brokers", "1", "--max-states", "20", "--out",
                                           "{dir}/r\udcff"], {}),
            Case("replay a file name not UTF-8", ["replay", "{dir}/s\udcff.json"], {}),
            *[Case(f"spark-check {opt} {value}", ["spark-check", opt, value, "--out", "{dir}/r"], {})
              for opt, value in (("--master", "local[0]"), ("--master", "local[abc]"), ("--master", "local[2,0]"),
                                 ("--master", "local[]"), ("--executor-memory", "abc"), ("--executor-memory", "0g"),
                                 ("--executor-memory", "1.5g"), ("--executor-memory", "4 g"),
                                 ("--driver-memory", "6 GB"), ("--driver-memory", "0"))],
            Case("matrix --out inside a file", ["matrix", "--presets", "kafka", "--out", "{dir}/f/m"], {"f": b"x"}),
            Case("matrix --out holding a directory matrix.json", ["matrix", "--presets", "kafka", "--out", "{dir}/m"],
                 {"m/matrix.json/x": b""}),
            # A report is renamed over its path: over a FIFO or a device (--junit /dev/null as root) it would
            # replace the thing itself. A FIFO stands for them here: the corpus never points at /dev.
            *[Case(f"{command} --junit a FIFO", [command, "--junit", "{dir}/j.xml", "--out", "{dir}/r"],
                   {"j.xml": None}) for command in ("check", "mutants", "fuzz", "prove", "spark-check")],
            Case("check --dump-graph a FIFO", ["check", "--dump-graph", "{dir}/g.dot", "--out", "{dir}/r"],
                 {"g.dot": None}),
            # Input quoted in a message is shown escaped: a newline in it must not make a second line.
            Case("check --preset with a newline", ["check", "--preset", "a\nb", "--out", "{dir}/r"], {}),
            Case("check --flag with a line separator", ["check", "--flag", "elr=a\u2028b", "--out", "{dir}/r"], {}),
            Case("check --invariant with a CR", ["check", "--invariant", "Nope\r\nx", "--out", "{dir}/r"], {}),
            Case("replay a missing file named with a newline", ["replay", "{dir}/a\nb.json"], {}),
            Case("replay a field named with a newline", ["replay", "{dir}/s.json"],
                 {"s.json": b'{"config": {"replicas": [1]}, "steps": [], "a\\nb": 1}'}),
            Case("check --config key with a vertical tab", ["check", "--config", "{dir}/c.toml", "--out", "{dir}/r"],
                 {"c.toml": b'"a\\u000bb" = 1\n'}),
            *[Case(f"{command} --checkpoint-dir with a {what} manifest",
                   [command, "--checkpoint-dir", "{dir}/c", "--resume", "--out", "{dir}/r"],
                   {"c/manifest.json": content})
              for command in ("check", "spark-check")
              for what, content in (("FIFO", None), ("deeply nested", b"[" * 100000 + b"]" * 100000),
                                    ("list", b"[]"), ("binary", b"\xff\xfe"))],
            *[Case(f"check {opt} a name too long", ["check", "--out", "{dir}/r", opt, "{dir}/" + "n" * 260 + suffix],
                   {}) for opt, suffix in (("--dump-graph", ".dot"), ("--junit", ".xml"), ("--out", ""))],
            *[Case(f"prove --mutants {' '.join(extra)}", ["prove", "--mutants", *extra, "--out", "{dir}/r"], {})
              for extra in (["--invariant", "LeaderInIsr"], ["--fixed-config"], ["--time-budget", "5"],
                            ["--stop-at-first"], ["--no-witness"], ["--min-isr", "1", "--min-isr", "2"])],
            # An output named like an input: the input must survive (--junit c.toml used to destroy c.toml).
            *[Case(f"{command} --junit names the --config file", [command, "--config", "{dir}/c.toml", "--junit",
                                                                 "{dir}/c.toml", "--out", "{dir}/r"],
                   {"c.toml": b'preset = "kafka"\n'}) for command in ("check", "mutants", "fuzz", "spark-check")],
            Case("check --dump-graph names the --config file", ["check", "--config", "{dir}/c.dot", "--dump-graph",
                                                                "{dir}/c.dot", "--out", "{dir}/r"],
                 {"c.dot": b'preset = "kafka"\n'}),
            Case("check --junit and --dump-graph name one file", ["check", "--junit", "{dir}/g.dot", "--dump-graph",
                                                                  "{dir}/g.dot", "--out", "{dir}/r"], {}),
            Case("check --seed without --simulate", ["check", "--seed", "5", "--out", "{dir}/r"], {}),
            Case("check --estimate --out inside a file", ["check", "--estimate", "1", "--out", "{dir}/f/r"],
                 {"f": b"x"})]
    # An option the chosen mode never reads would be silently ignored: refused instead.
    unused = {"--mutants": [["--simulate", "2"], ["--liveness"], ["--estimate", "1"], ["--max-states", "5"],
                            ["--max-depth", "2"], ["--invariant", "LeaderInIsr"], ["--workers", "2"],
                            ["--checkpoint-dir", "{dir}/c"], ["--dump-graph", "{dir}/g.dot"],
                            ["--compare-symmetry"], ["--time-budget", "nan"], ["--time-budget", "0"],
                            ["--time-budget", "inf"]],
              "--estimate=1": [["--liveness"], ["--simulate", "2"], ["--dump-graph", "{dir}/g.dot"],
                               ["--checkpoint-dir", "{dir}/c"], ["--max-states", "5"], ["--max-depth", "2"],
                               ["--time-budget", "5"], ["--compare-symmetry"]],
              "--liveness": [["--max-depth", "3"], ["--stop-at-first"], ["--resume"]],
              "--simulate=2": [["--max-depth", "3"], ["--max-states", "5"], ["--dump-graph", "{dir}/g.dot"],
                               ["--workers", "2"]]}
    for mode, extras in unused.items():
        for extra in extras:
            out.append(Case(f"check {mode} {' '.join(extra)}", ["check", mode, *extra, "--out", "{dir}/r"], {}))
    for value in ("nan", "0", "inf", "-1"):
        out.append(Case(f"mutants --time-budget {value}", ["mutants", "--time-budget", value, "--out", "{dir}/r"], {}))
    for key, value in (("max_states", "true"), ("max_states", "inf"), ("max_depth", "2.5"), ("time_budget", "nan"),
                       ("max_states", "{x = 1}")):
        flag = "--" + key.replace("_", "-")
        out.append(Case(f"check {flag} over a bad check.{key} = {value}",
                        ["check", "--config", "{dir}/c.toml", flag, "5", "--out", "{dir}/r"],
                        {"c.toml": f"[check]\n{key} = {value}\n".encode()}))
    return out


def _tomls() -> list[Case]:
    bad = {
        "not utf-8": b"preset = \"kafka\"\n\xff\xfe\xfa = 1\n",
        "utf-16": "preset = \"kafka\"\n".encode("utf-16"),
        "binary junk": bytes(range(256)),
        "deep nesting": b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n",
        "syntax error": b"preset = \n",
        "preset a list": b"preset = [\"kafka\"]\n",
        "preset unknown": b"preset = \"nope\"\n",
        "bounds not a table": b"bounds = 3\n",
        "flags a string": b"flags = \"elr\"\n",
        "check a list": b"check = [1]\n",
        "replicas a string": b"replicas = \"1,2\"\n",
        "replicas with a string": b"replicas = [1, \"a\"]\n",
        "replicas negative": b"replicas = [-1, 2]\n",
        "replicas duplicated": b"replicas = [1, 1]\n",
        "replicas empty": b"replicas = []\n",
        "replicas huge id": b"replicas = [1, 99999999999999999999]\n",
        "replicas floats": b"replicas = [1.5, 2]\n",
        "replicas bools": b"replicas = [true, false]\n",
        "min_isr string": b"min_isr = \"2\"\n",
        "min_isr zero": b"min_isr = 0\n",
        "min_isr negative": b"min_isr = -3\n",
        "min_isr float": b"min_isr = 2.0\n",
        "unclean string": b"unclean_leader_election = \"yes\"\n",
        "stop_at_first string": b"[check]\nstop_at_first = \"no\"\n",
        "symmetry string": b"[check]\nsymmetry = \"off\"\n",
        "time_budget nan": b"[check]\ntime_budget = nan\n",
        "time_budget negative": b"[check]\ntime_budget = -1\n",
        "time_budget string": b"[check]\ntime_budget = \"10\"\n",
        "max_states negative": b"[check]\nmax_states = -5\n",
        "max_depth float": b"[check]\nmax_depth = 2.5\n",
        "unknown check key": b"[check]\nnope = 1\n",
        "old brokers key": b"brokers = 4\n",
        "spare_brokers a number": b"spare_brokers = 4\n",
        "spare_brokers negative": b"spare_brokers = [-4]\n",
        "unknown key": b"nope = 1\n",
        "unknown bound": b"[bounds]\nrecord = 1\n",
        "bound negative": b"[bounds]\nrecords = -1\n",
        "bound string": b"[bounds]\nrecords = \"1\"\n",
        "bound float": b"[bounds]\nrecords = 1.5\n",
        "bound bool": b"[bounds]\nrecords = true\n",
        "bound huge": b"[bounds]\nrecords = 99999999999\n",
        "unknown flag": b"[flags]\nnope = true\n",
        "flag wrong type": b"[flags]\nelr = \"maybe\"\n",
        "flag int": b"[flags]\nelr = 1\n",
        "strategy unknown": b"[flags]\nunclean_recovery_strategy = \"fast\"\n",
        "mutant unknown": b"mutant = \"nope\"\n",
        "mutant a table": b"[mutant]\nx = 1\n",
        "an integer of 5000 digits": b"min_isr = " + b"9" * 5000 + b"\n",
        "a bound of 5000 digits": b"[bounds]\nrecords = " + b"1" * 5000 + b"\n",
    }
    return [Case(f"check --config ({name})", ["check", "--config", "{dir}/c.toml", "--out", "{dir}/r"],
                 {"c.toml": content}) for name, content in bad.items()]


def _scenario(**changes) -> bytes:
    doc = json.loads(json.dumps(GOOD_SCENARIO))
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return json.dumps(doc).encode()


def _scenarios() -> list[Case]:
    bad = {
        "not json": b"{nope",
        "empty file": b"",
        "not utf-8": b"{\"name\": \"\xff\"}",
        "utf-16": json.dumps(GOOD_SCENARIO).encode("utf-16"),
        "deep nesting": b"[" * 100000 + b"]" * 100000,
        "a list": b"[]",
        "a number": b"3",
        "duplicated steps key": b'{"config": {"replicas": [1]}, "steps": [], "steps": []}',
        "misspelled expectation field": _scenario(steps=[{"expect": {"isrr": [1, 2]}}]),
        "misspelled op field": _scenario(steps=[{"op": "fence", "brokr": 3}]),
        "unknown op": _scenario(steps=[{"op": "explode"}]),
        "step not an object": _scenario(steps=[3]),
        "steps not a list": _scenario(steps={"op": "fence"}),
        "no steps": _scenario(steps=None),
        "no config": _scenario(config=None),
        "config a list": _scenario(config=[1, 2]),
        "replicas missing": _scenario(config={"min_isr": 2}),
        "replicas strings": _scenario(config={"replicas": ["1", "2"]}),
        "replicas negative": _scenario(config={"replicas": [-1, 2]}),
        "replicas duplicated": _scenario(config={"replicas": [1, 1]}),
        "min_isr zero": _scenario(config={"replicas": [1, 2], "min_isr": 0}),
        "min_isr string": _scenario(config={"replicas": [1, 2], "min_isr": "2"}),
        "preset unknown": _scenario(config={"replicas": [1, 2], "preset": "nope"}),
        "mutant unknown": _scenario(config={"replicas": [1, 2], "mutant": "nope"}),
        "rule wrong type": _scenario(config={"replicas": [1, 2], "elr": "yes"}),
        "unknown config key": _scenario(config={"replicas": [1, 2], "nope": 1}),
        "broker a string": _scenario(steps=[{"op": "fence", "broker": "3"}]),
        "broker huge": _scenario(steps=[{"op": "fence", "broker": 99999999999999999999}]),
        "broker float": _scenario(steps=[{"op": "fence", "broker": 3.0}]),
        "broker bool": _scenario(steps=[{"op": "fence", "broker": True}]),
        "expect unknown invariant": _scenario(steps=[{"expect": {"violated": ["Nope"]}}]),
        "expect isr a string": _scenario(steps=[{"expect": {"isr": "1,2"}}]),
        "initial leader not a replica": _scenario(initial={"leader": 7}),
        "initial unknown key": _scenario(initial={"nope": 1}),
        "initial isr strings": _scenario(initial={"isr": ["1"]}),
        "check_invariants a string": _scenario(check_invariants="yes"),
        "unknown top key": _scenario(nope=1),
        "name a number": _scenario(name=3),
        "NaN value": b'{"config": {"replicas": [1], "min_isr": NaN}, "steps": []}',
        "Infinity value": b'{"config": {"replicas": [1], "min_isr": Infinity}, "steps": []}',
        "min_isr null": _scenario(config={"replicas": [1, 2], "min_isr": None}),
        "unclean_leader_election null": _scenario(config={"replicas": [1, 2], "unclean_leader_election": None}),
        "unpaired surrogate": b'{"name": "\\ud800", "config": {"replicas": [1]}, "steps": []}',
        "expect_violation of a list": _scenario(steps=[{"expect_violation": [["OneLeaderPerEpoch"]]}]),
        "expect_violation of an object": _scenario(steps=[{"expect_violation": [{"a": 1}]}]),
        "expect_violation empty": _scenario(steps=[{"expect_violation": []}]),
        "check_invariants of a list": _scenario(check_invariants=[["OneLeaderPerEpoch"]]),
        "expect leader beyond an int": _scenario(steps=[{"expect": {"leader": 2**40}}]),
        "expect leader -2": _scenario(steps=[{"expect": {"leader": -2}}]),
        "expect isr negative": _scenario(steps=[{"expect": {"isr": [-1]}}]),
    }
    for op, fields in (("fence", {"broker": -1}), ("fence", {"broker": 2**40}), ("crash", {"broker": -3}),
                       ("crash_lossy", {"broker": 1, "keep": -1}), ("elect", {"type": "designated", "leader": -7}),
                       ("unfence", {"broker": 3, "elected": -1}), ("set_min_isr", {"value": 2**40}),
                       ("reassign", {"replicas": [1, 2, -4]}), ("register", {"broker": -4}),
                       ("alter_partition", {"broker": -9, "leader_epoch": 0, "partition_epoch": 0, "isr": [1]}),
                       ("alter_partition", {"leader_epoch": 0, "partition_epoch": 0, "isr": [1, -1]}),
                       ("alter_partition", {"leader_epoch": 0, "partition_epoch": 0, "isr": [1],
                                            "broker_epochs": {"-1": 5}})):
        bad[f"op {op} {json.dumps(fields)}"] = _scenario(steps=[{"op": op, **fields}])
    bad["expect_not_enabled broker -1"] = _scenario(steps=[{"expect_not_enabled": {"op": "crash", "broker": -1}}])
    for field, value in (("brokers", [-1]), ("brokers", [2**40]), ("fenced", [-3]), ("in_controlled_shutdown", [-3]),
                         ("isr", [-1, 1]), ("isr", [1, 1]), ("elr", [-5]), ("last_known_elr", [2, 2]),
                         ("adding_replicas", [-1]), ("removing_replicas", [3, 3]), ("stopped", [-2]),
                         ("broker_epochs", {"-1": 5}), ("logs", {"-1": [[0, 1]]}), ("logs", {"1": [[True, 1]]}),
                         ("logs", {"1": [[0, -1]]}), ("logs", {"1": [[-1, 1]]}), ("committed", [0]),
                         ("fetched", {"1": [-5, 2]}), ("clean_shutdown_files", {"1": True}),
                         ("unclean_elections", -1), ("lossy_crashes", -2)):
        bad[f"initial {field} {json.dumps(value)}"] = _scenario(initial={field: value})
    bad["initial broker_epochs key of 5000 digits"] = _scenario(initial={"broker_epochs": {"9" * 5000: 1}})
    bad["min_isr of 5000 digits"] = b'{"config": {"replicas": [1], "min_isr": ' + b"9" * 5000 + b'}, "steps": []}'
    bad["initial ISR empty under a leader"] = _scenario(config={"replicas": [1, 2, 3], "preset": "pre-kip-966"},
                                                        initial={"isr": []}, steps=[{"op": "advance_hwm"}])
    return [Case(f"replay ({name})", ["replay", "{dir}/s.json"], {"s.json": content}) for name, content in bad.items()]


CASES: list[Case] = _args() + _tomls() + _scenarios()
MAKERS: dict[str, Callable[[], list[Case]]] = {"args": _args, "toml": _tomls, "scenarios": _scenarios}


def materialize(case: Case, where: Path) -> list[str]:
    """Write the case's files under `where`; its argument list with {dir} filled in."""
    where.mkdir(parents=True, exist_ok=True)
    for name, content in case.files.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            os.mkfifo(where / name)      # nothing ever writes to it: reading it would hang
        else:
            (where / name).write_bytes(content)
    return [a.replace("{dir}", str(where)) for a in case.argv]


if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "hostile-corpus")
    for i, case in enumerate(CASES):
        print(json.dumps({"case": case.name, "argv": materialize(case, root / f"{i:03d}")}))
