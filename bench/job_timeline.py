"""Where the threads of `check --workers 2` spend a run: every job the pool runs (its thread,
what it was, when it was handed out, began and ended) and every controller event the main
thread fills, summed per thread (issue 58's 0.9x line).

    .venv/bin/python bench/job_timeline.py -- --visited disk --workers 2 --brokers 4 --bound records=2 \
      --bound fences=2 --bound max_partition_epoch=7 --max-depth 12

Prints each thread's busy seconds by job (a lambda as its file:line), its span, and its gaps
(between a job's end and the next one's start) by the two jobs around them: a gap whose next
job was handed out after the thread was free waited for the main thread; one longer than 50 ms
is a level's end. The figures are wall time: a job whose thread the OS took away (three
threads on two cores while the main thread fills) counts as busy."""
from __future__ import annotations

import atexit
import collections
import sys
import threading
import time
import concurrent.futures.thread as pool

from specs.kernel import tables

LOG: list = []
FILLS: list = []


def _name(fn) -> str:
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__name__", str(fn))
    return f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno}" if name == "<lambda>" and code else name


def _timed_submit(submit):
    def timed(self, fn, *a, **k):
        handed = time.perf_counter()

        def run(*a, **k):
            began = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                LOG.append((threading.get_ident(), _name(fn), handed, began, time.perf_counter()))
        return submit(self, run, *a, **k)
    return timed


def _timed_fill(fill):
    def timed(self, key):
        began = time.perf_counter()
        fill(self, key)
        FILLS.append(time.perf_counter() - began)
    return timed


def report() -> None:
    threads = collections.defaultdict(list)
    for tid, name, handed, began, ended in LOG:
        threads[tid].append((began, ended, name, handed))
    for tid, jobs in threads.items():
        jobs.sort()
        busy = collections.Counter()
        for began, ended, name, _ in jobs:
            busy[name] += ended - began
        gaps = collections.Counter()
        for (_, a_end, a, _), (b_began, _, b, b_handed) in zip(jobs, jobs[1:]):
            gap = b_began - a_end
            if gap > 0.05:
                gaps["level end (over 50 ms)"] += gap
            elif gap > 0:
                gaps[f"{a} -> {b}" + (" (handed out later)" if b_handed > a_end else "")] += gap
        span = jobs[-1][1] - jobs[0][0]
        print(f"thread {tid}: {len(jobs)} jobs, busy {sum(busy.values()):.2f} s of {span:.2f} s")
        print("  busy:", ", ".join(f"{k} {v:.2f}" for k, v in busy.most_common()))
        print("  gaps:", ", ".join(f"{k} {v:.3f}" for k, v in gaps.most_common(10)))
    print(f"fills: {len(FILLS)}, {sum(FILLS):.2f} s on the main thread")


def main(argv: list) -> int:
    pool.ThreadPoolExecutor.submit = _timed_submit(pool.ThreadPoolExecutor.submit)
    tables.Tables.fill = _timed_fill(tables.Tables.fill)
    atexit.register(report)
    from verifier.cli import main as cli
    args = argv[argv.index("--") + 1:] if "--" in argv else argv
    return cli(["check", "-q", *args])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
