"""More of the corpus (tests/hostile/corpus.py): values Kafka's own fields cannot hold, options
said two ways (a flag and the config file's [check] key), names with control characters,
ranges that one command checked and another did not, and checkpoints a co-tenant could plant.
Every case ends in exit 2 with one line, as the rest of the corpus."""
from __future__ import annotations

import json

from tests.hostile.corpus import GOOD_SCENARIO, Case

INT32 = (2**31, -2**31 - 1)
INT64 = (2**63, -2**63 - 1)
BOUNDS = ("records", "fences", "lossy_crashes", "crashes", "clean_shutdowns", "isr_shrinks", "admin_elections",
          "config_changes", "reassignments", "unclean_recoveries", "max_leader_epoch", "max_partition_epoch")
RULES = ("elr", "unclean_recovery_strategy", "designated_elections", "any_candidate_elections",
         "leader_epoch_bump_on_isr_shrink")


def _replay(name: str, steps: list, config=None) -> Case:
    doc = dict(json.loads(json.dumps(GOOD_SCENARIO)), steps=steps)
    if config is not None:
        doc["config"] = config
    return Case(f"replay ({name})", ["replay", "{dir}/s.json"], {"s.json": json.dumps(doc).encode()})


def _initial(name: str, initial: dict) -> Case:
    doc = dict(json.loads(json.dumps(GOOD_SCENARIO)), initial=initial)
    return Case(f"replay (initial {name})", ["replay", "{dir}/s.json"], {"s.json": json.dumps(doc).encode()})


def _kafka_types() -> list[Case]:
    out = []
    for op in ("fence", "unfence", "crash", "restart", "clean_shutdown", "controlled_shutdown", "fetch", "shrink_isr",
               "expand_isr"):
        out += [_replay(f"op {op} broker {v} beyond int32", [{"op": op, "broker": v}]) for v in INT32]
    out += [_replay(f"op crash_lossy {field} {v}", [{"op": "crash_lossy", "broker": 1, "keep": 0, field: v}])
            for field in ("broker", "keep") for v in INT32]
    out += [_replay(f"op elect designated leader {v}", [{"op": "elect", "type": "designated", "leader": v}])
            for v in INT32]
    out.append(_replay("op set_min_isr beyond int32", [{"op": "set_min_isr", "value": 2**31}]))
    for name, replicas in (("a broker beyond int32", [1, 2, 2**31]), ("8 replicas", list(range(1, 9))),
                           ("1,000 replicas", list(range(1, 1001))), ("a duplicate", [1, 2, 2])):
        out.append(_replay(f"op reassign to {name}", [{"op": "reassign", "replicas": replicas}]))
    out += [_replay(f"op register broker {v}", [{"op": "register", "broker": v}]) for v in INT32]
    out += [_replay(f"op register {field} {v}", [{"op": "register", "broker": 1, field: v}])
            for field in ("previous_broker_epoch", "new_broker_epoch") for v in INT64]
    ap = {"leader_epoch": 0, "partition_epoch": 0, "isr": [1, 2]}
    out += [_replay(f"op alter_partition {field} {v}", [{"op": "alter_partition", **ap, field: v}])
            for field in ("leader_epoch", "partition_epoch", "broker") for v in INT32]
    out += [_replay(f"op alter_partition request_broker_epoch {v}",
                    [{"op": "alter_partition", **ap, "request_broker_epoch": v}]) for v in INT64]
    out += [_replay(f"op alter_partition {name}", [{"op": "alter_partition", **ap, **extra}]) for name, extra in (
        ("isr beyond int32", {"isr": [1, 2**31]}), ("isr of 65 brokers", {"isr": list(range(1, 66))}),
        ("broker epoch beyond int64", {"broker_epochs": {"1": 2**63}}),
        ("broker epoch below int64", {"broker_epochs": {"1": -2**63 - 1}}),
        ("epochs keyed beyond int32", {"broker_epochs": {str(2**31): 1}}),
        ("epochs of 65 brokers", {"broker_epochs": {str(b): 1 for b in range(1, 66)}}))]
    out += [_replay(f"expect_not_enabled broker {v}", [{"expect_not_enabled": {"op": "crash", "broker": v}}])
            for v in INT32]
    for field in ("leader", "leader_epoch", "partition_epoch"):
        out += [_initial(f"{field} {v}", {field: v}) for v in INT32]
    for field in ("isr", "elr", "last_known_elr", "fenced", "in_controlled_shutdown", "adding_replicas",
                  "removing_replicas"):
        out += [_initial(f"{field} [{v}]", {field: [v]}) for v in INT32]
    out += [_initial(f"broker_epochs {v}", {"broker_epochs": {"1": v}}) for v in INT64]
    out += [_replay(f"config {name}", [], config) for name, config in (
        ("8 replicas", {"replicas": list(range(1, 9))}), ("a replica beyond int32", {"replicas": [1, 2**31]}),
        ("spare brokers repeated", {"replicas": [1, 2], "spare_brokers": [4, 4]}),
        ("min_isr beyond int32", {"replicas": [1, 2], "min_isr": 2**31}))]
    return out


