"""A key outside every checkpoint location, and the MACs made with it.

A checkpoint or cache proves to itself only that it is whole (each file's sha256 in a
manifest); anyone who can write to its directory (a co-tenant of a shared disk, every user of
an HDFS path or an S3 bucket) could write a consistent forgery with checksums that match. So
the manifest is signed (HMAC-SHA256) with the user's key (specs/userkey.py: in the user's own
configuration, created on first use, readable by its owner only).
What is left to a forger who also holds the key: docs/spark.md, "What a checkpoint proves".
"""
from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from specs import KeyError_, key, key_path  # noqa: F401  (where the key is kept: specs/userkey.py)


def mac(data: Any) -> str:
    """HMAC-SHA256 of `data` (JSON, keys sorted) with the user's key."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
    return hmac.new(key(), text, hashlib.sha256).hexdigest()


def signed(data: Any, tag: Any) -> bool:
    return isinstance(tag, str) and hmac.compare_digest(mac(data), tag)
