"""The kernel's compile time is said when it starts and kept out of the search's rate
(verifier.core.compiling.py)."""
from __future__ import annotations

from numba import njit

from verifier.core.compiling import GUESS, LAST, Compiling, last_seconds


def _fresh():
    """A function numba has never compiled in this process (no cache): calling it compiles."""
    @njit(cache=False)
    def add(a, b):
        return a + b
    return add


def test_a_compile_is_said_once_when_it_starts_and_its_seconds_are_counted(tmp_path):
    said = []
    with Compiling(said.append, "kafka", tmp_path) as c:
        assert said == []
        _fresh()(1, 2)
        assert len(said) == 1 and "compiling the kernel for kafka" in said[0] and str(tmp_path) in said[0]
        assert f"about {GUESS:.0f} s" in said[0]
        _fresh()(3, 4)                          # a second compile: counted, not said again
    assert len(said) == 1 and c.seconds > 0


def test_a_load_or_a_call_of_compiled_code_is_no_compile(tmp_path):
    f = _fresh()
    f(1, 2)
    said = []
    with Compiling(said.append, "kafka", tmp_path) as c:
        f(5, 6)
    assert said == [] and c.seconds == 0.0


def test_the_last_compile_length_is_data_and_garbage_is_ignored(tmp_path):
    (tmp_path / LAST).write_text("__import__('os').system('false')\n")
    assert last_seconds(tmp_path) is None
    (tmp_path / LAST).write_text("-3\n")
    assert last_seconds(tmp_path) is None
    (tmp_path / LAST).write_text("41.5\n")
    assert last_seconds(tmp_path) == 41.5
    said = []
    with Compiling(said.append, "kafka", tmp_path):
        _fresh()(1, 2)
    assert "about 42 s" in said[0]


def test_the_kernel_reports_its_compile_seconds_apart_from_the_search(tmp_path):
    """A kernel run's summary has compile_seconds; its seconds are the search's (the rate's)."""
    from specs import Model, make_config
    from invariants import REGISTRY
    from verifier.cli.binding import engine
    from verifier.core.settings import Settings
    notes = []
    r = engine("kernel")(Model(make_config("kafka", replicas=[1, 2])), tuple(REGISTRY), Settings(),
                         lambda p: notes.append(p.note) if p.note else None)
    assert "compile_seconds" in r.counts and r.counts["compile_seconds"] >= 0
    assert r.seconds >= 0 and r.distinct_states > 0
    # compiled already (by an earlier test or run) or compiled now: said exactly when it compiled
    assert (len([n for n in notes if n.startswith("compiling the kernel")]) == 1) == (r.counts["compile_seconds"] > 0)
