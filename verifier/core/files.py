"""The one way the tool writes a file: whole or not at all, with the user's umask.

Every report (summary.json, report.md, JUnit, ITF, scenarios, graphs, checkpoints) goes
through `write_atomic`: the text is written to a temporary file beside the target, flushed to
disk, then renamed over it, so a reader (a CI job, a resumed run) never sees half a file, and
a full disk leaves the old file or none, never a cut-off one under its final name. The file
gets the permissions any other tool's output gets (0666 less the umask), not the 0600 of a
temporary file: a CI job running as another user can read the reports.

A write the environment refuses (a full disk or quota, a file too large for `ulimit -f`, a
read-only file system, a name too long, no permission) raises `WriteError`, whose text is one
line naming the path and the reason; the command line reports it and exits 2, never 0 or 1
(docs: README, "Exit codes").
"""
from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path
from typing import Union

PathLike = Union[str, "os.PathLike[str]"]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


UMASK = _umask()
try:          # a write beyond `ulimit -f` is EFBIG, not a signal that kills the run without a report
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
except (ValueError, OSError, AttributeError):        # not the main thread, or no such signal here
    pass


class WriteError(OSError):
    """The environment refused a write; str() is one line: the path and the system's reason."""

    def __init__(self, path: PathLike, exc: OSError):
        super().__init__(exc.errno, f"cannot write {path}: {exc.strerror or exc}")

    def __str__(self) -> str:
        return self.strerror


def json_text(data, indent: int = 2) -> str:
    """JSON that every reader takes: a float that is not finite (a budget of inf, a rate over
    zero seconds) is written as null, never as Python's `Infinity` or `NaN`."""
    import json
    import math

    def clean(x):
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x
    return json.dumps(clean(data), indent=indent, allow_nan=False) + "\n"


def write_atomic(path: PathLike, text: Union[str, bytes]) -> None:
    """`text` as UTF-8 with LF line ends, or bytes as they are (spark-check's part files)."""
    path = Path(path)
    tmp = None
    try:
        # the temporary name is the target's, cut short: a long but valid name must not overflow it
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:64]}.", suffix=".tmp", dir=path.parent or ".")
        os.fchmod(fd, 0o666 & ~UMASK)
        binary = isinstance(text, bytes)
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")) as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        _discard(tmp)
        raise WriteError(path, exc) from None
    except BaseException:
        _discard(tmp)
        raise


def _discard(tmp) -> None:
    if tmp is not None:
        try:
            Path(tmp).unlink(missing_ok=True)
        except OSError:
            pass