def _names() -> list[Case]:
    """A name or value with a control character is refused as written, never trimmed into another."""
    out = []
    for bound in BOUNDS:
        for mark, where in (("\n", "after"), ("\t", "after"), ("\r", "before"), ("\x0b", "before")):
            name = bound + mark if where == "after" else mark + bound
            out.append(Case(f"check --bound {bound} with {mark!r} {where}", ["check", "--bound", f"{name}=1",
                                                                             "--out", "{dir}/r"], {}))
    for value in ("1_0", "1\n", "1e2", "0b1", "\u0661", "+-1", "1 2", "0x1"):
        out.append(Case(f"check --bound records={value!r}", ["check", "--bound", f"records={value}",
                                                              "--out", "{dir}/r"], {}))
    for rule in RULES:
        for mark in ("\n", "\t", "\x00"):
            out.append(Case(f"check --flag {rule} with {mark!r}", ["check", "--flag", f"{rule}{mark}=true",
                                                                   "--out", "{dir}/r"], {}))
    return out


def _ranges() -> list[Case]:
    """One range per option, whichever command takes it."""
    out = []
    commands = {"check": [], "mutants": [], "fuzz": [], "spark-check": [], "availability": [],
                "matrix": ["--presets", "kafka"], "conform": ["--kafka", "4.4"]}
    for command, extra in commands.items():
        for value in ("0", "8", "-1", "100"):
            out.append(Case(f"{command} --brokers {value}", [command, *extra, "--brokers", value, "--out", "{dir}/r"],
                            {}))
    for opt, values in (("--walks", ("-1", "abc", "1.5")), ("--depth", ("0", "-1", "abc")),
                        ("--steps", ("-1", "abc")), ("--seed", ("abc", "1.5")), ("--time-budget", ("0", "-1", "nan"))):
        out += [Case(f"conform {opt} {v}", ["conform", "--kafka", "4.4", opt, v, "--out", "{dir}/r"], {})
                for v in values]
    out += [Case(f"matrix --row-budget {v}", ["matrix", "--presets", "kafka", "--row-budget", v, "--out", "{dir}/r"],
                 {}) for v in ("0", "-1", "nan", "inf", "abc")]
    out += [Case(f"spark-check --driver-levels {v}", ["spark-check", "--driver-levels", v, "--out", "{dir}/r"], {})
            for v in ("-1", "abc", "1.5")]
    out += [Case(f"availability {opt} {v}", ["availability", opt, v, "--out", "{dir}/r"], {})
            for opt in ("--fault-steps", "--heal-steps") for v in ("-1", "abc", "1.5")]
    out += [Case(f"prove --max-brokers {v}", ["prove", "--max-brokers", v, "--out", "{dir}/r"], {})
            for v in ("0", "33", "-2")]
    out += [Case(f"{command} --out a name too long", [command, *extra, "--out", "{dir}/" + "n" * 300], {})
            for command, extra in (("fuzz", []), ("prove", []), ("availability", []),
                                   ("matrix", ["--presets", "kafka"]), ("conform", ["--kafka", "4.4"]))]
    return out


