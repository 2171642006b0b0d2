"""Metadata that lags (bound metadata_lag), declared: a leader that stops receiving metadata, the
produce and HWM steps it takes on what it last received, and the delivery that ends it.
docs/protocol.md, "Metadata that lags", states the rules; their guards and effects are
specs/kernel/lag.py's. Declared last, so that the other actions keep their ids and order."""
from __future__ import annotations

from specs.actions.declare import BROKER, DATA, action
from specs.rules import Outside

_NOT_IN_Z3 = Outside("metadata that lags: the z3 encoding's brokers act on the controller's current metadata")


@action(DATA, params=(BROKER,), budget="metadata_lag", fault=True, z3=_NOT_IN_Z3)
class hold_metadata:
    """The running leader is cut off from the controller: it receives no metadata, and its
    AlterPartition, heartbeats and shutdown requests do not arrive. It keeps the partition as it
    is now, its leader epoch and ISR, and acts on that, whatever the controller does next."""


@action(DATA, params=(BROKER,), fair=True, z3=_NOT_IN_Z3)
class deliver_metadata:
    """The held broker receives the controller's metadata (its link heals): from now on it acts
    on the current partition; what it appended at an old leader epoch its next fetch truncates."""


@action(DATA, params=(BROKER,), budget="records", z3=_NOT_IN_Z3)
class stale_produce:
    """acks=all produce to the held leader by a producer whose metadata names it; it appends at
    its view's leader epoch, refused (NOT_ENOUGH_REPLICAS) while its view's ISR is below min ISR."""


@action(DATA, params=(BROKER,), z3=_NOT_IN_Z3)
class stale_advance_hwm:
    """The held leader advances its HWM by the HWM rule on its view's ISR; acks=all requests
    below it complete (acknowledged if its view's ISR is >= min ISR). Followers fetch from it
    only while the controller still names it leader at that epoch."""
