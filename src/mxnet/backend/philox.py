"""A counter-based random stream for generated GPU kernels: Philox4x32-10 (Salmon et
al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), keyed per device by
``mx.random.seed``, with its position in device memory.

A kernel draws word k of block (i, offset): the counter (i_lo, i_hi, offset_lo,
offset_hi) encrypted under the stream's 64-bit key gives four 32-bit words. The key
and the position live in the stream's two-element device array ``state`` (key,
offset): each call of a kernel reads both, and the stream then advances the offset by
a one-thread kernel (``advance``). Because they are read and moved on the device, a
CUDA graph that captured the two launches draws new numbers on every replay, and a
later ``mx.random.seed`` (which rewrites ``state`` in place) reaches it too; CuPy's
generators keep their position on the host, so a replayed capture of them repeats its
numbers. ``PHILOX_SOURCE`` uses no headers, so ``nvcc --ptx`` and a host compiler take
it (tests/cuda_on_host.py).
"""
import os

import numpy as np

from .cuda_kernels import raw_kernel

__all__ = ["PHILOX_SOURCE", "CounterStream", "key_for"]

PHILOX_SOURCE = r"""
struct mx_philox_words { unsigned int v[4]; };
__device__ __forceinline__ mx_philox_words mx_philox4x32_10(
        unsigned int c0, unsigned int c1, unsigned int c2, unsigned int c3,
        unsigned int k0, unsigned int k1) {
    for (int round = 0; round < 10; ++round) {
        if (round) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        const unsigned long long p0 = (unsigned long long)0xD2511F53u * c0;
        const unsigned long long p1 = (unsigned long long)0xCD9E8D57u * c2;
        const unsigned int hi0 = (unsigned int)(p0 >> 32), lo0 = (unsigned int)p0;
        const unsigned int hi1 = (unsigned int)(p1 >> 32), lo1 = (unsigned int)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    mx_philox_words w;
    w.v[0] = c0; w.v[1] = c1; w.v[2] = c2; w.v[3] = c3;
    return w;
}
/* a 32-bit word as a float32 in [0, 1): its top 24 bits times 2^-24 (exact) */
__device__ __forceinline__ float mx_philox_uniform(unsigned int w) {
    return (float)(w >> 8) * 5.9604644775390625e-08f;
}
"""

_ADVANCE = ("mxnet_philox_advance", r"""
extern "C" __global__ void mxnet_philox_advance(unsigned long long* state) {
    if (blockIdx.x == 0 && threadIdx.x == 0) state[1] += 1ull;
}
""")


def key_for(seed, device_typeid, device_id):
    """The 64-bit key of a device's stream: derived from the seed of
    ``mx.random.seed`` and the device, or fresh entropy when no seed was given."""
    if seed is None:
        return int.from_bytes(os.urandom(8), "little")
    return int(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, device_typeid, device_id])
               .generate_state(1, np.uint64)[0])


class CounterStream:
    """One device's Philox stream: ``state``, (key, offset) as two uint64 in the
    device's memory (``xp``'s), kept at one address for the stream's life."""

    def __init__(self, xp, key):
        self.xp = xp
        self.state = xp.asarray(np.array([key, 0], np.uint64))

    def reseed(self, key):
        """Start again from offset 0 under ``key`` (in place, on the current stream)."""
        self.state[...] = self.xp.asarray(np.array([key, 0], np.uint64))

    def advance(self):
        """Move the position on (after a kernel that read it), on the current stream."""
        k = raw_kernel(self.xp, "philox_advance", lambda: _ADVANCE)
        k((1,), (1,), (self.state,))
