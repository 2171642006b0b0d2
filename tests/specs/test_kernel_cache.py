"""The compiled kernel's cache as a code-loading surface (issue 57, specs/kernel/cache.py):
numba's cache files are pickles, so a directory another user can write is refused in one line,
and an entry that is truncated, planted or sealed by another key is compiled afresh, never
unpickled. A small cached function stands in for the kernel: it is cached the same way (under
the kernel's directory, through the same sealed files) and compiles in a moment."""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from specs.kernel import cache
from tests.conftest import ROOT, run_cli

PROBE = '''
import json, sys
import specs.kernel                      # installs the sealed cache, as every kernel run does
from numba import njit

@njit(cache=True)
def twice(x):
    return 2 * x

print(json.dumps({"value": int(twice(21)), "hits": sum(twice.stats.cache_hits.values()),
                  "misses": sum(twice.stats.cache_misses.values())}))
'''


class Planted:
    """A pickle that, once loaded, leaves a file behind: proof that something unpickled it."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _probe(tmp_path: Path, key: Path | None = None, max_file_bytes: int | None = None) -> dict:
    import resource

    def limit():
        if max_file_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))
    (tmp_path / "probe").mkdir(exist_ok=True)
    (tmp_path / "probe" / "probe_mod.py").write_text(PROBE)
    env = dict(os.environ, KRAFT_VERIFY_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT),
               KRAFT_VERIFY_KEY=str(key or tmp_path / "key"))
    r = subprocess.run([sys.executable, str(tmp_path / "probe" / "probe_mod.py")], capture_output=True, text=True,
                       env=env, cwd=tmp_path, preexec_fn=limit)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _entries(tmp_path: Path, suffix: str) -> list[Path]:
    return sorted(p for p in (tmp_path / "cache").rglob(f"probe_mod*{suffix}"))


def test_an_entry_is_sealed_and_loaded_again(tmp_path):
    assert _probe(tmp_path) == {"value": 42, "hits": 0, "misses": 1}
    assert _probe(tmp_path) == {"value": 42, "hits": 1, "misses": 0}
    for path in _entries(tmp_path, ".nbi") + _entries(tmp_path, ".nbc"):
        assert path.read_bytes().startswith(cache.MAGIC), path


def test_an_entry_the_disk_refuses_is_not_kept_and_the_run_goes_on(tmp_path):
    """`ulimit -f` (or a full disk): numba's write of the entry fails with EFBIG; the run answers
    from the code compiled in memory, keeps no entry, and a later run compiles again."""
    (tmp_path / "key").write_bytes(os.urandom(32))
    os.chmod(tmp_path / "key", 0o600)
    assert _probe(tmp_path, max_file_bytes=512) == {"value": 42, "hits": 0, "misses": 1}
    assert _entries(tmp_path, ".nbc") == []
    assert _probe(tmp_path) == {"value": 42, "hits": 0, "misses": 1}


@pytest.mark.parametrize("suffix", [".nbi", ".nbc"])
def test_a_truncated_entry_is_compiled_afresh(tmp_path, suffix):
    _probe(tmp_path)
    (entry,) = _entries(tmp_path, suffix)
    entry.write_bytes(entry.read_bytes()[:-7])
    assert _probe(tmp_path) == {"value": 42, "hits": 0, "misses": 1}
    assert _probe(tmp_path) == {"value": 42, "hits": 1, "misses": 0}      # and sealed whole again


@pytest.mark.parametrize("suffix", [".nbi", ".nbc"])
@pytest.mark.parametrize("how", ["bare", "forged"])
def test_a_planted_entry_is_never_unpickled(tmp_path, suffix, how):
    """A bare pickle (numba's own format), or one sealed with a key that is not the user's
    (the tag recomputed by whoever planted it), is compiled over, and its code never runs."""
    _probe(tmp_path)
    (entry,) = _entries(tmp_path, suffix)
    marker = tmp_path / "it-ran"
    payload = pickle.dumps(Planted(str(marker)))
    if how == "forged":
        place = os.path.relpath(entry, next((tmp_path / "cache").glob("kernel-*")).resolve())
        payload = cache.seal(b"k" * 32, place, payload)
    entry.write_bytes(payload)
    assert _probe(tmp_path) == {"value": 42, "hits": 0, "misses": 1}
    assert not marker.exists()


def test_another_key_has_its_own_directory(tmp_path):
    """Runs under two keys (a test's own, a CI secret) neither load nor overwrite each other's
    entries."""
    _probe(tmp_path)
    assert _probe(tmp_path, key=tmp_path / "other-key") == {"value": 42, "hits": 0, "misses": 1}
    assert _probe(tmp_path) == {"value": 42, "hits": 1, "misses": 0}
    assert len(list((tmp_path / "cache").glob("kernel-*"))) == 2


def _one_line_refusal(tmp_path, where: Path, *words):
    r = run_cli("check", "--out", str(tmp_path / "out"), env={"KRAFT_VERIFY_CACHE": str(where),
                                                              "KRAFT_VERIFY_KEY": str(tmp_path / "key")})
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert all(w in r.stderr for w in words), r.stderr
    assert not list(where.glob("kernel-*/**/*.nb*"))


def test_a_cache_others_can_write_is_refused_in_one_line(tmp_path):
    where = tmp_path / "shared"
    where.mkdir()
    where.chmod(0o777)
    _one_line_refusal(tmp_path, where, "can be written by other users", "chmod go-w")


def test_a_cache_under_a_directory_others_can_write_is_refused(tmp_path):
    """Whoever can write the directory above can swap the cache for one of their own; a sticky
    directory such as /tmp is the exception (tmp_path lies under it)."""
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o775)
    _one_line_refusal(tmp_path, tmp_path / "open" / "cache", "can be written by other users")


def test_a_cache_of_another_user_is_refused(tmp_path, monkeypatch):
    where = tmp_path / "theirs"
    where.mkdir(mode=0o700)
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(where).st_uid + 1)
    with pytest.raises(cache.CacheRefused, match="not to this user"):
        cache.refuse_unsafe(where)


def test_a_safe_cache_passes(tmp_path):
    where = tmp_path / "mine"
    where.mkdir(mode=0o700)
    cache.refuse_unsafe(where)          # no exception: the user's own, under sticky /tmp


def test_an_edit_of_any_kernel_source_names_another_directory(tmp_path, monkeypatch):
    """numba checks only the file of the function it compiled; the directory's name covers every
    file the kernel is compiled from, so an edited rule in mechanics.py never runs old code."""
    names = {p.relative_to(ROOT).as_posix() for p in cache.SOURCES}
    assert {"specs/kernel/mechanics.py", "specs/kernel/successors.py", "specs/state.py",
            "verifier/engines/kernel/search.py"} <= names
    copies = []
    for p in cache.SOURCES:
        copy = tmp_path / p.relative_to(ROOT).as_posix().replace("/", "_")
        copy.write_bytes(p.read_bytes())
        copies.append(copy)
    monkeypatch.setattr(cache, "SOURCES", copies)
    before = cache.source_hash()
    copies[len(copies) // 2].write_text(copies[len(copies) // 2].read_text() + "\n# an edit\n")
    assert cache.source_hash() != before


@pytest.mark.parametrize("flags", [[], ["--flag", "any_candidate_elections"]], ids=["plain", "symmetric"])
def test_a_second_run_of_a_config_compiles_nothing(tmp_path, monkeypatch, flags):
    """The search loops once took the symmetry reduction as a function argument: a dispatcher in
    a signature never matches the cache's entry in a later process, so every run compiled the
    loop again (1.3 s) and added an entry to the index. The second of two runs of a config
    loads everything: no compile second, no compiling line, and no cache file written. The runs
    have a cache of their own: in the shared one, another test process compiling a cold kernel
    at the same moment wrote files between the two runs (seen under `-n 2`)."""
    own = tmp_path / "cache"
    own.mkdir(mode=0o700)
    monkeypatch.setenv("KRAFT_VERIFY_CACHE", str(own))        # (run_cli passes os.environ on)

    def run(out):
        r = run_cli("check", *flags, "--out", str(tmp_path / out))
        assert r.returncode == 0, r.stdout + r.stderr
        summary = json.loads(next((tmp_path / out).rglob("summary.json")).read_text())
        return r.stdout, summary["counts"]["compile_seconds"]
    run("first")
    files = {p: p.stat().st_mtime_ns for p in cache.cache_dir().rglob("*") if p.is_file()}
    stdout, seconds = run("second")
    assert seconds == 0 and "compiling the kernel" not in stdout, stdout
    assert {p: p.stat().st_mtime_ns for p in cache.cache_dir().rglob("*") if p.is_file()} == files


def test_a_copy_of_the_tree_loads_the_kernel_the_original_compiled(tmp_path):
    """numba keeps a function's cache under a hash of its file's absolute directory; the kernel's
    are kept under their module's name (the directory's own name covers the sources), so a CI
    runner's new checkout path or a copy of the tree loads the kernel instead of compiling it."""
    import shutil
    r = run_cli("check", "--out", str(tmp_path / "here"))
    assert r.returncode == 0, r.stdout + r.stderr
    tree = tmp_path / "tree"
    for top in ("specs", "invariants", "verifier", "spark"):
        shutil.copytree(ROOT / top, tree / top, ignore=shutil.ignore_patterns("__pycache__"))
    r = run_cli("check", "--out", str(tmp_path / "there"), cwd=tree, env={"PYTHONPATH": str(tree)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{tree}/verifier" in subprocess.run(
        [sys.executable, "-c", "import verifier; print(verifier.__file__)"], capture_output=True, text=True,
        cwd=tree, env=dict(os.environ, PYTHONPATH=str(tree))).stdout     # the copy is what ran
    summary = json.loads(next((tmp_path / "there").rglob("summary.json")).read_text())
    assert summary["counts"]["compile_seconds"] == 0 and "compiling the kernel" not in r.stdout, r.stdout
