"""The forecast of `check --estimate` against searches whose every level size is known.

The level sizes are those `kraft-verify check` printed for the configs of the scale ladder
(bench/results/ladder.jsonl); test_parallel.py checks a live estimate of the default config.
"""
import pytest

from verifier.core.estimate import MIN_LEVELS, predict

LEVELS = {
    "default": [1, 8, 38, 126, 337, 823, 1838, 3622, 6317, 9817, 13838, 17665, 20965, 23575, 25377,
                25546, 23730, 20316, 16114, 11764, 7711, 4647, 2357, 1137, 494, 165, 20],
    "records=2": [1, 8, 39, 141, 454, 1413, 4021, 9939, 21188, 39703, 66602, 100697, 137843,
                  175024, 211106, 244130, 267826, 276054, 265514, 236649, 194740, 146489, 101244,
                  61869, 34224, 16900, 7301, 2510, 693, 97, 4],
    "brokers 4": [1, 11, 72, 313, 1051, 3051, 7794, 17402, 34229, 60813, 99941, 152030, 208775,
                  256239, 284497, 294646, 287379, 263575, 223806, 174256, 121446, 76945, 45880,
                  24439, 11864, 4551, 1423, 556, 186, 21],
    "crashes=1": [1, 11, 68, 308, 1079, 3100, 7789, 17732, 36802, 69242, 118084, 184186, 265146,
                  355829, 451921, 548304, 638130, 708726, 748654, 746799, 702514, 620979, 516518,
                  403579, 295810, 203326, 132448, 82208, 45510, 21268, 9324, 3959, 1213, 133],
    "clean_shutdowns=1": [1, 11, 75, 342, 1165, 3331, 8477, 19260, 39231, 72195, 121278, 187934,
                          270582, 365077, 466811, 569101, 663590, 737574, 783947, 793258, 758450,
                          681874, 575891, 458383, 339277, 235979, 151130, 90525, 50990, 24303,
                          10394, 4370, 1470, 260, 12],
    "fences=2": [1, 8, 44, 179, 573, 1569, 3837, 8423, 16810, 30353, 49513, 73453, 100631, 129676,
                 158782, 185242, 205819, 216124, 212473, 193972, 164373, 130457, 95783, 65460,
                 40442, 23470, 12642, 5624, 2232, 954, 312, 64, 2],
    "admin_elections=1, config_changes=1": [1, 11, 65, 263, 809, 2130, 5210, 11735, 23789, 43938,
                                            75007, 119704, 178472, 248560, 320121, 383051, 424756,
                                            441254, 428298, 386793, 321041, 245100, 171007, 110482,
                                            65678, 34827, 16958, 7065, 2124, 384, 33],
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
        assert 0.5 <= p.states / total <= 2.0, (m, p)       # the aim: within a factor of two


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
