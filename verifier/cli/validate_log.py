"""`kraft-verify validate-log PATH... --kafka VERSION`: a real cluster's own metadata log (a
controller's `__cluster_metadata-0` directory, or its segment and snapshot files) checked record
by record against the metadata invariants, read with that release's own classes
(verifier/engines/cluster/validate.py). Every record holds them: exit 0. A record breaks one:
exit 1, naming the partition, the offset, the record, why, and the partition before it. A log
that cannot be read: one line (which file, which offset, why), exit 2.
"""
from __future__ import annotations

import argparse
import json

from specs import Model, make_config
from verifier.cli.binding import engine, knobs
from verifier.cli.common import console, header_line, run_dir, write_result
from verifier.cli.conform import _release
from verifier.cli.progress import ProgressLine
from verifier.core.settings import Settings
from verifier.reports.writer import write_pages


def run(args: argparse.Namespace) -> int:
    rel = _release(args.kafka)
    cfg = make_config(rel.preset)
    model = Model(cfg, symmetry=False)
    out = console()
    out.print(header_line("validate-log", cfg, f"kafka={rel.version} files={len(args.files)}"), markup=False)
    run_id, out_dir = run_dir(args.out, f"validate-log-{rel.version}", cfg)
    only = tuple(n.strip() for n in (args.partitions or "").split(",") if n.strip())
    own = knobs("validate-log", version=rel.version, paths=tuple(args.files), default_min_isr=args.default_min_isr,
                partitions=only)
    with ProgressLine(out, not args.quiet, what="validate-log") as progress:
        result = engine("validate-log")(model, (), Settings(knobs=own), progress)
    files = result.sections.pop("files", {})
    write_pages(out_dir, {name: json.dumps(data, indent=2) + "\n" for name, data in files.items()})
    summary = write_result(result, model, out_dir, run_id, args, f"validate-log-{rel.version}", None)
    d, c = result.sections["details"], result.counts
    for v in result.verdicts:
        out.print(f"{v.name}: {v.status}" + (f": {v.detail}" if v.detail else ""), markup=False)
    unclean = [f for f in d["findings"] if f["property"] == "UncleanElection"]
    for f in unclean[:5]:
        out.print(f"unclean election at offset {f['offset']}: {f['why']}", markup=False)
    more = d["findings_per_kind"].get("UncleanElection", 0) - 5
    if more > 0:
        out.print(f"... and {more:,} more unclean elections (summary.json keeps the first {d['findings_kept_per_kind']} "
                  "of each kind)", markup=False)
    word = "ok" if summary["exit_code"] == 0 else summary["result"]
    checked = "" if d["partitions_checked"] == c["partitions"] else f" ({d['partitions_checked']} checked)"
    out.print(f"{word}: {c['records']:,} records in {c['batches']:,} batches, {c['partitions']} partition(s){checked}, "
              f"{c['seconds']:.1f}s ({c['records_per_second']:,} records/s)", markup=False)
    out.print(f"report: {out_dir}", markup=False)
    return summary["exit_code"]
