"""How big a search will get, from the sizes of the levels it has finished.

Breadth-first level sizes rise, peak and fall; the ratio between consecutive levels falls
steadily once the first few levels are past (in the default config ln(ratio) drops by about
0.09 a level). `predict` fits ln(ratio) against depth over the last few levels by least squares and
runs the fitted ratios forward until a level would hold less than one state: that gives the
total and the depth. Fits over different windows disagree where the trend bends (around the
peak level); their spread, and at least a factor of two on the states still to come, is the
range.
It is a forecast from a trend, not a bound: `check --estimate` says so, and the bench compares
it with the truth (bench/estimate_bench.py, BENCHMARKS.md).
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional

MIN_LEVELS = 6          # fewer finished levels than this: no prediction
WINDOWS = (3, 4, 5, 8)   # how many of the most recent ratios each fit looks at
MAX_DEPTH = 500


class Prediction(NamedTuple):
    states: int          # distinct states in all (the levels so far included)
    low: int
    high: int
    depth: int           # the last level's depth
    depth_low: int
    depth_high: int


def _run_forward(levels: list[int], a: float, b: float) -> tuple[int, int]:
    """Total states and depth when level k+1 = level k * exp(a + b k), from the last level."""
    total = sum(levels)
    size, k = float(levels[-1]), len(levels) - 1
    while k < MAX_DEPTH:
        size *= math.exp(a + b * k)
        if size < 1:
            break
        total += size
        k += 1
    return int(round(total)), k


def _fit(levels: list[int], window: int) -> tuple[int, int]:
    """(total, depth) from a least-squares line through the last `window` log-ratios."""
    ratios = [(k, math.log(levels[k + 1] / levels[k])) for k in range(1, len(levels) - 1)][-window:]
    n = len(ratios)
    mean_k = sum(k for k, _ in ratios) / n
    mean_r = sum(r for _, r in ratios) / n
    sxx = sum((k - mean_k) ** 2 for k, _ in ratios)
    b = sum((k - mean_k) * (r - mean_r) for k, r in ratios) / sxx if sxx else 0.0
    b = min(b, -0.02)          # a ratio that is not falling cannot be run to an end: assume a slow fall
    return _run_forward(levels, mean_r - b * mean_k, b)


def predict(levels: list[int]) -> Optional[Prediction]:
    """A forecast from the sizes of finished levels (level 0 first), or None if too early.
    The centre is the median of fits over the last 3, 4, 5 and 8 ratios; the range covers every
    fit and at least half to twice the states still to come."""
    if len(levels) < MIN_LEVELS or min(levels) <= 0:
        return None
    fits = sorted(_fit(levels, w) for w in WINDOWS)
    states, depth = fits[len(fits) // 2]
    done = sum(levels)
    low = min(fits[0][0], done + (states - done) // 2)
    high = max(fits[-1][0], done + 2 * (states - done))
    depths = sorted(d for _, d in fits)
    return Prediction(states, low, high, depth, min(depths[0], depth - 2), max(depths[-1], depth + 2))
