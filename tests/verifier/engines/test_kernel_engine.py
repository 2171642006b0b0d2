"""The compiled search (verifier/engines/kernel) answers as the Python search does: the same
counts, levels, coverage, verdicts and counterexamples, on one thread or several; and it
refuses, in one line, what it does not do yet."""
from __future__ import annotations

import functools

import pytest

from specs import Model
from specs.config import make_config
from verifier.cli import binding
from verifier.core.settings import Limits, Options, Settings


def _run(name, model, **knobs):
    settings = Settings(limits=Limits(), options=Options(keep_going=True),
                        knobs=binding.knobs(name, **knobs) if knobs else None)
    return binding.engine(name)(model, binding.properties(), settings)


def _facts(r):
    traces = {n: [label for label, _ in t.steps] for n, t in r.counterexamples.items()}
    return (r.status, r.distinct_states, r.transitions, r.states_per_level, r.terminal_states, dict(r.enabled),
            dict(r.taken), {v.name: v.status for v in r.verdicts}, traces)


@functools.lru_cache(maxsize=None)
def _answers(name, mutant, **knobs):
    """An engine's answers on `mutant` with one ISR shrink, --continue, made once per config and
    test process: the Python search's (`bfs`, the interpreted reference, most of this module's
    time; the tests that compare with it are one xdist group, so one process makes it), or the
    kernel's on one thread with its usual rounds, buffers and table (`kernel`, threads=1: the
    reference of the tests that squeeze those; the test below holds it to the Python search,
    in CI)."""
    return _facts(_run(name, Model(make_config(mutant=mutant, bounds={"isr_shrinks": 1}), symmetry=False), **knobs))


def _python(mutant):
    return _answers("bfs", mutant)


def _one_thread(mutant):
    return _answers("kernel", mutant, threads=1)


SHARED = pytest.mark.xdist_group("kernel-engine-python")


@SHARED
@pytest.mark.slow       # `make test-fast` holds the kernel to the Python search in the state-graph test below
# CI holds the kernel to the Python search on the preset and one mutant; `make nightly` on a
# third (the Python search of hwm-ignores-min-isr alone took 57 s of CI)
@pytest.mark.parametrize("mutant", [None, "fenced-elr-elected",
                                    pytest.param("hwm-ignores-min-isr", marks=pytest.mark.nightly)])
def test_the_kernel_answers_as_the_python_search_on_any_number_of_threads(mutant):
    cfg = make_config(mutant=mutant, bounds={"isr_shrinks": 1})
    model = Model(cfg, symmetry=False)
    python = _python(mutant)
    assert python[1] > 10_000
    for threads in (1, 2, 3):
        assert _facts(_run("kernel", model, threads=threads)) == python


@pytest.mark.parametrize("limits, mutant", [(Limits(), "fenced-elr-elected"), (Limits(), "hwm-ignores-min-isr"),
                                            (Limits(max_states=4_321), None)])
def test_a_search_that_stops_mid_round_stops_where_one_thread_does(limits, mutant):
    """A first violation (no --continue) or max states inside a round: the round is taken in
    order, and the threads stop at the very transition the one-thread loop stops at, with its
    counts and counterexample."""
    model = Model(make_config(mutant=mutant, bounds={"isr_shrinks": 1}), symmetry=False)

    def run(name, **knobs):
        settings = Settings(limits=limits, knobs=binding.knobs(name, **knobs) if knobs else None)
        return _facts(binding.engine(name)(model, binding.properties(), settings))

    python = run("bfs")
    assert python[0] != "complete"
    for threads in (2, 3):
        assert run("kernel", threads=threads) == python


