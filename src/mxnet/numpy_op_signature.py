"""The ``mx.np``/``mx.npx`` function behind a registered ``_np_*``/``_npx_*`` operator
name (MXNet keeps these aligned so a builtin operator's signature is its front end's)."""

__all__ = []


def _get_builtin_op(op_name):
    """``mx.np.X`` for ``_np_X``, ``mx.npx.X`` for ``_npx_X``; None for other names."""
    from . import numpy as mx_np, numpy_extension as mx_npx
    for prefix, module in (("_npx_", mx_npx), ("_np_", mx_np)):
        if op_name.startswith(prefix):
            return getattr(module, op_name[len(prefix):], None)
    return None
