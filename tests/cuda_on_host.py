"""Run CUDA kernel sources on the host, for testing generated kernels without a GPU.

The source is compiled by g++ after a prelude that turns CUDA's qualifiers into plain
C++ and its thread indices into globals; a driver per kernel (written by the test)
loops over every (block, thread) in turn. That is a valid schedule for kernels whose
threads share nothing but elements they alone own, flags all of them set alike, and
atomic additions (which the prelude makes plain additions).

Kernels whose threads meet in shared memory at ``__syncthreads()`` run under
``HostKernels`` instead: every thread of a block is a host thread (one block at a
time), ``__shared__`` variables are function statics, the barrier a C++20
``std::barrier``, atomic additions serialised by a mutex. ``HostKernels`` also stands in
for ``raw_kernel`` (backend/cuda_kernels.py), so a module's own launch code - grid,
block, argument order - runs the kernels on the host (kernels without barriers one
thread after another).
"""
import ctypes
import re
import shutil
import subprocess

import numpy as np
import pytest

PRELUDE = """
#include <cmath>
#include <barrier>
#include <mutex>
#include <thread>
#include <vector>
using std::sqrt;
struct mxemu_dim3 { unsigned int x, y, z; };
struct float2 { float x, y; };
static mxemu_dim3 blockIdx, blockDim, gridDim;
static thread_local mxemu_dim3 threadIdx;
static std::barrier<>* mxemu_barrier = nullptr;
static std::mutex mxemu_atomic;
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
static inline void __syncthreads() { mxemu_barrier->arrive_and_wait(); }
static inline float atomicAdd(float* p, float v) {
    std::lock_guard<std::mutex> hold(mxemu_atomic);
    float old = *p; *p = old + v; return old;
}
"""


