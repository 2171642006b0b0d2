"""Atomic operations on one field of a 2-d uint64 array, for the threads' shared visited set
(visited.claim): several threads insert into one table at once, so a slot is taken by
compare-and-swap, and a field another thread writes is read with acquire order.

Each is a plain Python function (what runs when the kernel is interpreted, under one lock, so
interpreted threads still see one order) with an LLVM implementation for compiled code
(numba has no atomics of its own on the CPU).
"""
from __future__ import annotations

import threading

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

_LOCK = threading.Lock()


def cas(table, slot, col, expected, new):
    """table[slot, col] := new if it holds `expected`; the value it held, either way."""
    with _LOCK:
        held = table[slot, col]
        if held == expected:
            table[slot, col] = new
        return held


def load_acquire(table, slot, col):
    """table[slot, col], read after every write the writer made before its store_release."""
    return table[slot, col]


def store_release(table, slot, col, value):
    """table[slot, col] := value, after every write this thread made before it."""
    table[slot, col] = value


def _pointer(context, builder, sig, args):
    aryty = sig.args[0]
    ary = context.make_array(aryty)(context, builder, args[0])
    return cgutils.get_item_pointer(context, builder, aryty, ary, [args[1], args[2]])


def _typed(table, slot, col) -> bool:
    return (isinstance(table, types.Array) and table.dtype == types.uint64 and table.ndim == 2
            and isinstance(slot, types.Integer) and isinstance(col, types.Integer))


@intrinsic
def _cas(typingctx, table, slot, col, expected, new):
    if not _typed(table, slot, col) or expected != types.uint64 or new != types.uint64:
        return None

    def codegen(context, builder, sig, args):
        pair = builder.cmpxchg(_pointer(context, builder, sig, args), args[3], args[4], "seq_cst", "seq_cst")
        return builder.extract_value(pair, 0)
    return types.uint64(table, slot, col, expected, new), codegen


@intrinsic
def _load_acquire(typingctx, table, slot, col):
    if not _typed(table, slot, col):
        return None

    def codegen(context, builder, sig, args):
        return builder.load_atomic(_pointer(context, builder, sig, args), "acquire", 8)
    return types.uint64(table, slot, col), codegen


@intrinsic
def _store_release(typingctx, table, slot, col, value):
    if not _typed(table, slot, col) or value != types.uint64:
        return None

    def codegen(context, builder, sig, args):
        builder.store_atomic(args[3], _pointer(context, builder, sig, args), "release", 8)
        return context.get_dummy_value()
    return types.void(table, slot, col, value), codegen


_JIT = {"cache": True, "nogil": True, "_nrt": False}


@overload(cas, jit_options=_JIT)
def _cas_compiled(table, slot, col, expected, new):
    return lambda table, slot, col, expected, new: _cas(table, slot, col, expected, new)


@overload(load_acquire, jit_options=_JIT)
def _load_compiled(table, slot, col):
    return lambda table, slot, col: _load_acquire(table, slot, col)


@overload(store_release, jit_options=_JIT)
def _store_compiled(table, slot, col, value):
    return lambda table, slot, col, value: _store_release(table, slot, col, value)