@SHARED
def test_small_rounds_full_buffers_and_crowded_tables_change_nothing(monkeypatch):
    """Rounds of 256 states a stretch whose buffers fill up after 272 successors, and a visited
    set with room for one state's successors a round: rounds are undone and taken again smaller or with
    more room (some after numbering the stretches that settled first), states wait for controller
    events and go on, over and over; the answers are
    still those of one thread with room to spare (the Python search's), on two and three threads."""
    import verifier.engines.kernel as engine
    from verifier.engines.kernel import flow, parallel, visited
    from verifier.engines.kernel.parallel import CROWDED, FULL
    cfg = make_config(mutant="hwm-ignores-min-isr", bounds={"isr_shrinks": 1})
    model = Model(cfg, symmetry=False)
    python = _one_thread("hwm-ignores-min-isr")
    monkeypatch.setattr(engine, "P_STATES", 256 * engine.PIECES)
    monkeypatch.setattr(engine, "P_SUCCESSORS", 1)
    monkeypatch.setattr(engine, "Visited", lambda owners, most, shared: visited.Visited(owners, 16, most, shared))
    monkeypatch.setattr(parallel, "ROOM", 0)
    undone, numbered_then_undone = [], []
    real = flow.Flow.run

    def counting(self):
        ended = real(self)
        whys = [why for why, _, _, _ in ended if why != 0]
        undone.extend(whys)
        numbered_then_undone.extend([self.numbered] if whys and self.numbered else [])
        return ended

    monkeypatch.setattr(flow.Flow, "run", counting)
    for threads in (2, 3):
        assert _facts(_run("kernel", model, threads=threads)) == python
    assert FULL in undone and CROWDED in undone, f"a path was not taken: {set(undone)}"
    assert numbered_then_undone, "no round was undone after numbering stretches as they settled"


def test_a_round_numbered_in_part_then_merged_in_order_finds_one_threads_counterexample(monkeypatch):
    """A stretch holding a violation is merged in order (merge), after the stretches before it
    in its round were numbered as they settled: the settle that finds the violation is held
    back 50 ms so that they are, every time. The counts and the counterexample are one
    thread's."""
    import time
    from verifier.engines.kernel import flow
    real_init, merged_after = flow.Flow.__init__, []

    def init(self, search, frontier, spans, shared, settle, number, early):
        def late(t):
            ordered = settle(t)
            if ordered and t > 0:
                time.sleep(0.05)
                merged_after.append(t)
            return ordered
        real_init(self, search, frontier, spans, shared, late, number, early)

    real_run = flow.Flow.run
    numbered_first = []

    def run(self):
        ended = real_run(self)
        numbered_first.extend([self.numbered] if self.ordered and self.numbered else [])
        return ended

    monkeypatch.setattr(flow.Flow, "__init__", init)
    monkeypatch.setattr(flow.Flow, "run", run)
    cfg = make_config(mutant="hwm-ignores-min-isr", bounds={"isr_shrinks": 1})
    assert _facts(_run("kernel", Model(cfg, symmetry=False), threads=2)) == _one_thread("hwm-ignores-min-isr")
    assert merged_after and numbered_first, (merged_after, numbered_first)


def test_a_stretch_one_state_fills_is_widened_and_the_answers_stay(monkeypatch):
    """Stretches that start with room for 4 successors, on rounds of 8 states a stretch: a
    state with more fills its stretch alone, the stretches are widened (not a crash) and the
    answers are one thread's."""
    import verifier.engines.kernel as engine
    from verifier.engines.kernel import parallel, stretch
    monkeypatch.setattr(engine, "P_STATES", 8 * engine.PIECES)
    monkeypatch.setattr(engine, "P_SUCCESSORS", 0)
    monkeypatch.setattr(stretch, "START_ROWS", 4)
    widened = []
    real = stretch.widen
    monkeypatch.setattr(parallel, "widen", lambda search, n: (widened.append(search._widths[1]), real(search, n)))
    cfg = make_config(mutant="hwm-ignores-min-isr", bounds={"isr_shrinks": 1})
    assert _facts(_run("kernel", Model(cfg, symmetry=False), threads=2)) == _one_thread("hwm-ignores-min-isr")
    assert widened and widened[0] == 4, widened


