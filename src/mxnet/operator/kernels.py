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

A backward kernel with the attribute ``accumulates = True`` also receives, in a
prepared executor, the destinations whose req is 'add' (``ctx.req`` says which) and
adds its result into them itself (e.g. cuDNN's beta = 1), or returns a fresh array for
such an output (``OutputBuffers.get_accumulating``) that the runner then adds. A
fallback chained behind such a kernel must not inherit the attribute.

A kernel with the attribute ``bfloat16 = True`` is also given calls whose arrays are
bfloat16 (it may decline them with NotImplemented); other kernels never see bfloat16
arrays: the runner computes such calls in float32 (operator/bfloat16.py).

Fused kernels: ``register_fusion(first, second, device, fn, accepts)`` says that the
pair ``first -> second`` (``second`` reading ``first``'s only output) can run as one
call ``fn(ctx, p_first, inputs_of_first, aux_of_first, out=[second's output])`` when
``accepts(p_first, p_second)``, e.g. Convolution then Activation(relu) as one oneDNN
primitive with a post-op. The executor's fusion pass (executor/fusion.py) uses them
where the intermediate value is needed by nothing else; ``fn`` may return
NotImplemented, and then the two operators run as usual.
"""
import functools
import numpy as np

from ..base import MXNetError
from .registry import all_ops

__all__ = ["register_kernel", "lookup_kernel", "registered_kernels", "DEVICES",
           "register_fusion", "lookup_fusion", "register_backward_fusion",
           "lookup_backward_fusion", "OutputBuffers", "exact_alias", "same_memory",
           "address_span"]

DEVICES = ("cpu", "gpu")
_TABLE = {}     # (operator name, device, is_backward) -> fn
_FUSIONS = {}   # (first operator name, second operator name, device) -> (fn, accepts)
_BACKWARD_FUSIONS = {}      # the same, for the pair's backward (executor/backward_fusion)


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


def _register_pair(table, what, first, second, device, fn, accepts):
    if device not in DEVICES:
        raise MXNetError(f"{what}: device must be one of {DEVICES}, got {device!r}")
    if not callable(fn):
        raise MXNetError(f"{what}: kernel for {first}+{second} is not callable")
    table[(_canonical(first), _canonical(second), device)] = (fn, accepts)
    return fn


def _lookup_pair(table, first, second, device, p_first, p_second):
    entry = table.get((first.name, second.name, device)) if table else None
    if entry is None:
        return None
    fn, accepts = entry
    return fn if accepts is None or accepts(p_first, p_second) else None


def register_fusion(first, second, device, fn, accepts=None):
    """Run ``second(first(...))`` as ``fn`` on ``device`` where ``accepts(p_first,
    p_second)`` (None: always); see the module docstring."""
    return _register_pair(_FUSIONS, "register_fusion", first, second, device, fn, accepts)


def register_backward_fusion(first, second, device, fn, accepts=None):
    """Run the backward of ``second(first(...))`` as ``fn`` on ``device`` where
    ``accepts(p_first, p_second)``: ``fn`` is called as ``first``'s backward kernel with
    ``second``'s output gradient in place of ``first``'s (executor/backward_fusion.py)."""
    return _register_pair(_BACKWARD_FUSIONS, "register_backward_fusion", first, second,
                          device, fn, accepts)


def lookup_fusion(first, second, device, p_first=None, p_second=None):
    """The fused kernel for operators ``first`` then ``second`` (Op objects) on
    ``device`` whose ``accepts`` takes these parameters, or None."""
    return _lookup_pair(_FUSIONS, first, second, device, p_first, p_second)


def lookup_backward_fusion(first, second, device, p_first=None, p_second=None):
    """The kernel registered with register_backward_fusion for ``first`` then
    ``second`` (Op objects) on ``device`` whose ``accepts`` takes these parameters, or
    None."""
    return _lookup_pair(_BACKWARD_FUSIONS, first, second, device, p_first, p_second)


@functools.lru_cache(maxsize=4096)
def _inferred(op, p, shapes):
    _, outs, _ = op.infer_shape(p, [list(s) for s in shapes])
    return tuple(tuple(o) for o in outs)


def output_shapes(op, p, shapes):
    """The output shapes (tuples) of a call of ``op`` with parameters ``p`` on inputs of
    ``shapes``, from the operator's own shape inference (its errors included). A layer
    calls with the same parameters and shapes at every step, so a device kernel asking
    this per call pays one cache lookup instead of a shape inference."""
    return _inferred(op, p, tuple(tuple(s) for s in shapes))


def address_span(a):
    """(lowest, past-the-highest) address that array ``a`` (NumPy or CuPy) may touch:
    its strided extent, not just nbytes from its first element (a strided or reversed
    view reaches further). Two arrays whose spans are disjoint share no memory."""
    start = data_start(a)
    if a.flags.c_contiguous or a.size == 0:
        return start, start + a.nbytes
    lo = hi = start
    for d, st in zip(a.shape, a.strides):
        if st > 0:
            hi += st * (d - 1)
        else:
            lo += st * (d - 1)
    return lo, hi + a.itemsize


def data_start(a):
    """The address of an array's first element (NumPy or CuPy)."""
    if isinstance(a, np.ndarray):     # (a.data, a memoryview, refuses bfloat16)
        return a.__array_interface__["data"][0]
    return a.data.ptr


def same_memory(a, b):
    """Whether two arrays are the same view of the same memory (a NumPy scalar, which
    0-d ufunc results are, owns its value: only itself)."""
    if isinstance(a, np.generic) or isinstance(b, np.generic):
        return a is b
    return (a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides
            and data_start(a) == data_start(b))


def exact_alias(dst, arrays):
    """The array of ``arrays`` that is the very same view of memory as ``dst`` (start,
    shape, strides, dtype), else ``dst``. An executor's in-place plan hands an operator
    its output as a second array object over an input's buffer; CuPy's ufuncs copy an
    input that shares memory with ``out`` unless they are one object, so passing the
    input object itself as ``out`` saves a full copy per in-place elementwise call."""
    if dst is None:
        return dst
    for a in arrays:
        if a is dst or (a is not None and hasattr(a, "strides") and same_memory(a, dst)):
            return a
    return dst


class OutputBuffers:
    """The destination arrays of a device kernel's call: each given ``out`` / ``in_grad``
    array when the kernel can write it directly (an ``xp`` array of the wanted dtype
    and shape, C-contiguous, not overlapping an input other than ``allow_alias``), else
    a fresh array that ``done()`` copies into the given one.

    Two arrays may share memory when their address ranges (``address_span``: the
    strided extent, NumPy's ``may_share_memory`` rule) meet; each input's range is read
    once per call. ``dtype`` is the default of ``get`` for kernels of a single dtype.
    """

    def __init__(self, xp, given, n, inputs, dtype=None):
        self.xp, self.dtype = xp, dtype
        # an ``out=`` may name the visible outputs only (BatchNorm's, LayerNorm's):
        # the hidden ones then have no destination
        self.given = list(given) if given is not None else []
        self.given += [None] * (n - len(self.given))
        self.inputs = [a for a in inputs if a is not None]
        self.arrays = [None] * n
        self._spans = None              # the inputs' address ranges, read on first need

    def get(self, i, shape, dtype=None, allow_alias=None):
        """The array to write output ``i`` (of ``shape`` and ``dtype``) into.
        ``allow_alias``: an input the kernel may overwrite in place; the destination
        may be that input's exact memory (same start, shape and dtype), no other
        overlap is allowed."""
        dtype = np.dtype(self.dtype if dtype is None else dtype)
        g = self.given[i]
        if self._direct(g, shape, dtype, allow_alias):
            a = g
        else:
            a = self.xp.empty(shape, dtype)
        self.arrays[i] = a
        return a

    def get_accumulating(self, i, shape, dtype=None):
        """(array, accumulate) for an output whose destination's req is 'add' (a
        kernel marked ``accumulates``): the destination itself and True where the
        kernel can add into it (cuDNN's beta = 1), else a fresh array and False, with
        the destination dropped so that ``done()`` returns the fresh result for the
        runner to add."""
        dtype = np.dtype(self.dtype if dtype is None else dtype)
        g = self.given[i]
        if self._direct(g, shape, dtype, None):
            self.arrays[i] = g
            return g, True
        self.given[i] = None
        a = self.arrays[i] = self.xp.empty(shape, dtype)
        return a, False

    def _direct(self, g, shape, dtype, allow_alias):
        if not (g is not None and isinstance(g, self.xp.ndarray) and g.dtype == dtype
                and g.flags.c_contiguous and tuple(g.shape) == tuple(shape)):
            return False
        if g.__class__ is np.ndarray:
            # NumPy's bounds test is the same rule at a tenth of address_span's cost
            for a in self.inputs:
                if np.may_share_memory(g, a) and \
                        not (a is allow_alias and same_memory(g, a)):
                    return False
            return True
        if self._spans is None:
            self._spans = [address_span(a) for a in self.inputs]
        s0, e0 = address_span(g)
        for a, (s1, e1) in zip(self.inputs, self._spans):
            if s0 < e1 and s1 < e0 and not (a is allow_alias and same_memory(g, a)):
                return False
        return True

    def done(self):
        """The results, one per output: the given arrays (filled) where there were any."""
        res = []
        for g, a in zip(self.given, self.arrays):
            if g is not None and a is not None and a is not g:
                g[...] = a
                a = g
            res.append(a)
        return res
