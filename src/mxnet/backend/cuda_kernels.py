"""Support for pymxnet's generated CUDA kernels (CuPy RawKernels): each compiled once
per key (``raw_kernel``), and ``BITS_SOURCE``, the code their sources include to take
the 16-bit float types as their bits (no headers: ``nvcc --ptx`` and a host compiler
take the kernels, which is how they are tested without a GPU):

* ``mx_bf16(v)``: bfloat16 bits to float (a bfloat16 is the top half of a float32);
* ``mx_half_to_float(h)``: IEEE binary16 bits to float, exact for every value
  (subnormals, inf, NaN too);
* ``mx_to_bf16(s)``: float to bfloat16 bits, rounded to nearest even (not for NaN:
  the rounding could carry a NaN's payload into an infinity);
* ``mx_to_half(s)``: float to IEEE binary16 bits, rounded to nearest even, subnormals,
  overflow to infinity and NaN (kept a quiet NaN) included;
* ``mx_store_bf16(s)``: ``mx_to_bf16`` for values that may be NaN: a NaN is stored as
  the quiet NaN 0x7fc0 (a GPU's arithmetic NaN is 0x7fffffff, which the rounding would
  carry into 0x8000, -0).
"""

import warnings

__all__ = ["BITS_SOURCE", "raw_kernel", "grid_stride_blocks", "compile_refused"]

BITS_SOURCE = r"""
__device__ __forceinline__ float mx_bits_to_float(unsigned int b) {
    union { unsigned int u; float f; } c;
    c.u = b;
    return c.f;
}
__device__ __forceinline__ float mx_bf16(unsigned short v) {
    return mx_bits_to_float(((unsigned int)v) << 16);
}
__device__ __forceinline__ float mx_half_to_float(unsigned short h) {
    unsigned int sign = ((unsigned int)h & 0x8000u) << 16;
    unsigned int exp = ((unsigned int)h >> 10) & 0x1fu;
    unsigned int man = (unsigned int)h & 0x3ffu;
    if (exp == 0u) {
        if (man == 0u) return mx_bits_to_float(sign);
        int shift = 0;                 /* normalise the subnormal significand */
        while ((man & 0x400u) == 0u) { man <<= 1; ++shift; }
        man &= 0x3ffu;
        return mx_bits_to_float(sign | ((unsigned int)(113 - shift) << 23) | (man << 13));
    }
    if (exp == 31u) return mx_bits_to_float(sign | 0x7f800000u | (man << 13));
    return mx_bits_to_float(sign | ((exp + 112u) << 23) | (man << 13));
}
__device__ __forceinline__ unsigned short mx_to_bf16(float s) {
    union { unsigned int u; float f; } c;
    c.f = s;
    const unsigned int u = c.u + 0x7fffu + ((c.u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}
__device__ __forceinline__ unsigned short mx_store_bf16(float s) {
    return s != s ? (unsigned short)0x7fc0u : mx_to_bf16(s);
}
__device__ __forceinline__ unsigned short mx_to_half(float s) {
    union { unsigned int u; float f; } c;
    c.f = s;
    const unsigned int sign = (c.u >> 16) & 0x8000u;
    const unsigned int a = c.u & 0x7fffffffu;
    if (a >= 0x7f800000u)                      /* infinity, NaN (made quiet) */
        return (unsigned short)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));
    if (a >= 0x477ff000u)                      /* 65520 and up round to infinity */
        return (unsigned short)(sign | 0x7c00u);
    if (a >= 0x38800000u) {                    /* normal: rebias, round to even */
        const unsigned int r = a - 0x38000000u;
        return (unsigned short)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
    }
    if (a < 0x33000000u)                       /* below half the least subnormal */
        return (unsigned short)sign;
    /* subnormal: the significand (hidden bit set) in units of 2^-24, rounded to even */
    const unsigned int shift = 126u - (a >> 23);
    const unsigned int m = (a & 0x7fffffu) | 0x800000u;
    unsigned int k = m >> shift;
    const unsigned int rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (k & 1u))) ++k;
    return (unsigned short)(sign | k);
}
"""

_COMPILED = {}


def grid_stride_blocks(n, threads, max_blocks):
    """Blocks of ``threads`` for a kernel over ``n`` work items, one item a thread up
    to ``max_blocks`` blocks (each thread strides over the rest beyond that); at
    least one."""
    return max(1, min(max_blocks, -(-n // threads)))


def raw_kernel(cp, key, make):
    """The CuPy RawKernel for ``key``, compiled once from ``make()`` -> (kernel name,
    source)."""
    # per array module as well: tests run the same key under an emulated CuPy
    full = (id(cp), key)
    k = _COMPILED.get(full)
    if k is None:
        kname, src = make()
        k = _COMPILED[full] = cp.RawKernel(src, kname)
    return k


def compile_refused(err, refused, key, what):
    """Whether ``err``, raised by a kernel launch, is the device's compiler (NVRTC)
    refusing the kernel's source (CuPy's CompileException). Then ``key`` joins the set
    ``refused`` (its calls go to the operator body from now on) and one RuntimeWarning
    names ``what`` ("pick's GPU kernel") as not compiled."""
    if type(err).__name__ != "CompileException":
        return False
    refused.add(key)
    warnings.warn(f"pymxnet: {what} did not compile ({err}); the operator body runs "
                  "instead", RuntimeWarning, stacklevel=4)
    return True
