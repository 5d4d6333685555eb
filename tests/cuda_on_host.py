"""Run CUDA kernel sources on the host, for testing generated kernels without a GPU.

The source is compiled by g++ after a prelude that turns CUDA's qualifiers into plain
C++ and its thread indices into globals; a driver per kernel (written by the test)
loops over every (block, thread) in turn. That is a valid schedule for kernels whose
threads share nothing but elements they alone own, flags all of them set alike, and
atomic additions (which the prelude makes plain additions).
"""
import ctypes
import shutil
import subprocess

import numpy as np
import pytest

PRELUDE = """
#include <cmath>
using std::sqrt;
struct mxemu_dim3 { unsigned int x, y, z; };
static mxemu_dim3 blockIdx, blockDim, threadIdx, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
static inline float atomicAdd(float* p, float v) { float old = *p; *p = old + v; return old; }
"""


def build(tmp_dir, code):
    """Compile ``code`` (without the prelude) into a shared library and load it;
    skips the test where g++ is missing."""
    if shutil.which("g++") is None:
        pytest.skip("no g++")
    src, lib = tmp_dir / "emu.cpp", tmp_dir / "emu.so"
    src.write_text(PRELUDE + "\n" + code)
    res = subprocess.run(["g++", "-O1", "-shared", "-fPIC", "-o", str(lib), str(src)],
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


def per_dtype_ptx(tmp_dir, source, dtypes):
    """``nvcc --ptx`` of ``source(dtype)`` (a (kernel name, source) pair) for every dtype;
    asserts each kernel is in the PTX."""
    ptx = compile_ptx(tmp_dir, translation_unit(source(dt)[1] for dt in dtypes))
    for dt in dtypes:
        assert source(dt)[0] in ptx


def per_dtype_host_library(tmp_dir, source, dtypes, params, call):
    """The kernels ``source(dtype)`` for every dtype, built for the host with a
    ``grid_driver`` each taking ``params``; ``call`` passes them on, ``{t}`` standing
    for the element C type."""
    code = [translation_unit(source(dt)[1] for dt in dtypes)]
    for i, dt in enumerate(dtypes):
        code.append(grid_driver(f"k{i}", source(dt)[0], params,
                                call.format(t=_element_ctype(dt))))
    return build(tmp_dir, "\n".join(code))