def _said_twice() -> list[Case]:
    """A mode refuses the config file's [check] key as it refuses the flag."""
    modes = {"--liveness": ("max_depth = 3", "stop_at_first = true"),
             "--estimate": ("max_depth = 3", "max_states = 5", "time_budget = 5"),
             "--simulate": ("max_depth = 3", "max_states = 5"), "--mutants": ("max_depth = 3", "max_states = 5")}
    out = []
    for mode, lines in modes.items():
        argv = [mode, "2"] if mode in ("--estimate", "--simulate") else [mode]
        for line in lines:
            out.append(Case(f"check {mode} with [check] {line}", ["check", *argv, "--config", "{dir}/c.toml",
                                                                  "--out", "{dir}/r"],
                            {"c.toml": f"[check]\n{line}\n".encode()}))
    for name, text in (("8 replicas", "replicas = [1, 2, 3, 4, 5, 6, 7, 8]"),
                       ("a replica beyond int32", "replicas = [1, 2147483648]"),
                       ("spare brokers repeated", "spare_brokers = [4, 4]"),
                       ("a spare broker beyond int32", "spare_brokers = [2147483648]")):
        out.append(Case(f"check --config ({name})", ["check", "--config", "{dir}/c.toml", "--out", "{dir}/r"],
                        {"c.toml": f"{text}\n".encode()}))
    scenario = dict(json.loads(json.dumps(GOOD_SCENARIO)))
    for preset in ("nope", "", "kafka+nope"):
        for override in ("kafka", "kafka-3.9"):
            doc = dict(scenario, config=dict(scenario["config"], preset=preset))
            out.append(Case(f"replay --preset {override} over a file of preset {preset!r}",
                            ["replay", "--preset", override, "{dir}/s.json"], {"s.json": json.dumps(doc).encode()}))
    return out


def _planted() -> list[Case]:
    """A check checkpoint another user or run left, resumed: refused (exit 2) before any work,
    whatever its data holds."""
    good = {"kind": "check", "version": 4, "identity": {"what": "kafka"}, "states": 1, "depth": 0,
            "data": {"search.json": "0" * 64, "search.bin": "0" * 64}}
    variants = {"the old pickle format": dict(good, version=2, data="search.pickle"),
                "the Python search's format": dict(good, version=3),
                "another engine's": dict(good, kind="spark-check"), "an identity list": dict(good, identity=[1]),
                "an identity string": dict(good, identity="kafka"), "no kind": {k: v for k, v in good.items()
                                                                                 if k != "kind"},
                "a version string": dict(good, version="4"), "kind null": dict(good, kind=None)}
    return [Case(f"check --resume a planted checkpoint ({name})",
                 ["check", "--checkpoint-dir", "{dir}/c", "--resume", "--out", "{dir}/r"],
                 {"c/manifest.json": json.dumps(manifest).encode(), "c/search.bin": b"\x80\x04cos\nsystem\n."})
            for name, manifest in variants.items()]


def _before_a_jvm() -> list[Case]:
    """spark-check's and conform's inputs, refused before Spark or Kafka's driver starts."""
    out = [Case(f"spark-check --master {m!r}", ["spark-check", "--master", m, "--out", "{dir}/r"], {})
           for m in ("spark://[::1:7077", "spark://", "spark://host:99999", "yarn://x", "local[-1]", "local[*,x]",
                     "k8s://", "mesos://x")]
    out += [Case(f"spark-check --partitions {v}", ["spark-check", "--partitions", v, "--out", "{dir}/r"], {})
            for v in ("-1", "abc")]
    out.append(Case("spark-check --checkpoint-dir a file", ["spark-check", "--checkpoint-dir", "{dir}/f",
                                                            "--out", "{dir}/r"], {"f": b"x"}))
    out.append(Case("spark-check --resume without a directory", ["spark-check", "--resume", "--out", "{dir}/r"], {}))
    out += [Case(f"conform --kafka {v!r}", ["conform", "--kafka", v, "--out", "{dir}/r"], {})
            for v in ("nope", "5.0", "4", "3.8", "4.4.9")]
    out += [Case(f"conform {name}", ["conform", "--kafka", "4.4", *extra, "--out", "{dir}/r"], files)
            for name, extra, files in (
                ("a missing file", ["{dir}/missing.json"], {}), ("a FIFO", ["{dir}/s.json"], {"s.json": None}),
                ("a malformed file", ["{dir}/s.json"], {"s.json": b"{"}),
                ("--bound-set nope", ["--bound-set", "nope"], {}), ("--bound-set recovery", ["--bound-set", "recovery"],
                                                                      {}),
                ("--bound-set with --bound", ["--bound-set", "default", "--bound", "records=2"], {}))]
    return out


CASES = _kafka_types() + _names() + _ranges() + _said_twice() + _planted() + _before_a_jvm()