def test_threads_buffers_stay_small_where_a_state_could_have_half_a_million_successors():
    """Twelve spare brokers: the kernel allows 531,200 successors a state. The threads' flags and
    buffers are sized by a fixed share and the round, not by that (they asked for 32 GB, and the
    run died allocating them)."""
    import verifier.engines.kernel as engine
    from verifier.engines.kernel.stretch import LOST_BYTES
    cfg = make_config(extra_brokers=list(range(100, 112)))
    search = engine.Search(Model(cfg, symmetry=False), binding.properties(), Settings(), None, threads=2)
    try:
        assert search.k.max_successors > 500_000
        assert search.lost.nbytes <= 2 * LOST_BYTES
        assert sum(st.nbytes for st in search.stretches) < 1 << 28
    finally:
        search.close()


@SHARED
def test_fills_beside_running_threads_and_fills_that_wait_for_them_change_nothing(monkeypatch):
    """The threads' controller events are filled while other threads still expand; once the
    table's facts could move (here after 16 controller values), a fill waits for every thread.
    Both give the answers of one thread with room to spare (the Python search's), and both paths
    are taken."""
    from specs.kernel import tables
    cfg = make_config(mutant="fenced-elr-elected", bounds={"isr_shrinks": 1})
    model = Model(cfg, symmetry=False)
    python = _one_thread("fenced-elr-elected")
    monkeypatch.setattr(tables, "FACTS_RESERVED", 16)
    answers = []
    real = tables.Tables.fits

    def fits(self, n):
        answers.append(real(self, n))
        return answers[-1]

    monkeypatch.setattr(tables.Tables, "fits", fits)
    assert _facts(_run("kernel", model, threads=2)) == python
    assert True in answers and False in answers, "one of the two paths was not taken"


@pytest.mark.parametrize("mutant, flags, limits, keep_going", [
    ("hwm-ignores-min-isr", {}, Limits(), False),         # stopped at the first violation, inside a state
    ("hwm-ignores-min-isr", {}, Limits(), True),
    (None, {}, Limits(max_states=777), True),
    (None, {"any_candidate_elections": True}, Limits(), True)])      # symmetric
def test_the_kernels_state_graph_is_the_python_searchs(mutant, flags, limits, keep_going):
    """--dump-graph on the kernel: the graph builder finds the search's transitions again, node
    for node (named by the step that first reached it) and edge for edge, in order."""
    model = Model(make_config(mutant=mutant, flags=flags, bounds={"isr_shrinks": 0}))

    def graph(name, **knobs):
        settings = Settings(limits=limits, options=Options(keep_going=keep_going, graph=True),
                            knobs=binding.knobs(name, **knobs) if knobs else None)
        return binding.engine(name)(model, binding.properties(), settings).graph
    python = graph("bfs")
    assert len(python[1]) > 1000 and any(n[1]["violation"] == "true" for n in python[0]) == bool(mutant)
    for threads in (1, 2):
        assert graph("kernel", threads=threads) == python


def test_check_says_which_engine_and_refuses_a_kernel_it_cannot_run(cli, tmp_path):
    r = cli("check", "--bound", "isr_shrinks=0", "-q", "--out", str(tmp_path), "--workers", "1")
    assert r.returncode == 0 and "engine: kernel (the model compiled), 1 thread" in r.stdout, r.stdout
    sym = cli("check", "--flag", "any_candidate_elections=true", "--bound", "isr_shrinks=0", "-q", "--out",
              str(tmp_path))
    assert sym.returncode == 0 and "symmetry: on" in sym.stdout and "engine: kernel" in sym.stdout, sym.stdout
    bad = cli("check", "--engine", "kernel", "--bound", "records=31", "--out", str(tmp_path))
    assert bad.returncode == 2 and "at most 30 records" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("threads", [1, 2])
