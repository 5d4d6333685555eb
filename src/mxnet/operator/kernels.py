"""The kernel table: faster device-specific implementations of registered operators.

An operator's ``forward``/``backward`` is written once against ``ctx.xp`` and serves
every device. A device may register a kernel that the runner calls instead:

    register_kernel("Pooling", "gpu", fn)                  # forward
    register_kernel("Pooling", "gpu", fn_bwd, backward=True)

``fn`` has the signature of the operator's own method in the write-into-outputs form:
``fn(ctx, p, inputs, aux, out=None)`` or ``fn(ctx, p, out_grads, inputs, outputs, aux,
in_grad=None)``, and returns the list of results (the ``out``/``in_grad`` arrays it
wrote, or fresh ones). A kernel that cannot handle a call (a parameter or dtype it
does not support) returns ``NotImplemented`` and the operator's ``xp`` body runs.
This is where oneDNN (CPU), cuDNN/cuBLAS (GPU) and sparse storage paths plug in.

Fused kernels: ``register_fusion(first, second, device, fn, accepts)`` says that the
pair ``first -> second`` (``second`` reading ``first``'s only output) can run as one
call ``fn(ctx, p_first, inputs_of_first, aux_of_first, out=[second's output])`` when
``accepts(p_first, p_second)``, e.g. Convolution then Activation(relu) as one oneDNN
primitive with a post-op. The executor's fusion pass (executor/fusion.py) uses them
where the intermediate value is needed by nothing else; ``fn`` may return
NotImplemented, and then the two operators run as usual.
"""
import numpy as np

from ..base import MXNetError
from .registry import all_ops

__all__ = ["register_kernel", "lookup_kernel", "registered_kernels", "DEVICES",
           "register_fusion", "lookup_fusion", "OutputBuffers"]

DEVICES = ("cpu", "gpu")
_TABLE = {}     # (operator name, device, is_backward) -> fn
_FUSIONS = {}   # (first operator name, second operator name, device) -> (fn, accepts)


def _canonical(op_name):
    op = all_ops().get(op_name)
    return op.name if op is not None else op_name


def register_kernel(op_name, device, fn, backward=False):
    """Use ``fn`` for ``op_name``'s forward (or backward) on ``device`` ('cpu'/'gpu').
    An alias registers the kernel for the operator it names; a later registration
    replaces an earlier one."""
    if device not in DEVICES:
        raise MXNetError(f"register_kernel: device must be one of {DEVICES}, got {device!r}")
    if not callable(fn):
        raise MXNetError(f"register_kernel: kernel for {op_name} is not callable")
    _TABLE[(_canonical(op_name), device, bool(backward))] = fn
    return fn


def lookup_kernel(op, device, backward=False):
    """The kernel registered for operator ``op`` (an Op or its name) on ``device``,
    or None."""
    if not _TABLE:
        return None
    name = op if isinstance(op, str) else op.name
    return _TABLE.get((_canonical(name) if isinstance(op, str) else name, device,
                       bool(backward)))


def registered_kernels():
    """{(operator name, device, is_backward): fn} for every registered kernel."""
    return dict(_TABLE)


def register_fusion(first, second, device, fn, accepts=None):
    """Run ``second(first(...))`` as ``fn`` on ``device`` where ``accepts(p_first,
    p_second)`` (None: always); see the module docstring."""
    if device not in DEVICES:
        raise MXNetError(f"register_fusion: device must be one of {DEVICES}, got {device!r}")
    if not callable(fn):
        raise MXNetError(f"register_fusion: kernel for {first}+{second} is not callable")
    _FUSIONS[(_canonical(first), _canonical(second), device)] = (fn, accepts)
    return fn


def lookup_fusion(first, second, device, p_first=None, p_second=None):
    """The fused kernel for operators ``first`` then ``second`` (Op objects) on
    ``device`` whose ``accepts`` takes these parameters, or None."""
    if not _FUSIONS:
        return None
    entry = _FUSIONS.get((first.name, second.name, device))
    if entry is None:
        return None
    fn, accepts = entry
    return fn if accepts is None or accepts(p_first, p_second) else None


class OutputBuffers:
    """The destination arrays of a device kernel's call: each given ``out`` / ``in_grad``
    array when the kernel can write it directly (an ``xp`` array of the wanted dtype
    and shape, C-contiguous, not overlapping an input other than ``allow_alias``), else
    a fresh array that ``done()`` copies into the given one.

    ``overlaps(a, b)`` says whether two arrays share memory; ``dtype`` is the default
    of ``get`` for kernels of a single dtype.
    """

    def __init__(self, xp, given, n, inputs, overlaps, dtype=None):
        self.xp, self.overlaps, self.dtype = xp, overlaps, dtype
        self.given = list(given) if given is not None else [None] * n
        self.inputs = [a for a in inputs if a is not None]
        self.arrays = [None] * n

    def get(self, i, shape, dtype=None, allow_alias=None):
        """The array to write output ``i`` (of ``shape`` and ``dtype``) into."""
        dtype = np.dtype(self.dtype if dtype is None else dtype)
        g = self.given[i]
        if (g is not None and isinstance(g, self.xp.ndarray) and g.dtype == dtype
                and g.flags.c_contiguous and tuple(g.shape) == tuple(shape)
                and not any(self.overlaps(g, a) and a is not allow_alias
                            for a in self.inputs)):
            a = g
        else:
            a = self.xp.empty(shape, dtype)
        self.arrays[i] = a
        return a

    def done(self):
        """The results, one per output: the given arrays (filled) where there were any."""
        res = []
        for g, a in zip(self.given, self.arrays):
            if g is not None and a is not None and a is not g:
                g[...] = a
                a = g
            res.append(a)
        return res
