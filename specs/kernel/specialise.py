"""One compile of each kernel function, whatever constants its callers pass.

A jitted function called from another with a constant argument (`successors(..., BOUNDED, -1,
...)`, `event(..., E_FENCE, ...)`) is typed by numba with a literal type, `Literal[int](0)`, and
compiled once per distinct constant: `event` was compiled 15 times and `successors`, `effect`,
`apply` and `_emit` twice each, about half of a cold compile (issue 57 measured 28-43 s). The
kernel's functions branch on such arguments at run time anyway, so here a kernel function is
typed with its arguments' plain types: one specialisation serves every caller. Installed before
any kernel module compiles (specs/kernel/__init__.py); numba functions outside the kernel are
left as numba types them.
"""
from __future__ import annotations

KERNEL_MODULES = ("specs.kernel", "verifier.engines.kernel", "verifier.core.rowhash", "verifier.core.rowgraph", "spark.")


def install() -> None:
    from numba.core import dispatcher, types
    plain = dispatcher.Dispatcher.get_call_template
    if getattr(plain, "kraft_verify", False):
        return

    def get_call_template(self, args, kws):
        if getattr(self.py_func, "__module__", "").startswith(KERNEL_MODULES):
            args = tuple(types.unliteral(a) for a in args)
            kws = {k: types.unliteral(v) for k, v in kws.items()}
        return plain(self, args, kws)
    get_call_template.kraft_verify = True
    dispatcher.Dispatcher.get_call_template = get_call_template
