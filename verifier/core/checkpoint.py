"""A checkpoint directory: the rules `check` and `spark-check` share.

    DIR/manifest.json     what run this is (its identity), how far it got, and the checksum
                          of the data it keeps (replaced atomically, after the data is on disk)
    DIR/...               the engine's own data files

- a directory holding another config's run is refused (exit 2), and so is one holding this
  config's run without `--resume`;
- a manifest that cannot be read, or is not kraft-verify's, is refused;
- a fresh run clears what an earlier run left, so a directory with no manifest is used only
  when it is empty or carries the mark (DIR/.kraft-verify-checkpoint) of a run that died
  before its first manifest: never the user's own files;
- data whose size or checksum is not the manifest's (a torn or altered write) is never
  trusted: the engine recomputes it;
- the manifest is signed with the user's key (verifier/core/signing.py), kept outside every
  checkpoint location: a resumed run checks the signature before it trusts anything, so a
  consistent forgery by someone who can write to the directory but lacks the key is refused
  (`Unsigned`).
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any, Optional

from verifier.core.files import write_atomic

MANIFEST = "manifest.json"
MARK = ".kraft-verify-checkpoint"    # written when a run claims the directory: its files are ours


def identity_of(model, properties, options) -> dict:
    """What a checkpoint must have been made by to be resumed: the model (preset, mutant, the
    whole config), symmetry, deadlock checking, whether the run stops at the first violation,
    and the properties checked. One definition for the one-process search and Spark."""
    from specs import config_summary
    cfg = model.cfg
    return {"what": cfg.preset + (f" --mutant {cfg.mutant}" if cfg.mutant else ""), "config": config_summary(cfg),
            "symmetry": model.symmetric, "deadlock": options.check_deadlock, "keep_going": options.keep_going,
            "invariants": [inv.name for inv in properties]}


class CheckpointError(Exception):
    """The directory cannot be used (not writable, another run's, malformed): exit 2."""


class Unsigned(CheckpointError):
    """The manifest's signature is not this user's key's: written by someone else, or edited."""



def digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class LocalFiles:
    """A checkpoint directory on this machine's disk (`check`, and `spark-check` on a path)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.where = str(root)
        try:      # exists() raises on a name longer than the file system allows (ENAMETOOLONG)
            if self.root.exists() and not self.root.is_dir():
                raise CheckpointError(f"--checkpoint-dir {root}: not a directory")
        except OSError as exc:
            raise CheckpointError(f"--checkpoint-dir {root}: cannot be used ({exc.strerror})") from None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = self.root / ".write-test"
            probe.write_text("ok")
            probe.unlink()
        except OSError as exc:
            raise CheckpointError(f"--checkpoint-dir {root}: cannot write there ({exc.strerror})") from None

    def exists(self, name: str) -> bool:
        return (self.root / name).exists()

    def is_file(self, name: str) -> bool:
        return (self.root / name).is_file()

    def read(self, name: str) -> bytes:
        return (self.root / name).read_bytes()

    def write(self, name: str, data: bytes) -> None:
        write_atomic(self.root / name, data)

    def listdir(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir())

    def remove(self, name: str) -> None:
        path = self.root / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


class CheckpointDir:
    def __init__(self, root, identity: dict[str, Any], kind: str, version: int):
        """`root` is a path, or a files object of the same shape as LocalFiles (spark-check's
        Hadoop file systems); `identity` says which run this is (config, switches,
        invariants); `kind` which engine writes it: a manifest of another identity or kind is
        refused rather than resumed."""
        self.files = LocalFiles(root) if isinstance(root, (str, Path)) else root
        self.root = getattr(self.files, "root", None)
        self.where = self.files.where
        self.identity, self.kind, self.version = identity, kind, version

    def load(self, verify: bool = True) -> Optional[dict]:
        """The manifest of this run, None if there is none; refuses another run's, and (with
        `verify`) one whose signature is not the user's key's (Unsigned)."""
        files, where = self.files, self.where
        if not files.exists(MANIFEST):
            return None
        if not files.is_file(MANIFEST):       # a FIFO would hang the read
            raise CheckpointError(f"--checkpoint-dir {where}: unreadable manifest (not a regular file)")
        try:
            data = json.loads(files.read(MANIFEST))
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"--checkpoint-dir {where}: unreadable manifest ({exc})") from None
        except RecursionError:
            raise CheckpointError(f"--checkpoint-dir {where}: unreadable manifest (nested too deeply)") from None
        kind = data.get("kind", "spark-check") if isinstance(data, dict) else None
        older = isinstance(data, dict) and kind == self.kind and type(data.get("version")) is int \
            and 0 < data["version"] < self.version
        if older:          # its files are another format's (spark-check's links, say): not read as ours
            raise CheckpointError(f"--checkpoint-dir {where}: a {self.kind} checkpoint of an earlier kraft-verify "
                                  f"(format {data['version']}; this one reads {self.version}): it cannot be "
                                  f"resumed by this one; use a fresh directory")
        if not isinstance(data, dict) or data.get("version") != self.version or kind != self.kind:
            raise CheckpointError(f"--checkpoint-dir {where}: not a kraft-verify {self.kind} checkpoint")
        if data.get("identity") != self.identity:
            what = data["identity"].get("what", "?") if isinstance(data.get("identity"), dict) else "?"
            raise CheckpointError(f"--checkpoint-dir {where}: holds a run of another config "
                                  f"({what}); use a fresh directory")
        if verify:
            from verifier.core.signing import KeyError_, signed
            try:
                ok = signed({k: v for k, v in data.items() if k != "mac"}, data.get("mac"))
            except KeyError_ as exc:
                raise CheckpointError(str(exc)) from None
            if not ok:
                raise Unsigned(f"--checkpoint-dir {where}: its manifest is not signed with this user's key "
                               f"(written by another user or machine, or edited): resume where the key "
                               f"(verifier/core/signing.py) is, or use a fresh directory")
        return data

    def refusal(self, resume: bool) -> Optional[dict]:
        """What `claim` refuses, raised without writing anything; else the manifest found.
        spark-check asks it of a plain path before it starts Spark: a wrong directory costs
        a second, not a JVM's start."""
        manifest = self.load(verify=resume)
        if manifest is not None and not resume:
            raise CheckpointError(f"--checkpoint-dir {self.where} holds a run of this config: "
                                  "pass --resume to continue it, or use a fresh directory")
        if manifest is None and not self.files.exists(MARK):
            others = self.files.listdir()
            if others:
                raise CheckpointError(f"--checkpoint-dir {self.where}: not empty and not a kraft-verify checkpoint "
                                      f"(it holds {others[0]!r}); give a new or empty directory")
        return manifest

    def claim(self, resume: bool) -> Optional[dict]:
        """The manifest to resume from: refuses this config's run without `resume`. A fresh
        run clears what an earlier run left, so a directory with neither a manifest nor the
        mark of an earlier run that died before its first one is refused unless it is empty:
        a wrong --checkpoint-dir must never cost the user's files."""
        manifest = self.refusal(resume)
        from verifier.core.signing import KeyError_, key
        try:
            key()                   # a key that cannot be had is refused before the run, not at its first save
        except KeyError_ as exc:
            raise CheckpointError(str(exc)) from None
        try:
            self.files.write(MARK, f"kraft-verify {self.kind} checkpoint\n".encode())
        except OSError as exc:
            raise CheckpointError(f"--checkpoint-dir {self.where}: cannot write there ({exc.strerror})") from None
        return manifest if resume else None

    def save(self, data: dict) -> None:
        """Replace the manifest whole (after the data files it names are on disk), signed."""
        from verifier.core.signing import KeyError_, mac
        data = dict(data, version=self.version, kind=self.kind, identity=self.identity)
        try:
            data["mac"] = mac(data)
        except KeyError_ as exc:
            raise CheckpointError(str(exc)) from None
        self.files.write(MANIFEST, json.dumps(data, indent=1).encode())

    def forget(self, *names: str) -> None:
        """Remove files and directories of an earlier run (a run without --resume)."""
        for name in names:
            self.files.remove(name)
