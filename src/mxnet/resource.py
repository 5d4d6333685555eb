"""The resource manager (seed 002): per-context random generators and temp space."""
import threading

import numpy as np

from . import storage, engine
from .engine import new_variable
from .backend import array_module, device_scope
from .base import MXNetError, get_or_make
from .context import Context

__all__ = ["seed", "get_rng", "counter_stream", "temp_space"]

_rngs = {}
_streams = {}           # device -> backend.philox.CounterStream (generated GPU kernels)
_stream_seeds = {}      # device -> the seed given for that device alone
_rng_vars = {}
_lock = threading.Lock()
_global_seed = None


def _key(ctx):
    return (ctx.device_typeid, ctx.device_id)


def get_rng(ctx):
    """The random generator of ctx (a NumPy Generator on CPU, a CuPy one on GPU)."""
    key = _key(ctx)
    return get_or_make(_rngs, key, lambda: _make_rng(ctx, _derive(_global_seed, key)),
                       _lock)


def counter_stream(ctx):
    """ctx's Philox stream for generated GPU kernels (backend/philox.py): keyed by the
    seed of ``mx.random.seed`` and the device, its position in device memory. Ordered
    like the generator, by ``rng_var``."""
    key = _key(ctx)

    def make():
        from .backend.philox import CounterStream, key_for
        xp = array_module(ctx)
        with device_scope(ctx):         # the state's memory is on ctx's device
            return CounterStream(xp, key_for(_stream_seeds.get(key, _global_seed), *key))
    return get_or_make(_streams, key, make, _lock)


def _reseed(stream, key, seed_state):
    from .backend.philox import key_for
    with device_scope(Context(Context.devtype2str[key[0]], key[1])):
        stream.reseed(key_for(seed_state, *key))


def rng_var(ctx):
    """The engine variable that orders the uses of ctx's generator (MXNet's kRandom
    resource is a mutable var): random operators run in push order, so a seed
    reproduces their numbers even when the engine runs them on worker threads."""
    key = _key(ctx)
    var = _rng_vars.get(key)
    if var is None:
        with _lock:
            var = _rng_vars.setdefault(key, new_variable(f"rng{key}"))
    return var


def _derive(base, key):
    if base is None:
        return None
    return [int(base) & 0xFFFFFFFF, key[0], key[1]]


def _make_rng(ctx, seed_state):
    if ctx.device_typeid == 2:
        cp = array_module(ctx)
        with device_scope(ctx):              # its state lives on ctx's device
            return cp.random.Generator(cp.random.XORWOW(
                None if seed_state is None else hash(tuple(seed_state)) & 0x7FFFFFFF))
    return np.random.Generator(np.random.PCG64(seed_state))


def seed(seed_state, ctx="all"):
    """Seed the generators: every context's (``ctx='all'``) or just ctx's.

    The same seed gives the same numbers on the same context.
    """
    global _global_seed
    if not isinstance(seed_state, (int, np.integer)):
        raise MXNetError(f"seed must be an int, got {type(seed_state).__name__}")
    for var in list(_rng_vars.values()):      # draws pushed before the seed finish first
        if var.num_pending:
            engine.get().wait_for_var(var)
    with _lock:
        if ctx == "all":
            _global_seed = int(seed_state)
            _rngs.clear()
            _stream_seeds.clear()
        else:
            _rngs[_key(ctx)] = _make_rng(ctx, _derive(seed_state, _key(ctx)))
            _stream_seeds[_key(ctx)] = int(seed_state)
        # Philox streams are reseeded in place: CUDA graphs read their state's address
        for key, st in _streams.items():
            if ctx == "all" or key == _key(ctx):
                _reseed(st, key, seed_state)


# Host scratch up to this size comes from the allocator directly: malloc hands back a
# freed small block in well under a microsecond, the pool's bookkeeping costs ~15 us a
# request, which small kernels (im2col of a 4x4 feature map) would pay several times a
# call. Larger requests keep the pool, which spares them fresh pages at every call.
SMALL_HOST_TEMP_BYTES = 1 << 20


def _nothing_to_release():
    pass


def temp_space(ctx, shape, dtype=np.float32):
    """Scratch memory for ctx (from its pool, or malloc for small host requests):
    returns (array, release) — call release() after."""
    if ctx.device_typeid != 2 and storage.nbytes_of(shape, dtype) <= SMALL_HOST_TEMP_BYTES:
        return np.empty(shape, dtype), _nothing_to_release
    arr, block = storage.empty(ctx, shape, dtype)
    return arr, (lambda: block.pool.free(block))
