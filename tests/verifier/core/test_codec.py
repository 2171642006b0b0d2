"""Held states as field ids (verifier/core/codec.py): decoding gives back the state, and a
successor's fingerprint, computed from its changed fields only, is the plain fingerprint."""
from specs import make_config, with_bounds
from specs.actions import init_state, successors
from specs.symmetry import canonicalizer
from verifier.core.codec import Codec, Level
from verifier.core.fingerprint import fingerprint


def _walk(cfg, limit, canonical=None):
    """(parent, successor) pairs of a breadth-first walk of `limit` states."""
    frontier, seen = [init_state(cfg)], {init_state(cfg)}
    while frontier and len(seen) < limit:
        nxt = []
        for s in frontier:
            for _, t in successors(cfg, s):
                t = canonical(t) if canonical else t
                yield s, t
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt


def test_ids_round_trip_and_fingerprints_match_for_every_successor():
    cfg = with_bounds(make_config("kafka"), records=2)
    codec = Codec()
    pairs = 0
    for s, t in _walk(cfg, 4000):
        known = codec.encode(s)
        assert codec.decode(known) == s and type(codec.decode(known)) is type(s)
        ids, fp = codec.child(t, s, known, codec.fingerprint(known))
        assert codec.decode(ids) == t
        assert fp == codec.fingerprint(ids) == fingerprint(t)
        pairs += 1
    assert pairs > 10_000
    # equal field values share one id: far fewer values than states
    assert max(codec.distinct_values()) < 4000


def test_canonical_successors_share_no_objects_with_their_parent_and_still_match():
    cfg = make_config("kafka", flags={"any_candidate_elections": True})
    canonical = canonicalizer(cfg)
    codec = Codec()
    for s, t in _walk(cfg, 1500, canonical):
        known = codec.encode(s)
        ids, fp = codec.child(t, s, known, codec.fingerprint(known))
        assert fp == fingerprint(t) and codec.decode(ids) == t


def test_a_batch_of_states_sharing_objects_encodes_as_one_by_one():
    cfg = make_config("kafka")
    states = [t for _, t in _walk(cfg, 500)]
    one = Codec()
    expected = [one.encode(s) for s in states]
    assert Codec().encode_batch(states) == expected


def test_a_level_keeps_keys_and_ids_in_order():
    level, by_fp = Level(), Level("fingerprint")
    rows = [(i, (i % 7, i % 3, i, 0, i // 2)) for i in range(100)]
    for key, ids in rows:
        level.append(key, ids)
        by_fp.append(key << 70, ids)
    assert len(level) == 100 and [level[k] for k in range(100)] == rows
    assert by_fp[42] == (42 << 70, rows[42][1])


def test_packed_states_round_trip_whole_or_by_position_and_pickle_small():
    """What spark-check ships and writes: per field a table of distinct values and a column
    of ids. Equal values made by different steps (different objects) share one entry."""
    import pickle

    from verifier.core.codec import codec_of, pack, pack_ids, unpack
    cfg = with_bounds(make_config("kafka"), records=2)
    states = [t for _, t in _walk(cfg, 3000)]
    assert len(states) > 5000 and len(set(states)) < len(states)
    packed = pickle.loads(pickle.dumps(pack(states)))
    got = unpack(packed)
    assert got == states and type(got[0]) is type(states[0])
    assert unpack(packed, [7, 0, 7]) == [states[7], states[0], states[7]]
    assert all(len(table) == len(set(table)) for table in packed[1])
    apart = [pickle.loads(pickle.dumps(s)) for s in states]     # the states as many processes make them
    assert len(pickle.dumps(packed)) < len(pickle.dumps(apart)) / 2
    codec, rows = codec_of(packed)         # held as ids: decodes and fingerprints as the states
    assert [codec.decode(r) for r in rows[:500]] == states[:500]
    assert [codec.fingerprint(r) for r in rows[:500]] == [fingerprint(s) for s in states[:500]]
    assert unpack(pack_ids(codec, rows[100:120])) == states[100:120]
    assert unpack(pack([])) == [] and codec_of(pack([]))[1] == []