def build(tmp_dir, code):
    """Compile ``code`` (without the prelude) into a shared library and load it;
    skips the test where g++ is missing."""
    if shutil.which("g++") is None:
        pytest.skip("no g++")
    src, lib = tmp_dir / "emu.cpp", tmp_dir / "emu.so"
    src.write_text(PRELUDE + "\n" + code)
    res = subprocess.run(["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread",
                          "-o", str(lib), str(src)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return ctypes.CDLL(str(lib))


def compile_ptx(tmp_dir, code, arch="sm_80"):
    """``nvcc --ptx`` of ``code``; its PTX text. Skips where nvcc is missing."""
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc")
    src, ptx = tmp_dir / "k.cu", tmp_dir / "k.ptx"
    src.write_text(code)
    res = subprocess.run(["nvcc", "--ptx", f"-arch={arch}", "-o", str(ptx), str(src)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return ptx.read_text()


def translation_unit(sources):
    """One file of kernel ``sources``, each in its own namespace k0, k1, ... (each may
    define the same helpers)."""
    return "\n".join(f"namespace k{i} {{\n{src}}}\n" for i, src in enumerate(sources))


def grid_driver(ns, kname, params, call):
    """A C entry ``emu_<kname>(unsigned gx, unsigned gy, unsigned bx, <params>)`` that
    runs ``<ns>::<kname>(<call>)`` for every block of a (gx, gy) grid and every thread
    of bx, in turn (its own names start with ``mxemu_``, clear of the parameters')."""
    return f"""
extern "C" void emu_{kname}(unsigned gx, unsigned gy, unsigned bx, {params}) {{
    using namespace {ns};
    gridDim = {{gx, gy, 1}}; blockDim = {{bx, 1, 1}};
    for (unsigned mxemu_y = 0; mxemu_y < gy; ++mxemu_y)
        for (unsigned mxemu_x = 0; mxemu_x < gx; ++mxemu_x)
            for (unsigned mxemu_t = 0; mxemu_t < bx; ++mxemu_t) {{
                blockIdx = {{mxemu_x, mxemu_y, 0}}; threadIdx = {{mxemu_t, 0, 0}};
                {ns}::{kname}({call});
            }}
}}"""


def _element_ctype(dtype):
    """The C type a generated kernel takes ``dtype``'s elements as (16-bit floats as
    their bits)."""
    return "float" if np.dtype(dtype) == np.float32 else "unsigned short"


def sources_ptx(tmp_dir, sources):
    """``nvcc --ptx`` of (kernel name, source) pairs in one translation unit; asserts
    each kernel is in the PTX."""
    sources = list(sources)
    ptx = compile_ptx(tmp_dir, translation_unit(src for _, src in sources))
    for kname, _ in sources:
        assert kname in ptx


def per_dtype_ptx(tmp_dir, source, dtypes):
    """``nvcc --ptx`` of ``source(dtype)`` (a (kernel name, source) pair) for every dtype;
    asserts each kernel is in the PTX."""
    sources_ptx(tmp_dir, (source(dt) for dt in dtypes))


def per_dtype_host_library(tmp_dir, source, dtypes, params, call):
    """The kernels ``source(dtype)`` for every dtype, built for the host with a
    ``grid_driver`` each taking ``params``; ``call`` passes them on, ``{t}`` standing
    for the element C type."""
    code = [translation_unit(source(dt)[1] for dt in dtypes)]
    for i, dt in enumerate(dtypes):
        code.append(grid_driver(f"k{i}", source(dt)[0], params,
                                call.format(t=_element_ctype(dt))))
    return build(tmp_dir, "\n".join(code))


# --- kernels with shared memory and barriers; raw_kernel's stand-in ------------------------
_CTYPES = {"int": ctypes.c_int, "long long": ctypes.c_longlong, "float": ctypes.c_float,
           "double": ctypes.c_double, "unsigned int": ctypes.c_uint}
_SCALAR_DTYPES = {ctypes.c_int: np.dtype(np.int32), ctypes.c_longlong: np.dtype(np.int64),
                  ctypes.c_float: np.dtype(np.float32), ctypes.c_double: np.dtype(np.float64),
                  ctypes.c_uint: np.dtype(np.uint32)}


def _kernel_params(src, kname):
    """[(C declaration, name, ctypes type)] of kernel ``kname``'s parameters in ``src``."""
    m = re.search(r'extern "C" __global__ void ' + re.escape(kname) + r"\(([^)]*)\)", src)
    assert m, kname
    aliases = dict((alias, base.strip()) for base, alias in
                   re.findall(r"typedef\s+([\w ]+?)\s+(\w+)\s*;", src))
    params = []
    for decl in (d.strip() for d in m.group(1).split(",")):
        name = re.findall(r"\w+", decl)[-1]
        base = decl[:decl.rfind(name)].replace("const", "").strip()
        if "*" in base:
            params.append((decl, name, ctypes.c_void_p))
        else:           # a scalar's type as the driver outside the namespace names it
            base = aliases.get(base, base)
            params.append((f"{base} {name}", name, _CTYPES[base]))
    return params


def _driver_signature(params):
    """(declarations, call arguments) of a driver taking ``params``: pointers arrive as
    void* and are cast back to the kernel's types inside the kernel's namespace (its
    typedefs live there)."""
    decls = ", ".join(f"void* {n}" if ct is ctypes.c_void_p else d for d, n, ct in params)
    names = ", ".join(f"({d[:d.rfind(n)].strip()}){n}" if ct is ctypes.c_void_p else n
                      for d, n, ct in params)
    return decls, names


def serial_driver(ns, kname, params):
    """A C entry ``emu_<kname>(gx, gy, bx, <params>)`` running every thread of every
    block in turn on the calling thread: for kernels without barriers."""
    return grid_driver(ns, kname, *_driver_signature(params))


def threaded_driver(ns, kname, params):
    """A C entry ``emu_<kname>(gx, gy, bx, <params>)`` running every block of the grid
    in turn, each block's bx threads as host threads meeting at one barrier."""
    decls, names = _driver_signature(params)
    return f"""
extern "C" void emu_{kname}(unsigned gx, unsigned gy, unsigned bx, {decls}) {{
    using namespace {ns};
    gridDim = {{gx, gy, 1}}; blockDim = {{bx, 1, 1}};
    for (unsigned mxemu_y = 0; mxemu_y < gy; ++mxemu_y)
        for (unsigned mxemu_x = 0; mxemu_x < gx; ++mxemu_x) {{
            blockIdx = {{mxemu_x, mxemu_y, 0}};
            std::barrier<> mxemu_bar(bx);
            mxemu_barrier = &mxemu_bar;
            std::vector<std::thread> mxemu_threads;
            for (unsigned mxemu_t = 0; mxemu_t < bx; ++mxemu_t)
                mxemu_threads.emplace_back([&, mxemu_t] {{
                    threadIdx = {{mxemu_t, 0, 0}};
                    {ns}::{kname}({names});
                }});
            for (auto& mxemu_th : mxemu_threads) mxemu_th.join();
        }}
}}"""


class HostKernel:
    """A compiled host kernel called as a CuPy RawKernel: ``k(grid, block, args)``."""

    def __init__(self, fn, params):
        self.fn, self.params, self.launches = fn, params, []

    def __call__(self, grid, block, args):
        assert len(args) == len(self.params), (len(args), self.params)
        gx, gy = (tuple(grid) + (1, 1))[:2]
        (bx,) = tuple(block)[:1]
        assert block[1:] in ((), (1,), (1, 1)) and tuple(grid)[2:] in ((), (1,))
        conv = []
        for a, (decl, name, ct) in zip(args, self.params):
            if ct is ctypes.c_void_p:
                assert isinstance(a, np.ndarray), (name, type(a))
                conv.append(ctypes.c_void_p(a.__array_interface__["data"][0]))
            else:
                # CuPy passes a NumPy scalar as its own dtype's C type: it must be the
                # parameter's (an np.int64 for an int would be read wrong on a GPU)
                want = _SCALAR_DTYPES[ct]
                assert isinstance(a, np.generic) and a.dtype == want, \
                    f"{name}: a NumPy {want} scalar, not {type(a).__name__}"
                conv.append(ct(a.item()))
        self.launches.append((gx, gy, bx))
        self.fn(ctypes.c_uint(gx), ctypes.c_uint(gy), ctypes.c_uint(bx), *conv)


class HostKernels:
    """Stands in for ``raw_kernel(cp, key, make)``: compiles ``make()``'s source for the
    host once per key (in ``tmp_dir``) and returns a ``HostKernel``."""

    def __init__(self, tmp_dir):
        self.tmp_dir, self.kernels = tmp_dir, {}

    def __call__(self, cp, key, make):
        k = self.kernels.get(key)
        if k is None:
            kname, src = make()
            params = _kernel_params(src, kname)
            d = self.tmp_dir / f"k{len(self.kernels)}"
            d.mkdir()
            # threads that never meet at a barrier run one after another (faster)
            driver = threaded_driver if "__syncthreads" in src else serial_driver
            lib = build(d, translation_unit([src]) + driver("k0", kname, params))
            fn = getattr(lib, "emu_" + kname)
            fn.argtypes = [ctypes.c_uint] * 3 + [ct for _, _, ct in params]
            k = self.kernels[key] = HostKernel(fn, params)
        return k


class CompileException(Exception):
    """Named as CuPy's: the error NVRTC's refusal of a source raises at launch."""


def refusing_raw_kernel(cp, key, make):
    """A stand-in for ``raw_kernel`` whose kernels the "device's compiler" refuses: every
    launch raises ``CompileException``, as CuPy does when NVRTC rejects a source."""
    def launch(*args):
        raise CompileException("nvrtc: error")
    return launch


# --- comparing a kernel's results with a float64 reference --------------------------------
def kernel_tolerances():
    """dtype -> relative tolerance of a float32-arithmetic kernel's results read in
    that dtype (bfloat16's where ml_dtypes provides it)."""
    from mxnet.base import bfloat16
    tol = {np.dtype(np.float32): 2e-5, np.dtype(np.float16): 2e-3}
    if bfloat16 is not None:
        tol[np.dtype(bfloat16)] = 1.6e-2
    return tol


def widened(arrays):
    """The arrays in float64 (None kept): the reference computes in it."""
    return [None if a is None else a.astype(np.float64) for a in arrays]


def assert_close_in_float64(got, want, dtype, scale=1.0):
    """got (in dtype) against the float64 reference want, to dtype's tolerance, the
    absolute part scaled by ``scale`` (the values' magnitude)."""
    tol = kernel_tolerances()[np.dtype(dtype)]
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol,
                               atol=tol * scale)


def check_need_grad_subsets(backward, p, dy, inputs, outputs, subsets):
    """An affine normalisation's backward adapter (x, gamma, beta) asked for each subset
    of the gradients, each into a given destination: the wanted ones are written into
    their destinations and equal the full call's, the others are None."""
    from mxnet import cpu
    from mxnet.operator.registry import OpContext
    shapes = [a.shape for a in inputs]
    full = backward(OpContext(np, cpu(), is_train=True, need_grad=[True] * 3,
                              in_shapes=shapes), p, [dy], inputs, outputs, [])
    for need in subsets:
        bctx = OpContext(np, cpu(), is_train=True, need_grad=need, in_shapes=shapes)
        dests = [np.full(a.shape, 7, a.dtype) if w else None
                 for a, w in zip(inputs, need)]
        got = backward(bctx, p, [dy], inputs, outputs, [], in_grad=dests)
        for g, d, f, w in zip(got, dests, full, need):
            if w:
                assert g is d
                np.testing.assert_array_equal(g, f)
            else:
                assert g is None


def kernels_of_module_on_host(monkeypatch, module, host_raw_kernels):
    """A generated-kernel module (its ``raw_kernel``, ``_is_device_array`` and
    ``_REFUSED``) run on the host for NumPy arrays; returns the host kernels."""
    monkeypatch.setattr(module, "raw_kernel", host_raw_kernels)
    monkeypatch.setattr(module, "_is_device_array", lambda a: isinstance(a, np.ndarray))
    monkeypatch.setattr(module, "_REFUSED", set())
    return host_raw_kernels


def check_layer_trains_like_the_body(monkeypatch, host_kernels, op, forward, backward,
                                     make_layer, x, head, tol):
    """A Gluon layer's output and gradients (data, gamma, beta) with ``op``'s kernels
    registered as its CPU kernels (run on the host) equal those of the operator body,
    and the kernels ran (at least one forward and two backward launches).
    ``make_layer(data)`` gives the initialised layer with its gamma and beta set."""
    import mxnet as mx
    from mxnet.operator import kernels as table

    def run():
        data = mx.nd.array(x)
        layer = make_layer(data)
        data.attach_grad()
        with mx.autograd.record():
            y = layer(data)
        y.backward(mx.nd.array(head))
        return (y.asnumpy(), data.grad.asnumpy(), layer.gamma.grad().asnumpy(),
                layer.beta.grad().asnumpy())

    def launches():
        return sum(len(k.launches) for k in host_kernels.kernels.values())
    want = run()
    monkeypatch.setitem(table._TABLE, (op, "cpu", False), forward)
    monkeypatch.setitem(table._TABLE, (op, "cpu", True), backward)
    before = launches()
    got = run()
    assert launches() >= before + 3
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def results_on_cpu_and_gpu(call, arrays, head, dtype):
    """{'cpu': ..., 'gpu': ...}: ``call(*arrays)`` recorded on each device with every
    array a variable, then backward from ``head``; each entry the output followed by
    the arrays' gradients, as NumPy arrays (needs a GPU)."""
    import mxnet as mx
    res = {}
    for ctx in (mx.cpu(), mx.gpu(0)):
        args = [mx.nd.array(a, ctx=ctx, dtype=dtype) for a in arrays]
        for a in args:
            a.attach_grad()
        with mx.autograd.record():
            y = call(*args)
        y.backward(mx.nd.array(head, ctx=ctx, dtype=dtype))
        res[ctx.device_type] = [y.asnumpy()] + [a.grad.asnumpy() for a in args]
    return res
