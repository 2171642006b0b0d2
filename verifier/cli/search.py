"""What `check` and `spark-check` share: their inputs (config, properties, limits, switches)
and how a finished search is reported (table, counterexamples, summary, JUnit)."""
from __future__ import annotations

from typing import NamedTuple, Optional

from verifier.cli.binding import select
from verifier.cli.common import UsageError, build_config, write_result
from verifier.core.exitcodes import EXIT_STOPPED

CHECK_KEYS = {"max_depth", "max_states", "time_budget", "symmetry", "deadlock", "stop_at_first"}


class SearchInputs(NamedTuple):
    cfg: object
    invariants: tuple
    limits: object
    symmetry: bool
    deadlock: bool
    stop_at_first: bool


def _bool_option(opts: dict, key: str, default: bool) -> bool:
    value = opts.get(key, default)
    if not isinstance(value, bool):
        raise UsageError(f"config file: check.{key} must be true or false, got {value!r}")
    return value


def limits_from(args, check_opts: dict):
    """The flags win over the file's [check] table, but both are checked: a bad value in the file
    is an error even when a flag overrides it this time."""
    from verifier.core.settings import Limits

    def pick(name):
        value = getattr(args, name, None)
        return value if value is not None else check_opts.get(name)
    for name in ("max_depth", "max_states", "time_budget"):
        for value, where in ((check_opts.get(name), f"check.{name}"), (getattr(args, name, None), "")):
            where = where or name.replace("_", "-")
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
                                      or value != value or value == float("inf")):
                raise UsageError(f"{where} must be a positive finite number, got {value!r}")
            if name != "time_budget" and value is not None and not isinstance(value, int):
                raise UsageError(f"{where} must be a whole number, got {value!r}")
    return Limits(max_depth=pick("max_depth"), max_states=pick("max_states"), time_budget=pick("time_budget"))


def search_inputs(args, partitions: bool = False) -> SearchInputs:
    """From the flags and the config file's [check] table (`partitions`: build_config's)."""
    cfg, check_opts = build_config(args, partitions=partitions)
    for key in check_opts:
        if key not in CHECK_KEYS:
            raise UsageError(f"config file {args.config}: unknown key 'check.{key}' "
                             f"(known: {', '.join(sorted(CHECK_KEYS))})")
    invs = select(args.invariant)
    symmetry = not args.no_symmetry and _bool_option(check_opts, "symmetry", True)
    deadlock = not args.no_deadlock and _bool_option(check_opts, "deadlock", True)
    stop_at_first = args.stop_at_first or _bool_option(check_opts, "stop_at_first", False)
    return SearchInputs(cfg, invs, limits_from(args, check_opts), symmetry, deadlock, stop_at_first)


def report_search(args, console, model, invs, result, run_id: str, out_dir,
                  comparison: Optional[dict] = None) -> int:
    """Print the verdicts and the first counterexample, then write every report file (so the
    terminal says what the search found even when the files cannot be written)."""
    from rich.table import Table
    from verifier import reports
    from verifier.reports.story import render
    from verifier.reports.summary import summarize
    result.counts["workers"] = getattr(args, "workers_used", 1)
    if comparison is not None:
        result.extra["symmetry"] = comparison
        if not comparison["same_verdict"]:
            result.warnings.append("symmetry changed the verdict: the reduction is unsound for this config")
    summary = summarize(result, model, run_id, "kraft-verify " + " ".join(args.argv), {})
    table = Table(title="invariants")
    for col in ("invariant", "kind", "result"):
        table.add_column(col, overflow="fold")        # a name folds at the width, never cut
    notes: list[str] = []                             # a sentence several rows share, said once below
    for row in summary["invariants"]:
        style = {"violated": "bold red", "holds": "green"}.get(row["status"], "yellow")
        assumes = ""
        if row.get("assumes") and row["status"] != "violated":
            if row["assumes"] not in notes:
                notes.append(row["assumes"])
            assumes = f" [dim]\\[{notes.index(row['assumes']) + 1}][/]"
        table.add_row(row["name"], row["kind"], f"[{style}]{row['status']}[/]{assumes}")
    if summary["deadlock"]["checked"]:
        table.add_row("Deadlock", "state", "[bold red]found[/]" if summary["deadlock"]["found"] else
                      ("[green]none[/]" if result.explored_all else "[yellow]not checked to completion[/]"))
    console.print(table)
    for i, note in enumerate(notes, 1):
        console.print(f"[{i}] {note}", markup=False)
    c = summary["counts"]
    what = "walk steps" if result.sampled else "transitions"
    word = "sampled" if result.sampled and summary["result"] == "ok" else summary["result"]
    console.print(f"{word}: {c['distinct_states']:,} distinct states, {c['transitions']:,} {what}, "
                  f"depth {c['depth']}, {c['seconds']:.1f}s, {c['states_per_second']:,.0f} distinct states/s, "
                  f"{c['terminal_states']:,} terminal states"
                  + (f" (compiling the kernel took {c['compile_seconds']:.1f}s more, not counted in the rate)"
                     if c.get("compile_seconds") else ""), markup=False)
    console.print(f"fingerprints: 128-bit, collision probability (optimistic, as TLC) "
                  f"{summary['fingerprint']['collision_probability']:.1e}", markup=False)
    if summary["memory"]["peak_resident_bytes"]:
        from verifier.reports.summary import memory_line
        console.print(memory_line(summary["memory"]), markup=False)
    if not result.sampled:
        console.print("states per level: " + " ".join(str(n) for n in c["states_per_level"]), markup=False)
    for warning in summary["warnings"]:
        console.print(f"warning: {warning}", markup=False)
    if result.counterexample is not None:
        render(result.counterexample, console, full=getattr(args, "full_state", False))
        again = ("a record of the run: replay runs one partition yet" if model.cfg.partitions > 1
                 else "replay it with `kraft-verify replay`")
        console.print(f"counterexample: {out_dir / 'counterexample.json'} ({again}), "
                      f"ITF: {out_dir / 'counterexample.itf.json'}", markup=False)
        for name, trace in result.counterexamples.items():
            if trace is not result.counterexample:
                console.print(f"also violated: {name} in {len(trace)} steps "
                              f"({out_dir / ('counterexample-' + name + '.json')})", markup=False)
    if getattr(args, "dump_graph", None) and result.graph is not None:
        reports.write_graph(result.graph[0], result.graph[1], args.dump_graph)
        console.print(f"state graph: {args.dump_graph} ({len(result.graph[0])} nodes, "
                      f"{len(result.graph[1])} edges)", markup=False)
    summary = write_result(result, model, out_dir, run_id, args, model.cfg.preset, None)
    console.print(f"report: {out_dir}", markup=False)
    if summary["exit_code"] == EXIT_STOPPED:
        console.print(f"STOPPED before completion: {result.stop_reason} (exit 3: not a pass)", markup=False)
    return summary["exit_code"]
