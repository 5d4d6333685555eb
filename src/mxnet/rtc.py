"""Runtime-compiled CUDA kernels: ``mx.rtc.CudaModule`` (MXNet 1.x) and the legacy
``mx.rtc(name, inputs, outputs, kernel)`` form of MXNet 0.x.

Source is compiled with NVRTC through CuPy (``cupy.RawModule``). Everything here
needs a CUDA GPU: without one (or for a CPU context) the calls raise an MXNetError
saying so; ``import mxnet`` itself never needs CUDA.

In MXNet 1.9.1 ``mx.rtc`` is a module holding only CudaModule/CudaKernel. Older code
(seed 000: ``mx.rtc('softmax', [('x', x)], [('y', y)], body)``) called ``mx.rtc``
itself, then the ``Rtc`` class. Both work here: this module is callable, and calling
it builds an ``Rtc``.
"""
import re
import sys
import types

import numpy as np

from .base import MXNetError
from .backend import cupy_or_none, check_context
from . import engine
from .ndarray.ndarray import NDArray

__all__ = ["CudaModule", "CudaKernel", "Rtc"]

_NEEDS_GPU = ("mx.rtc requires a GPU context: runtime CUDA compilation (NVRTC through "
              "CuPy) needs a CUDA GPU and CuPy, {why}")

# C type names accepted in kernel signatures -> numpy dtype
_C_TYPES = {
    "float": np.float32, "double": np.float64, "__half": np.float16, "half": np.float16,
    "uint8_t": np.uint8, "unsigned char": np.uint8, "int": np.int32, "int32_t": np.int32,
    "int8_t": np.int8, "char": np.int8, "signed char": np.int8, "int64_t": np.int64,
    "long long": np.int64, "bool": np.bool_,
}


def _cupy():
    """CuPy, or an MXNetError when no GPU can compile/run kernels."""
    cp = cupy_or_none()
    if cp is None:
        raise MXNetError(_NEEDS_GPU.format(why="and none is available on this machine"))
    return cp


def _check_gpu_ctx(ctx):
    if ctx is None or getattr(ctx, "device_type", None) != "gpu":
        raise MXNetError(_NEEDS_GPU.format(why=f"got context {ctx}"))
    check_context(ctx)


def _dims(dims, what):
    """A (x, y, z) launch shape of positive ints (floats with integral values are
    accepted: Python 3's ``/`` in code written for Python 2)."""
    if isinstance(dims, (int, np.integer, float)):
        dims = (dims,)
    out = []
    for d in dims:
        f = float(d)
        if not f.is_integer() or f < 1:
            raise MXNetError(f"mx.rtc: {what} must be positive integers, got {tuple(dims)}")
        out.append(int(f))
    if not 1 <= len(out) <= 3:
        raise MXNetError(f"mx.rtc: {what} must have 1 to 3 entries, got {tuple(dims)}")
    return tuple(out + [1] * (3 - len(out)))


def _launch(fn, arrays, writes, scalars_and_arrays, ctx, grid, block, shared_mem):
    """Run the kernel once its arrays are ready, ordered through the engine like any
    other operation on them. arrays: NDArrays read; writes: NDArrays written;
    scalars_and_arrays: the kernel's arguments (NDArray or numpy scalar) in order."""
    cp = _cupy()

    def run(rctx=None):
        vals = [a._data if isinstance(a, NDArray) else a for a in scalars_and_arrays]
        with cp.cuda.Device(ctx.device_id):
            fn(grid, block, tuple(vals), shared_mem=shared_mem)

    reads = [a._chunk for a in arrays]
    mutate = [a._chunk for a in writes]
    if not any(c.num_pending or c.exception is not None for c in reads + mutate):
        run()           # idle arrays: launch now (the GPU stream keeps it asynchronous)
    else:
        engine.get().push_sync(run, ctx, reads, mutate, 0, "rtc")


class CudaModule:
    """CUDA source compiled at run time; get kernels from it with ``get_kernel``.

    source: CUDA C++ source (kernels declared ``extern "C" __global__``, or listed in
    ``exports`` for C++ names such as template instances). options: NVRTC options,
    e.g. ``("-default-device",)``. Compilation happens here; errors raise MXNetError
    with the compiler log.
    """

    def __init__(self, source, options=(), exports=()):
        cp = _cupy()
        self.source = source
        self.options = (options,) if isinstance(options, str) else tuple(options)
        self.exports = (exports,) if isinstance(exports, str) else tuple(exports)
        try:
            kwargs = {"name_expressions": list(self.exports)} if self.exports else {}
            self._module = cp.RawModule(code=source, options=self.options, **kwargs)
            self._module.compile()
        except Exception as err:
            raise MXNetError(f"mx.rtc: CUDA compilation failed: {err}") from None

    def get_kernel(self, name, signature):
        """The kernel ``name`` with its C signature, e.g.
        ``"const float *x, float *y, int n"``: pointers are NDArrays (const ones are
        only read), other parameters numbers."""
        args = _parse_signature(signature)
        try:
            fn = self._module.get_function(name)
        except Exception as err:
            raise MXNetError(f"mx.rtc: cannot find kernel {name!r} in the module: {err}") \
                from None
        return CudaKernel(fn, name, args)


