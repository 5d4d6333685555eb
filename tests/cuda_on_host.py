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