def test_a_search_past_its_memory_budget_stops_with_a_report_not_a_kill(monkeypatch, threads):
    """A growth the budget does not allow stops the search as a time budget does (STOPPED, exit
    3, the levels it reached, the reason in words), before it allocates; Linux's OOM killer
    would leave no report at all."""
    from verifier.engines.kernel import memory
    from verifier.core.result import STOPPED
    cfg = make_config(bounds={"isr_shrinks": 1})
    model = Model(cfg, symmetry=False)
    full = _run("kernel", model, threads=threads)
    monkeypatch.setattr(memory, "SHARE", 1.0)
    monkeypatch.setattr(memory, "machine_bytes", lambda: memory.resident_bytes() + (1 << 20))
    r = _run("kernel", model, threads=threads)
    assert r.status == STOPPED and r.stop_reason.startswith("memory budget:"), (r.status, r.stop_reason)
    assert "GB" in r.stop_reason and 0 < r.distinct_states < full.distinct_states
    assert r.states_per_level[:-1] == full.states_per_level[:len(r.states_per_level) - 1]
    assert sum(r.states_per_level) == r.distinct_states


@pytest.mark.parametrize("threads", [1, 2])
def test_a_store_and_levels_too_big_for_memory_go_to_files_and_change_nothing(monkeypatch, tmp_path, threads):
    """A budget that refuses the store and the next level any memory: they move to files in
    KRAFT_VERIFY_SPILL (unlinked at once: the directory stays empty), the answers are the
    ones in memory, and the result says so. A spill directory that is missing, or none, and a
    disk too full for them stop the search with a report that says which, as memory does."""
    from verifier.engines.kernel import memory
    from verifier.core.result import STOPPED
    cfg = make_config(bounds={"isr_shrinks": 1})
    model = Model(cfg, symmetry=False)
    full = _run("kernel", model, threads=threads)
    allow = memory.Budget.allow

    def refuse_levels(self, held, more, what):
        if what == "the store and the next level" and more > 0:
            raise memory.MemoryBudget(f"memory budget: {what}")
        allow(self, held, more, what)
    monkeypatch.setattr(memory.Budget, "allow", refuse_levels)
    monkeypatch.setenv("KRAFT_VERIFY_SPILL", str(tmp_path))
    spilled = _run("kernel", model, threads=threads)
    assert _facts(spilled) == _facts(full)
    assert any("went to files in " + str(tmp_path) in w for w in spilled.warnings), spilled.warnings
    assert not full.warnings and not list(tmp_path.iterdir())
    for spill, says in ((str(tmp_path / "missing"), f"could not move to files in {tmp_path / 'missing'}"),
                        ("", "may not move to files (KRAFT_VERIFY_SPILL is empty)")):
        monkeypatch.setenv("KRAFT_VERIFY_SPILL", spill)
        r = _run("kernel", model, threads=threads)
        assert r.status == STOPPED and r.stop_reason.startswith("memory budget:") and says in r.stop_reason, \
            (r.status, r.stop_reason)
    monkeypatch.setenv("KRAFT_VERIFY_SPILL", str(tmp_path))
    monkeypatch.setattr(memory, "DISK_SPARE", 1 << 60)
    r = _run("kernel", model, threads=threads)
    assert r.status == STOPPED and r.stop_reason.startswith("disk budget:"), (r.status, r.stop_reason)
    assert 0 < r.distinct_states < full.distinct_states and sum(r.states_per_level) == r.distinct_states


@pytest.mark.parametrize("most", [1 << 36, 16 * 4096])
def test_the_visited_set_keeps_every_fingerprint_through_its_growths(most):
    """Tables that grow in place inside their reservation, and (a reservation of 4,096 slots)
    tables that outgrow it into new arrays: after every growth each fingerprint put in is
    still there, and none that was not."""
    import numpy as np

    from verifier.engines.kernel.visited import Visited, owner, visit
    rng = np.random.default_rng(7)
    fps = rng.integers(1, 2 ** 63, size=(60_000, 2), dtype=np.int64).astype(np.uint64)
    v = Visited(2, slots=1024, most=most)
    for k, (a, b) in enumerate(fps):
        if k % 1000 == 0:
            v.room(1000)
        o = owner(a, 2)
        assert visit(v.tables[o], a, b)
        v.counts[o] += 1
    assert max(len(t) for t in v.tables) >= 32_768, "the tables did not grow"
    assert (v._whole[0] is None) == (most < 1 << 20)
    assert not any(visit(v.tables[owner(a, 2)], a, b) for a, b in fps), "a fingerprint was lost in a growth"
    others = rng.integers(1, 2 ** 63, size=(1000, 2), dtype=np.int64).astype(np.uint64)
    assert all(visit(v.tables[owner(a, 2)], a, b) for a, b in others)


