"""What squeezing a level costs and saves (spark/rows.py), and the codecs it was chosen from,
on one level of the kernel path's own records, made in this process by the same stages the
executors run (seed, expand, own; no Spark).

    .venv/bin/python bench/squeeze_bench.py --json bench/results/squeeze.json

Per kind of record (a level's chunks; the blocks its expansion sends to owners): the bytes a
state (a successor, for blocks) raw and squeezed, and the seconds a million of them take to
encode and to read back (rows widened) each way. Then each codec on the raw records whole:
its ratio and its speed in MB/s of input, compressing and decompressing, one core. Run it
alone on the machine: the speeds are the measurement.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import invariants as I  # noqa: E402
import spark.rows as R  # noqa: E402
from spark.kernel_tasks import KernelJob  # noqa: E402
from specs import Model, make_config  # noqa: E402


def a_level(brokers: int, records: int, depth: int, partitions: int = 4) -> tuple:
    """(chunks, blocks) of level `depth`: its chunks as own writes them raw, and the blocks
    its own expansion sends (level depth + 1's successors)."""
    cfg = make_config("kafka", replicas=list(range(1, brokers + 1)), bounds={"records": records})
    j = KernelJob(Model(cfg, symmetry=False), I.REGISTRY, True, partitions)
    j.squeeze = False
    roots = sorted((fp, c) for fp, (_, c) in j.roots(j.model()).items())
    outs = [j.seed(p, roots) for p in range(partitions)]
    visited: list = [[] for _ in range(partitions)]
    for level in range(depth + 1):
        chunks = [(v[1], v[2]) for out in outs for _, v in out if v[0] == "C"]
        for p, out in enumerate(outs):
            visited[p] += [(p, v) for _, v in out if v[0] == "F"]
        routed: list = [[] for _ in range(partitions)]
        for owner, value in j.expand(frozenset(), chunks):
            routed[owner].append((owner, value))
        if level == depth:
            return [c for _, c in chunks], [v[1] for r in routed for _, v in r if v[0] == "B"]
        outs = [list(j.own(frozenset(), p, routed[p] + visited[p])) for p in range(partitions)]


def product(records: list, magic: bytes) -> dict:
    """Raw against squeezed, in the product's own format."""
    recs = [R.Rows(d, magic) for d in records]
    n = sum(r.n for r in recs)
    out = {"records": len(recs), "states": n}
    for squeeze in (False, True):
        t = time.perf_counter()
        data = [R.encode(magic, r.fps, r.parents, r.labels, r.rows, 0, r.ctrls, nths=r.nths, squeeze=squeeze)
                for r in recs]
        enc = time.perf_counter() - t
        t = time.perf_counter()
        for d in data:
            R.Rows(d, magic).rows
        dec = time.perf_counter() - t
        key = "squeezed" if squeeze else "raw"
        out[key] = {"bytes_per_state": round(sum(map(len, data)) / n, 1),
                    "encode_s_per_million": round(enc / n * 1e6, 3), "read_s_per_million": round(dec / n * 1e6, 3)}
    out["ratio"] = round(out["raw"]["bytes_per_state"] / out["squeezed"]["bytes_per_state"], 2)
    return out


def codecs(records: list) -> dict:
    size = sum(map(len, records))
    ways = {"zlib level 1": (lambda d: zlib.compress(d, 1), zlib.decompress)}
    for lv in (-1, 1, 3):
        ways[f"zstd level {lv}"] = (zstandard.ZstdCompressor(level=lv).compress,
                                    zstandard.ZstdDecompressor().decompress)
    out = {}
    for name, (pack, unpack) in ways.items():
        t = time.perf_counter()
        packed = [pack(bytes(d)) for d in records]
        c = time.perf_counter() - t
        t = time.perf_counter()
        for p in packed:
            unpack(p)
        d = time.perf_counter() - t
        out[name] = {"ratio": round(size / sum(map(len, packed)), 2), "compress_mb_s": round(size / c / 1e6),
                     "decompress_mb_s": round(size / d / 1e6)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brokers", type=int, default=4)
    ap.add_argument("--records", type=int, default=2)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--json")
    args = ap.parse_args()
    chunks, blocks = a_level(args.brokers, args.records, args.depth)
    result = {"config": f"--brokers {args.brokers} --bound records={args.records}, level {args.depth}",
              "chunks": product(chunks, R.PART), "blocks": product(blocks, R.BLOCK),
              "codecs_on_raw_blocks": codecs(blocks)}
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
