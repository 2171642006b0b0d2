"""Files a co-tenant of a shared checkpoint location could plant: a pickle payload (and other
content that runs code when a careless reader loads it) as check's checkpoint and as a cached
matrix row, each with every checksum its manifest wants. Nothing runs, and the run recomputes
or refuses: it never takes a verdict from them. (spark-check's levels: tests/spark/test_spark.py.)"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil

import pytest

from tests.conftest import run_cli
from tests.verifier.core.test_checkpoint import (SMALL, _counts, _stopped_copy, _summary,  # noqa: F401
                                                 stopped_small, uninterrupted_small)

MARK = "/tmp/kraft-verify-planted-payload-ran"
# one test process: the module's fixtures (SMALL run whole and stopped, one matrix) are made once
pytestmark = pytest.mark.xdist_group("planted")


class Payload:
    def __reduce__(self):
        return os.system, (f"touch {MARK}",)


PLANTS = {
    "a pickle as the columns": ("search.bin", pickle.dumps(Payload())),
    "a pickle as the head": ("search.json", pickle.dumps(Payload())),
    "a YAML object tag": ("search.json", b"!!python/object/apply:os.system ['touch " + MARK.encode() + b"']"),
    "a JSON naming a callable": ("search.json", json.dumps({"format": "kraft-verify check kernel search",
                                                           "version": 4, "@": "os.system",
                                                           "v": [f"touch {MARK}"]}).encode()),
    "an emptied frontier": None,                      # made below from the real data
    "the roots counted again": None,      # issue 37: a key holder's edit made a resume seed its roots again
    "a row's controller out of range": None,
    "an event's outcome forged": None,
}


def _plant(ck, name: str, content: bytes, sign: bool) -> None:
    (ck / name).write_bytes(content)
    manifest = json.loads((ck / "manifest.json").read_text())
    manifest["data"][name] = hashlib.sha256(content).hexdigest()
    manifest.pop("mac", None)
    if sign:                      # a forger with the user's key: the cross-checks are what is left
        from verifier.core.signing import mac
        manifest["mac"] = mac(manifest)
    (ck / "manifest.json").write_text(json.dumps(manifest))


def _head(ck) -> dict:
    return json.loads((ck / "search.json").read_text())


def _column(ck, name: str):
    """(the whole of search.bin as int8s, the slice of it that is column `name`, its dtype)."""
    import numpy as np

    from verifier.engines.kernel.checkpoint import COLUMNS
    head, raw = _head(ck), np.fromfile(ck / "search.bin", dtype=np.uint8)
    widths = {"row": head["width"], "key": None}
    at = 0
    for col, dtype, w in COLUMNS:
        n = head["columns"][col]
        row = 1 if w == 0 else widths.get(w, w)
        if row is None:          # the event key's width: what is left of the file decides it
            rest = len(raw) - at - n * 5 * 8
            row = rest // (n * 8)
        size = n * row * np.dtype(dtype).itemsize
        if col == name:
            return raw, slice(at, at + size), dtype, row
        at += size
    raise KeyError(name)


def _emptied_frontier(ck) -> bytes:
    head = _head(ck)
    head["columns"]["frontier"] = head["columns"]["frontier_fp"] = 0
    return json.dumps(head).encode()


def _roots_again(ck) -> bytes:
    head = _head(ck)
    head["states_per_level"][0] += 1
    head["level_base"] += 1
    return json.dumps(head).encode()


def _bin_edit(ck, name: str, edit) -> bytes:
    import numpy as np
    raw, where, dtype, row = _column(ck, name)
    col = raw[where].view(dtype).reshape(-1, row).copy()
    edit(col)
    out = raw.copy()
    out[where] = col.reshape(-1).view(np.uint8)
    return out.tobytes()


def _controller_out_of_range(ck) -> bytes:
    from specs import make_config
    from specs.kernel.layout import Layout
    assert SMALL == ("--bound", "lossy_crashes=0")
    ctrl = Layout(make_config(bounds={"lossy_crashes": 0})).ctrl

    def edit(rows):
        rows[0, ctrl] = 1 << 20
    return _bin_edit(ck, "frontier", edit)


def _event_forged(ck) -> bytes:
    def edit(vals):                  # the first event is always among those run again
        vals[0, 0] = 0 if vals[0, 0] else 1
    return _bin_edit(ck, "event_vals", edit)


EDITS = {"an emptied frontier": ("search.json", _emptied_frontier),
         "the roots counted again": ("search.json", _roots_again),
         "a row's controller out of range": ("search.bin", _controller_out_of_range),
         "an event's outcome forged": ("search.bin", _event_forged)}


# Every plant with the user's key (the cross-checks catch it), two without (the signature does).
CASES = [(plant, True) for plant in sorted(PLANTS)] + [("a pickle as the columns", False),
                                                        ("an emptied frontier", False)]


@pytest.mark.parametrize("plant,sign", CASES, ids=[f"{p} ({'with' if s else 'without'} the key)" for p, s in CASES])
def test_a_planted_checkpoint_runs_nothing_and_is_recomputed(cli, tmp_path, uninterrupted_small,  # noqa: F811
                                                             stopped_small, plant, sign):  # noqa: F811
    if os.path.exists(MARK):
        os.remove(MARK)
    _stopped_copy(stopped_small, tmp_path / "ck")
    if PLANTS[plant]:
        name, content = PLANTS[plant]
    else:
        name, edit = EDITS[plant]
        content = edit(tmp_path / "ck")
    _plant(tmp_path / "ck", name, content, sign)
    r = cli("check", *SMALL, "-q", "--out", str(tmp_path / "out2"), "--checkpoint-dir", str(tmp_path / "ck"),
            "--resume")
    assert not os.path.exists(MARK), "the planted payload ran"
    assert r.returncode == 0, r.stdout + r.stderr
    assert "starting over" in r.stdout and "resuming from" not in r.stdout
    assert _counts(_summary(tmp_path / "out2")) == uninterrupted_small


def _matrix(cli, out):
    return cli("matrix", "--presets", "pre-kip-966", "--bound-sets", "default", "--brokers", "2", "--out", str(out))


@pytest.fixture(scope="module")
def matrix_made(tmp_path_factory):
    """The matrix every forging test starts from, run once: each forges a copy of its out
    directory (the rows name their files relative to it)."""
    out = tmp_path_factory.mktemp("matrix") / "m"
    assert _matrix(run_cli, out).returncode == 1
    return out


@pytest.mark.parametrize("edit", ["forged holds", "cells removed", "complete as a string", "a pickle as the file",
                                  "signed forged holds"])
def test_a_forged_matrix_row_is_never_reused(cli, tmp_path, matrix_made, edit):
    out = tmp_path / "m"
    shutil.copytree(matrix_made, out)
    cache = out / "matrix.json"
    data = json.loads(cache.read_text())
    row = data["rows"][0]
    if edit.endswith("forged holds"):
        row["cells"] = {name: {"status": "holds", "report": c["report"]} for name, c in row["cells"].items()}
    elif edit == "cells removed":
        row["cells"] = {}
    elif edit == "complete as a string":
        row["complete"] = "no"
    if edit == "signed forged holds":        # with the key, the row's own cross-check: nothing violated, yet a
        from verifier.core.signing import mac     # counterexample scenario for it on disk is no proof: recomputed
        row.pop("mac")
        row["mac"] = mac(row)
    cache.write_bytes(pickle.dumps(Payload()) if edit == "a pickle as the file" else json.dumps(data).encode())
    r = _matrix(cli, out)
    assert not os.path.exists(MARK)
    if edit == "signed forged holds":
        # A forger who holds the user's key can make a consistent row: docs/spark.md says so. The
        # row is then reused (and the matrix, reading it, says holds): this is the documented limit.
        assert "reused" in r.stdout
        return
    assert "reused" not in r.stdout, r.stdout
    assert r.returncode == 1, r.stdout + r.stderr       # the violation is found again, never a green matrix