def test_a_state_found_twice_in_a_round_keeps_its_least_key_and_an_undone_round_leaves_no_trace():
    """visited.claim as the threads call it: the least discovery key of the round wins whoever
    came first, and the finder it displaced is marked lost; a state from before the round (its
    key below the round's first) is never taken again; unclaim empties what the round took and
    leaves the table exactly as before the round."""
    import numpy as np

    from verifier.engines.kernel.visited import Visited, claim, unclaim, visit
    u64 = np.uint64
    t = Visited(1, slots=64, shared=True).tables[0]
    assert visit(t, u64(11), u64(22))                           # found before the round
    before = t.copy()
    first, lost = u64(1000), np.zeros(64, dtype=np.uint8)
    took, slot = claim(t, u64(5), u64(6), u64(1040), first, lost)
    assert took == 1
    assert claim(t, u64(5), u64(6), u64(1050), first, lost)[0] == 0      # a larger key: not its discovery
    assert claim(t, u64(5), u64(6), u64(1010), first, lost)[0] == 2      # a smaller: 1040's finder lost
    assert lost[40] == 1 and lost.sum() == 1
    assert claim(t, u64(11), u64(22), u64(1001), first, lost)[0] == 0    # known before the round
    took, other = claim(t, u64(7), u64(6), u64(1020), first, lost)       # the same home slot, another state
    assert took == 1 and other != slot
    unclaim(t, np.array([slot, other]), 2)
    assert (t == before).all()


def test_two_threads_claiming_the_same_states_at_once_leave_each_with_its_least_key():
    """Two threads insert the same 200,000 states at once, one under the even keys front to
    back, the other under the odd keys back to front: every state ends with its even key, no
    even finder is marked lost, and every odd finder that took a slot or a key is."""
    import threading

    import numpy as np
    from numba import njit

    from verifier.engines.kernel.visited import Visited, claim

    @njit(nogil=True)
    def finders(table, fps, first, lost, odd, got):
        n = len(fps)
        for j in range(n):
            i = n - 1 - j if odd else j
            got[i] = claim(table, fps[i, 0], fps[i, 1], first + np.uint64(2 * i + odd), first, lost)[0]

    n = 200_000
    fps = np.random.default_rng(3).integers(1, 2 ** 63, size=(n, 2), dtype=np.int64).astype(np.uint64)
    v = Visited(1, slots=1 << 20, shared=True)
    first, lost = np.uint64(1 << 40), np.zeros(2 * n, dtype=np.uint8)
    got = [np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)]
    finders(v.tables[0], fps[:2], first, np.zeros(2 * n, dtype=np.uint8), 0, np.zeros(2, dtype=np.int64))
    v = Visited(1, slots=1 << 20, shared=True)                  # (the compile above, on a table of its own)
    threads = [threading.Thread(target=finders, args=(v.tables[0], fps, first, lost, odd, got[odd]))
               for odd in (0, 1)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    table = v.tables[0]
    used = table[table[:, 0] != 0]
    assert len(used) == n and sorted(used[:, 2] - first) == list(range(0, 2 * n, 2))
    assert (got[0] != 0).all() and not lost[0::2].any()
    assert (lost[1::2] == (got[1] != 0)).all()
    assert 0 < (got[1] != 0).sum() < n, "the threads never met: the test did not race them"
