"""How big a search will get, from the sizes of the levels it has finished.

Breadth-first level sizes rise, peak and fall; the ratio between consecutive levels falls
steadily once the first few levels are past (in the default config ln(ratio) drops by about
0.09 a level). `predict` fits ln(ratio) against depth over the last few levels by least
squares and runs the fitted ratios forward until a level would fall below a small fraction of
the largest level: that gives the total and the depth. Fits over different windows disagree
where the trend bends (around the peak level); their spread, and a band of half (a quarter
after the peak) to twice the states still to come, is the range.
It is a forecast from a trend, not a bound: `check --estimate` says so, and the bench compares
it with the truth (bench/estimate_bench.py, BENCHMARKS.md).
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional

MIN_LEVELS = 6          # fewer finished levels than this: no prediction
WINDOWS = (3, 4, 5, 8)   # how many of the most recent ratios each fit looks at
MAX_DEPTH = 500
END_FRACTION = 3000      # a search ends when a level would hold less than 1/3000 of the largest


class Prediction(NamedTuple):
    states: int          # distinct states in all (the levels so far included)
    low: int
    high: int
    depth: int           # the last level's depth
    depth_low: int
    depth_high: int


def _run_forward(levels: list[int], a: float, b: float) -> tuple[int, int]:
    """Total states and depth when level k+1 = level k * exp(a + b k), from the last level.

    The run stops where a level would fall below 1/END_FRACTION of the largest level so far, not
    at one state: the bounds of a config cut its last levels off faster than the trend falls
    (the ladder's searches ended at 1/1,300 to 1/69,000 of their peak level), and running the
    trend down to one state put the depth 4 to 8 levels too deep."""
    total = sum(levels)
    size, k = float(levels[-1]), len(levels) - 1
    end = max(1.0, max(levels) / END_FRACTION)
    while k < MAX_DEPTH:
        size *= math.exp(a + b * k)
        if size < end:
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

    The centre is the median of fits over the last 3, 4, 5 and 8 ratios. While levels still
    grow, the line through the log-ratios falls faster than the ratios will (they level off
    around the peak), so the fits run short, the more so the steeper the growth: on the seven
    configs of the scale ladder they left out up to half the states to come. The states still
    to come are then scaled by 1 + 2 ln(last ratio) (about 1.8 at a ratio of 1.5, 1 at the peak),
    which kept every forecast past 2% of the search within a factor of two of the truth
    (bench/ladder_bench.py). The range covers every fit, half (a quarter after the peak, where
    searches stop more abruptly than the trend) to twice the states to come, and at least one
    more level as big as the last. The depth's range is four levels shallower to two deeper
    than the fits.
    """
    if len(levels) < MIN_LEVELS or min(levels) <= 0:
        return None
    fits = sorted(_fit(levels, w) for w in WINDOWS)
    states, depth = fits[len(fits) // 2]
    done = sum(levels)
    growth = levels[-1] / levels[-2]
    rest = (states - done) * (1 + 2 * math.log(growth) if growth > 1 else 1)
    states = done + round(rest)
    low = min(fits[0][0], done + round(rest * (0.5 if growth > 1 else 0.25)))
    high = max(fits[-1][0], done + round(2 * rest), done + levels[-1])
    depths = sorted(d for _, d in fits)
    last = len(levels) - 1
    return Prediction(states, low, high, depth, max(last, min(depths[0], depth - 4)),
                      max(depths[-1], depth + 2))
