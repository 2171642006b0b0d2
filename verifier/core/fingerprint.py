"""128-bit state fingerprints, the same in every process (local BFS and Spark executors).

A state is a tuple of fields. Each field value is hashed once (blake2b of its repr,
which depends on the value alone, never on object identity as pickle's memo does)
and cached; a state's fingerprint mixes its field hashes with fixed odd multipliers
mod 2**128. States share most fields with their parent, so a successor costs a few
dict look-ups, not a serialisation.
"""
from __future__ import annotations

from hashlib import blake2b

MASK = (1 << 128) - 1
BITS = 128
# Fixed odd multipliers (digits of pi and e); any odd constants give a bijection per field.
_MULTIPLIERS = (0x243F6A8885A308D313198A2E03707345, 0xA4093822299F31D0082EFA98EC4E6C89,
                0x452821E638D01377BE5466CF34E90C6D, 0xC0AC29B7C97C50DD3F84D5B5B5470917,
                0x9216D5D98979FB1BD1310BA698DFB5AD, 0x2FFD72DBD01ADFB7B8E1AFED6A267E97,
                0xB7E151628AED2A6ABF7158809CF4F3C7, 0x62E7160F38B4DA56A784D9045190CFEF)


def value_hash(value) -> int:
    return int.from_bytes(blake2b(repr(value).encode(), digest_size=16).digest(), "little")


def fingerprint(state) -> int:
    """The fingerprint of a state (a tuple of at most 8 fields)."""
    fp = 0
    for k, field in zip(_MULTIPLIERS, state):
        fp += k * value_hash(field)
    return fp & MASK


class Fingerprinter:
    """`fingerprint` with a per-field cache; equal results, far fewer hashes."""

    def __init__(self):
        self._caches: list[dict] = [{} for _ in _MULTIPLIERS]

    def __call__(self, state) -> int:
        fp = 0
        for k, cache, field in zip(_MULTIPLIERS, self._caches, state):
            h = cache.get(field)
            if h is None:
                h = cache[field] = value_hash(field)
            fp += k * h
        return fp & MASK


def collision_probability(distinct: int, generated: int) -> float:
    """TLC's optimistic estimate: distinct * (generated - distinct) / 2**bits."""
    return distinct * max(generated - distinct, 0) / float(1 << BITS)
