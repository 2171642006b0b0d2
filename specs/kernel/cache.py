"""Where numba keeps the compiled kernel, and why only entries this user signed are loaded.

numba's own cache checks only the file of the function it compiled: a cached function keeps
the code of the functions it calls in other files, so an edit of a rule in mechanics.py would
leave successors.py's cached machine code running the old rule. The kernel's cache therefore
lives in a directory named after a hash of every source file it is compiled from; an edit of
any of them compiles afresh (tests/specs/test_kernel_cache.py checks it). Set before any kernel
module is compiled (specs/kernel/__init__.py imports this first).

numba's cache files are pickles: loading one runs whatever code it names. So the cache is a
code-loading surface, guarded twice:
- the directory is refused in one line (exit 2) when another user could write it or anything
  above it, or when it is not the user's own, as ssh refuses such a key file;
- every entry is sealed with an HMAC of its bytes and its place, keyed by the user's key
  (specs/userkey.py, never kept in the cache). An entry that is truncated, was planted (a
  poisoned CI cache, a file copied in) or was sealed by another key is compiled afresh and
  overwritten, never unpickled. The directory's name carries the key's fingerprint, so runs
  under two keys (a test's own key, a CI secret) do not overwrite each other's entries.
"""
from __future__ import annotations

import hashlib
import hmac
import io
import os
import pickle
import stat
from pathlib import Path
from typing import Optional

from specs.config import ConfigError

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*(ROOT / "specs" / "kernel").glob("*.py"), *(ROOT / "verifier" / "engines" / "kernel").glob("*.py"),
                  ROOT / "verifier" / "core" / "rowhash.py", ROOT / "verifier" / "core" / "rowgraph.py",
                  ROOT / "specs" / "state.py", ROOT / "specs" / "config.py"])
MAGIC = b"kraft-verify sealed 1\n"
TAG = 32                                  # bytes of HMAC-SHA256


class CacheRefused(ConfigError):
    """The cache directory is not safe to load code from: one line, exit 2."""


def source_hash() -> str:
    h = hashlib.sha256()
    for path in SOURCES:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def _key() -> bytes:
    from specs.userkey import key
    return key()


def base_dir() -> Path:
    """$KRAFT_VERIFY_CACHE, else ~/.cache/kraft-verify (an absolute path either way)."""
    return Path(os.environ.get("KRAFT_VERIFY_CACHE") or Path.home() / ".cache" / "kraft-verify").absolute()


def cache_dir(key: Optional[bytes] = None) -> Path:
    """base_dir()/kernel-<hash of the sources>-<the key's fingerprint>."""
    fingerprint = hmac.new(key or _key(), b"kraft-verify kernel cache", hashlib.sha256).hexdigest()[:8]
    return base_dir() / f"kernel-{source_hash()}-{fingerprint}"


def refuse_unsafe(where: Path) -> None:
    """CacheRefused unless `where` is the user's own and only the user can write it, and each
    directory above it is the user's or root's and writable by no one else (a sticky one, as
    /tmp, aside: others cannot move what is in it)."""
    uid = os.geteuid()
    where = where.resolve()
    for p in (where, *where.parents):
        st = os.stat(p)
        own = st.st_uid == uid
        if p == where and not own:
            raise CacheRefused(f"the kernel cache {where} belongs to uid {st.st_uid}, not to this user: compiled "
                               f"code is loaded from it; set KRAFT_VERIFY_CACHE to a directory of your own")
        if not own and st.st_uid != 0:
            raise CacheRefused(f"the kernel cache {where} lies under {p}, which belongs to uid {st.st_uid}: "
                               f"set KRAFT_VERIFY_CACHE to a directory of your own")
        if st.st_mode & 0o022 and not (p != where and st.st_mode & stat.S_ISVTX):
            raise CacheRefused(f"the kernel cache {where} can be written by other users ({p} is mode "
                               f"{stat.S_IMODE(st.st_mode):o}): compiled code is loaded from it; "
                               f"run chmod go-w {p} or set KRAFT_VERIFY_CACHE")


def _tag(key: bytes, place: str, payload: bytes) -> bytes:
    return hmac.new(key, place.encode() + b"\0" + payload, hashlib.sha256).digest()


def seal(key: bytes, place: str, payload: bytes) -> bytes:
    """The bytes of a sealed entry at `place` (its path under the cache)."""
    return MAGIC + _tag(key, place, payload) + payload


