"""The one way the tool writes a file: whole or not at all.

Every report (summary.json, report.md, JUnit, ITF, scenarios, graphs, checkpoints) goes
through `write_atomic`: the text is written to a temporary file beside the target, flushed to
disk, then renamed over it, so a reader (a CI job, a resumed run) never sees half a file, and
a full disk leaves the old file or none, never a cut-off one under its final name.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Union

PathLike = Union[str, "os.PathLike[str]"]


def write_atomic(path: PathLike, text: Union[str, bytes]) -> None:
    """`text` as UTF-8 with LF line ends, or bytes as they are (spark-check's part files)."""
    path = Path(path)
    # the temporary name is the target's, cut short: a long but valid name must not overflow it
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:64]}.", suffix=".tmp", dir=path.parent or ".")
    try:
        binary = isinstance(text, bytes)
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")) as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
