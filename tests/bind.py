"""The tests bind the model, the properties and the engines as the command line does
(verifier/cli/binding.py): these shorthands hand the replay engine every safety property."""
from __future__ import annotations

import invariants as I
from verifier.engines import replay as R


def run_scenario(data: dict, path: str = "<scenario>", **kw):
    return R.run_scenario(data, path, properties=I.REGISTRY, **kw)


def run_file(path: str, **kw):
    return R.run_file(path, properties=I.REGISTRY, **kw)