def unseal(key: bytes, place: str, raw: bytes) -> Optional[bytes]:
    """The payload of a sealed entry, or None when the bytes are not an entry sealed there
    with this key (truncated, planted, moved, another key's)."""
    if not raw.startswith(MAGIC) or len(raw) < len(MAGIC) + TAG:
        return None
    tag, payload = raw[len(MAGIC):len(MAGIC) + TAG], raw[len(MAGIC) + TAG:]
    return payload if hmac.compare_digest(tag, _tag(key, place, payload)) else None


def _sealed_file_class(root: Path, key: bytes):
    """numba's IndexDataCacheFile, sealing what it writes and unpickling only what unseals
    (for a cache under `root`; any other numba cache is left as numba keeps it)."""
    from numba.core import caching

    class SealedCacheFile(caching.IndexDataCacheFile):
        def _ours(self) -> bool:
            return Path(self._cache_path).resolve().is_relative_to(root)

        def _read(self, path: str) -> Optional[bytes]:
            try:
                with open(path, "rb") as fh:
                    raw = fh.read()
            except FileNotFoundError:
                return None
            return unseal(key, os.path.relpath(path, root), raw)

        def _write(self, path: str, payload: bytes) -> None:
            # a cache entry the disk refuses (full, a file size limit, read-only) is not kept:
            # the run goes on with the code compiled in memory, and a later run compiles again
            try:
                with self._open_for_write(path) as fh:
                    fh.write(seal(key, os.path.relpath(path, root), payload))
            except OSError:
                pass

        def _load_index(self):
            if not self._ours():
                return super()._load_index()
            payload = self._read(self._index_path)
            if payload is None:
                return {}
            stream = io.BytesIO(payload)
            if pickle.load(stream) != self._version:
                return {}
            stamp, overloads = pickle.loads(stream.read())
            return overloads if stamp == self._source_stamp else {}

        def _save_index(self, overloads):
            if not self._ours():
                return super()._save_index(overloads)
            self._write(self._index_path, pickle.dumps(self._version, protocol=-1)
                        + self._dump((self._source_stamp, overloads)))

        def _load_data(self, name):
            if not self._ours():
                return super()._load_data(name)
            payload = self._read(self._data_path(name))
            if payload is None:
                raise FileNotFoundError(self._data_path(name))      # load(): compile afresh
            return pickle.loads(payload)

        def _save_data(self, name, data):
            if not self._ours():
                return super()._save_data(name, data)
            self._write(self._data_path(name), self._dump(data))

    return SealedCacheFile


def install() -> Path:
    """Make and check this kernel's cache directory, point numba's cache at it and have numba
    read and write it sealed."""
    from numba.core import caching, config
    base, key = base_dir(), _key()          # the key first: its own errors are one line (KeyError_)
    try:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        refuse_unsafe(base)
        where = cache_dir(key)
        where.mkdir(mode=0o700, exist_ok=True)
        refuse_unsafe(where)
    except OSError as exc:
        raise CacheRefused(f"cannot make the kernel cache under {base}: {exc.strerror or exc}") from None
    config.CACHE_DIR = str(where)
    if not getattr(caching.IndexDataCacheFile, "kraft_verify_root", None):
        sealed = _sealed_file_class(where.resolve(), key)
        sealed.kraft_verify_root = where
        caching.IndexDataCacheFile = sealed
        caching.CacheImpl._locator_classes = [_module_locator_class(), *caching.CacheImpl._locator_classes]
    return where


def _module_locator_class():
    """numba's locator for $CACHE_DIR, but a kernel function is kept under its module's name
    (specs.kernel.mechanics/...) where numba uses a hash of its file's absolute directory. The
    cache directory's name already carries a hash of every kernel source, so two checkouts of
    the same sources (a CI runner's new path, a copy of the tree) share one compile instead of
    compiling 20 s each. Any other numba function is placed as numba places it."""
    from numba.core import caching, config
    from specs.kernel.specialise import KERNEL_MODULES

    class ModuleLocator(caching.UserProvidedCacheLocator):
        def __init__(self, py_func, py_file):
            super().__init__(py_func, py_file)
            module = getattr(py_func, "__module__", None) or ""
            if module.startswith(KERNEL_MODULES):
                self._cache_path = os.path.join(config.CACHE_DIR, module)
    return ModuleLocator