class CudaKernel:
    """A compiled kernel; ``launch(args, ctx, grid_dims, block_dims, shared_mem=0)``."""

    def __init__(self, fn, name, signature):
        self._fn, self.name, self._sig = fn, name, signature

    def launch(self, args, ctx, grid_dims, block_dims, shared_mem=0):
        """Launch on ctx (a GPU context) with the given grid/block shapes; args in
        signature order (NDArrays on ctx for pointers, numbers otherwise)."""
        _check_gpu_ctx(ctx)
        if len(args) != len(self._sig):
            raise MXNetError(f"mx.rtc: kernel {self.name} takes {len(self._sig)} arguments, "
                             f"got {len(args)}")
        values, reads, writes = [], [], []
        for i, (a, (is_ptr, is_const, dtype)) in enumerate(zip(args, self._sig)):
            if is_ptr:
                if not isinstance(a, NDArray):
                    raise MXNetError(f"mx.rtc: argument {i} of {self.name} must be an NDArray")
                if np.dtype(a.dtype) != dtype:
                    raise MXNetError(f"mx.rtc: argument {i} of {self.name} must have dtype "
                                     f"{dtype.name}, got {np.dtype(a.dtype).name}")
                if a.context != ctx:
                    raise MXNetError(f"mx.rtc: argument {i} of {self.name} is on "
                                     f"{a.context}, the launch is on {ctx}")
                (reads if is_const else writes).append(a)
                values.append(a)
            else:
                if isinstance(a, NDArray):
                    raise MXNetError(f"mx.rtc: argument {i} of {self.name} is a scalar, got "
                                     "an NDArray")
                values.append(dtype.type(a))
        _launch(self._fn, reads, writes, values, ctx, _dims(grid_dims, "grid_dims"),
                _dims(block_dims, "block_dims"), int(shared_mem))


def _parse_signature(signature):
    """[(is_pointer, is_const, dtype)] from a C parameter list."""
    out = []
    for part in filter(None, (p.strip() for p in signature.split(","))):
        m = re.fullmatch(r"(const\s+)?([A-Za-z_][\w ]*?)\s*(\*?)\s*(?:__restrict__\s*)?"
                         r"([A-Za-z_]\w*)?", part)
        ctype = m and " ".join(m.group(2).split())
        if not m or ctype not in _C_TYPES:
            raise MXNetError(f"mx.rtc: cannot parse kernel parameter {part!r}; expected e.g. "
                             f"'const float *x' or 'int n' with a type among "
                             f"{sorted(_C_TYPES)}")
        out.append((bool(m.group(3)), bool(m.group(1)), np.dtype(_C_TYPES[ctype])))
    return out


class Rtc:
    """The MXNet 0.x form: a kernel body written against named float32 arrays.

    ``Rtc(name, inputs, outputs, kernel)``: inputs/outputs are ``[(name, NDArray)]``
    and kernel is the body of the kernel only. For each array ``a`` the body can use
    ``a`` (a float pointer, const for inputs), ``a_ndim`` and ``a_dims[]``. The shapes
    come from the arrays passed to ``push``; a new set of shapes compiles a new kernel.
    """

    def __init__(self, name, inputs, outputs, kernel=None):
        _cupy()
        if kernel is None:
            raise MXNetError("mx.rtc: the kernel body (source between the braces) is "
                             "required")
        self.name = name
        self.input_names = [n for n, _ in inputs]
        self.output_names = [n for n, _ in outputs]
        self.kernel = kernel
        self._compiled = {}
        self._get([a for _, a in inputs], [a for _, a in outputs])

    def _source(self, inputs, outputs):
        params, decls = [], []
        for names, arrays, const in ((self.input_names, inputs, "const "),
                                     (self.output_names, outputs, "")):
            for n, a in zip(names, arrays):
                params.append(f"{const}float *{n}")
                dims = ", ".join(str(d) for d in a.shape)
                decls.append(f"    const int {n}_ndim = {len(a.shape)};\n"
                             f"    const int {n}_dims[] = {{{dims}}};\n")
        return (f'extern "C" __global__ void {self.name}({", ".join(params)}) {{\n'
                f'{"".join(decls)}{self.kernel}\n}}\n')

    def _get(self, inputs, outputs):
        if len(inputs) != len(self.input_names) or len(outputs) != len(self.output_names):
            raise MXNetError(f"mx.rtc {self.name}: expected {len(self.input_names)} inputs and "
                             f"{len(self.output_names)} outputs, got {len(inputs)} and "
                             f"{len(outputs)}")
        for a in list(inputs) + list(outputs):
            if not isinstance(a, NDArray):
                raise MXNetError(f"mx.rtc {self.name}: inputs and outputs must be NDArrays")
            if np.dtype(a.dtype) != np.float32:
                raise MXNetError(f"mx.rtc {self.name}: arrays must be float32, got "
                                 f"{np.dtype(a.dtype).name}")
        key = tuple(a.shape for a in list(inputs) + list(outputs))
        fn = self._compiled.get(key)
        if fn is None:
            module = CudaModule(self._source(inputs, outputs))
            fn = self._compiled[key] = module._module.get_function(self.name)
        return fn

    def push(self, inputs, outputs, grid_dims, block_dims):
        """Launch on the arrays' GPU with the given grid/block shapes."""
        arrays = list(inputs) + list(outputs)
        ctx = arrays[0].context if arrays else None
        _check_gpu_ctx(ctx)
        for a in arrays:
            if a.context != ctx:
                raise MXNetError(f"mx.rtc {self.name}: all arrays must be on one GPU; got "
                                 f"{ctx} and {a.context}")
        fn = self._get(inputs, outputs)
        _launch(fn, list(inputs), list(outputs), arrays, ctx, _dims(grid_dims, "grid_dims"),
                _dims(block_dims, "block_dims"), 0)


class _CallableModule(types.ModuleType):
    """``mx.rtc(...)``, the 0.x spelling, builds an Rtc."""

    def __call__(self, name, inputs, outputs, kernel=None):
        return Rtc(name, inputs, outputs, kernel)


sys.modules[__name__].__class__ = _CallableModule
