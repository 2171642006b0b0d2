"""The forecast of `check --estimate` against searches whose every level size is known.

The level sizes are those `kraft-verify check` printed for three configs of the scale ladder
(bench/results/ladder.jsonl); test_parallel.py checks a live estimate of the default config.
"""
import pytest

from verifier.estimate import MIN_LEVELS, predict

LEVELS = {
    "default": [1, 8, 38, 126, 337, 823, 1838, 3622, 6317, 9817, 13838, 17665, 20965, 23575, 25377,
                25546, 23730, 20316, 16114, 11764, 7711, 4647, 2357, 1137, 494, 165, 20],
    "records=2": [1, 8, 39, 141, 454, 1413, 4021, 9939, 21188, 39703, 66602, 100697, 137843, 175024,
                  211106, 244130, 267826, 276054, 265514, 236649, 194740, 146489, 101244, 61869,
                  34224, 16900, 7301, 2510, 693, 97, 4],
    "brokers 4": [1, 11, 72, 313, 1051, 3051, 7794, 17402, 34229, 60813, 99941, 152030, 208775,
                  256239, 284497, 294646, 287379, 263575, 223806, 174256, 121446, 76945, 45880,
                  24439, 11864, 4551, 1423, 556, 186, 21],
}


def _prefixes(levels):
    """Every prefix a run could have finished once 2% of its states were seen."""
    total = sum(levels)
    for m in range(MIN_LEVELS, len(levels)):
        if sum(levels[:m]) >= 0.02 * total:
            yield m


@pytest.mark.parametrize("name", sorted(LEVELS))
def test_the_true_count_is_within_every_range_once_two_percent_is_seen(name):
    levels = LEVELS[name]
    total = sum(levels)
    for m in _prefixes(levels):
        p = predict(levels[:m])
        assert p.low <= total <= p.high, (m, p)
        assert p.low <= p.states <= p.high
        assert 0.4 <= p.states / total <= 2.5, (m, p)


@pytest.mark.parametrize("name", sorted(LEVELS))
def test_the_depth_range_holds_the_true_depth_once_past_the_peak(name):
    levels = LEVELS[name]
    peak = levels.index(max(levels))
    for m in range(peak + 6, len(levels)):
        p = predict(levels[:m])
        assert p.depth_low <= len(levels) - 1 <= p.depth_high, (m, p)
        assert p.depth_low >= m - 1


def test_too_few_levels_give_no_forecast():
    assert predict(LEVELS["default"][:MIN_LEVELS - 1]) is None
    assert predict([1, 2, 0, 4, 5, 6]) is None
