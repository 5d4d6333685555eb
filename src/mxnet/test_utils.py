"""mx.test_utils: MXNet 1.9.1's testing helpers, same names, signatures and semantics.

Comparison with MXNet's default tolerances per dtype, random test data, numeric
gradient checks (the symbolic ones live in :mod:`mxnet.test_utils_symbolic` and are
re-exported here), random-generator statistics (:mod:`mxnet.test_utils_stats`),
optimizer comparison and environment scopes. Like MXNet's module it has no ``__all__``:
``from mxnet.test_utils import *`` exposes every public name, including the modules it
imports (``np``, ``mx``, ``os``...), which MXNet's tests rely on.
"""
# pylint: disable=unused-import
import bz2  # noqa: F401
import errno  # noqa: F401
import functools
import gzip  # noqa: F401
import json
import logging  # noqa: F401
import os
import platform
import random as rnd
import struct  # noqa: F401
import sys
import time  # noqa: F401
import traceback  # noqa: F401
import zipfile  # noqa: F401
from collections import OrderedDict  # noqa: F401
from contextlib import contextmanager

import numpy as np
import numpy.testing as npt  # noqa: F401


import mxnet as mx

from .base import MXNetError
from .context import Context, current_context  # noqa: F401
from . import autograd, test_utils_symbolic
from .ndarray import array  # noqa: F401
from .ndarray.ndarray import NDArray
from .symbol import Symbol  # noqa: F401
from .util import use_np, getenv, setenv, get_cuda_compute_capability  # noqa: F401
from .runtime import Features  # noqa: F401
from .test_utils_compare import (  # noqa: F401  (MXNet's names)
    default_context, set_default_context, default_dtype, default_rtols, default_atols,
    default_numeric_eps, effective_dtype, get_tolerance, get_tols, get_rtol, get_atol,
    get_etol, _as_np, same, checkShapes, almost_equal, locationError,
    assert_almost_equal, assert_allclose, assert_almost_equal_with_err,
    assert_almost_equal_ignore_nan, _find_max_violation, _close_mask, _INT_DTYPES)
from .io.idx import find_mnist_dir, read_idx

def random_arrays(*shapes):
    """Standard-normal float32 arrays, one per shape (a float for shape ()); one array
    when one shape is given."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, **kwargs):
    """Uniform arrays in [low, high) (kwargs low=0, high=1, dtype=float32): a list with
    one per shape, even for one shape (unlike random_arrays), as in MXNet."""
    low = kwargs.pop("low", 0.0)
    high = kwargs.pop("high", 1.0)
    dtype = kwargs.pop("dtype", default_dtype())
    if kwargs:
        raise TypeError(f"random_uniform_arrays: unexpected arguments {sorted(kwargs)}")
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k):
    """k distinct elements of population, in random order."""
    if not 0 <= k <= len(population):
        raise ValueError(f"random_sample: k={k} is outside [0, {len(population)}]")
    copy = list(population)
    np.random.shuffle(copy)
    return copy[:k]


def _sorted_items(d):
    return sorted(d.items(), key=lambda item: item[0])


def _sorted_dict(d):
    return OrderedDict(_sorted_items(d))


def assign_each(the_input, function):
    """A new array with function applied to each element of the_input (None: a copy)."""
    if function is None:
        return np.array(the_input)
    return np.vectorize(function)(the_input)


def assign_each2(input1, input2, function):
    """A new array with function(a, b) applied elementwise (None: a copy of input1)."""
    if function is None:
        return np.array(input1)
    return np.vectorize(function)(input1, input2)


def create_2d_tensor(rows, columns, dtype=np.int64):
    """An NDArray of shape (rows, columns) whose row i holds the value i."""
    col = mx.nd.arange(0, rows, dtype=dtype).reshape(rows, 1)
    return mx.nd.broadcast_to(col, shape=(rows, columns))


def create_vector(size, dtype=np.int64):
    """The NDArray [0, 1, ..., size - 1]."""
    return mx.nd.arange(0, size, dtype=dtype)


def get_identity_mat(size):
    """An NDArray identity matrix of the given size."""
    return mx.nd.array(np.eye(size))


def get_identity_mat_batch(size):
    """Two stacked identity matrices, shape (2, size, size)."""
    eye = np.eye(size)
    return mx.nd.array(np.stack([eye, eye]))


def _modify_each(values, function, dtype):
    """function applied to each stored value (MXNet calls it with one scalar at a
    time, so it may return a constant)."""
    if values.size == 0:
        return values
    return np.vectorize(function, otypes=[np.dtype(dtype)])(values)


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, modifier_func=None,
                        shuffle_csr_indices=False, ctx=None):
    """A random sparse NDArray and its parts: ``(arr, (values, row indices))`` (NumPy)
    for 'row_sparse', ``(arr, (indptr, indices, values))`` (NDArrays) for 'csr'.
    ``density`` (default random) is the expected fraction of stored rows/entries;
    ``distribution`` ('uniform' or 'powerlaw', csr only) how entries are spread;
    ``data_init`` fills every stored value; ``rsp_indices`` picks the stored rows."""
    density = np.random.rand() if density is None else density
    dtype = default_dtype() if dtype is None else dtype
    distribution = "uniform" if distribution is None else distribution
    if stype == "row_sparse":
        if distribution != "uniform":
            raise ValueError(f"row_sparse arrays support the uniform distribution only, "
                             f"got {distribution!r}")
        if rsp_indices is not None:
            indices = np.asarray(rsp_indices, dtype=np.int64)
            if indices.size and indices.max() >= shape[0]:
                raise ValueError("rsp_indices must be smaller than shape[0]")
        else:
            indices = np.flatnonzero(np.random.uniform(size=shape[0]) < density)
            indices = indices.astype(np.int64)
        val = np.random.rand(len(indices), *shape[1:]).astype(dtype)
        if data_init is not None:
            val.fill(data_init)
        if modifier_func is not None:
            val = _modify_each(val, modifier_func, dtype)
        arr = mx.nd.sparse.row_sparse_array((val, indices), shape=shape, dtype=dtype,
                                            ctx=ctx)
        return arr, (val, indices)
    if stype == "csr":
        if len(shape) != 2:
            raise ValueError(f"csr arrays are 2-D, got shape {shape}")
        if distribution == "uniform":
            mask = np.random.uniform(size=shape) < density
        elif distribution == "powerlaw":
            mask = _powerlaw_mask(shape, density)
        else:
            raise ValueError(f"unknown distribution {distribution!r}")
        dense = np.where(mask, np.random.rand(*shape), 0).astype(dtype)
        if data_init is not None:
            dense[mask] = data_init
        if modifier_func is not None:
            dense[mask] = _modify_each(dense[mask], modifier_func, dtype)
        import scipy.sparse as sps
        m = sps.csr_matrix(mask.astype(np.int8))
        m.data = dense[mask].astype(dtype)
        arr = mx.nd.sparse.csr_matrix((m.data, m.indices, m.indptr), shape=shape,
                                      dtype=dtype, ctx=ctx)
        if shuffle_csr_indices:
            arr = shuffle_csr_column_indices(arr)
        return arr, (arr.indptr, arr.indices, arr.data)
    raise ValueError(f"unknown storage type {stype!r}")


def _powerlaw_mask(shape, density):
    """Where a power-law csr matrix stores entries: every row its first column, then
    row r the columns [0, 2**(r+1)) (so each row holds twice the previous one) until
    density * size entries are placed."""
    rows, cols = shape
    budget = int(rows * cols * density)
    mask = np.zeros(shape, dtype=bool)
    first = min(rows, budget)
    mask[:first, 0] = True
    budget -= first
    width = 2
    for r in range(rows):
        if budget <= 0:
            break
        limit = min(cols, width)
        extra = min(limit - 1, budget)
        mask[r, 1:1 + extra] = True
        budget -= extra
        if limit < cols:
            width *= 2
    if budget > 0:
        raise ValueError(f"density {density} is too high for a power-law {shape} matrix")
    return mask


def shuffle_csr_column_indices(csr):
    """A copy of a CSRNDArray whose column indices are shuffled within each row
    (values move with them): an unsorted, still valid-valued, csr array."""
    indptr = csr.indptr.asnumpy()
    indices = csr.indices.asnumpy().copy()
    data = csr.data.asnumpy().copy()
    for i in range(len(indptr) - 1):
        lo, hi = indptr[i], indptr[i + 1]
        perm = np.random.permutation(hi - lo) + lo
        indices[lo:hi], data[lo:hi] = indices[perm], data[perm]
    return mx.nd.sparse.csr_matrix((data, indices, indptr), shape=csr.shape,
                                   dtype=csr.dtype)


def create_sparse_array(shape, stype, data_init=None, rsp_indices=None, dtype=None,
                        modifier_func=None, density=0.5, shuffle_csr_indices=False):
    """A random sparse array (rand_sparse_ndarray's array only)."""
    if stype == "row_sparse":
        arr, _ = rand_sparse_ndarray(shape, stype, density=density, dtype=dtype,
                                     data_init=data_init, rsp_indices=rsp_indices,
                                     modifier_func=modifier_func)
    else:
        arr, _ = rand_sparse_ndarray(shape, stype, density=density, dtype=dtype,
                                     data_init=data_init, modifier_func=modifier_func,
                                     shuffle_csr_indices=shuffle_csr_indices)
    return arr


def create_sparse_array_zd(shape, stype, density, data_init=None, rsp_indices=None,
                           dtype=None, modifier_func=None, shuffle_csr_indices=False):
    """create_sparse_array, where row_sparse arrays may have no stored rows."""
    if stype == "row_sparse":
        density = 0.0
        if rsp_indices is not None and len(rsp_indices) > shape[0]:
            rsp_indices = rsp_indices[:shape[0]]
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices,
                               dtype=dtype, modifier_func=modifier_func, density=density,
                               shuffle_csr_indices=shuffle_csr_indices)


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A random NDArray of the given shape: standard-normal values for 'default'
    storage; 'row_sparse'/'csr' go through rand_sparse_ndarray."""
    if stype != "default":
        return rand_sparse_ndarray(shape, stype, density=density, dtype=dtype,
                                   modifier_func=modifier_func,
                                   shuffle_csr_indices=shuffle_csr_indices,
                                   distribution=distribution, ctx=ctx)[0]
    return mx.nd.array(random_arrays(shape), dtype=dtype, ctx=ctx)


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """A random 2-d shape with sizes in [1, dimN] ([0, dimN] when allow_zero_size)."""
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0), rnd.randint(low, dim1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-d shape with sizes in [1, dimN] ([0, dimN] when allow_zero_size)."""
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0), rnd.randint(low, dim1), rnd.randint(low, dim2)


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random num_dim-d shape with sizes in [1, dim] ([0, dim] when allow_zero_size)."""
    low = 0 if allow_zero_size else 1
    return tuple(int(v) for v in np.random.randint(low, dim + 1, size=num_dim))


def rand_coord_2d(x_low, x_high, y_low, y_high):
    """A random integer point with x in [x_low, x_high) and y in [y_low, y_high)."""
    x = np.random.randint(x_low, x_high, dtype=np.int64)
    y = np.random.randint(y_low, y_high, dtype=np.int64)
    return x, y


def assert_exception(f, exception_type, *args, **kwargs):
    """Assert that f(*args, **kwargs) raises exception_type."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{exception_type.__name__} was not raised")


def retry(n):
    """Decorator: rerun a test up to n times while it fails with AssertionError."""
    if n <= 0:
        raise ValueError("retry: n must be positive")

    def decorate(test):
        @functools.wraps(test)
        def wrapper(*args, **kwargs):
            for attempt in range(n):
                try:
                    return test(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise
                    mx.nd.waitall()
        return wrapper
    return decorate


def same_array(array1, array2):
    """Whether two NDArrays share memory: a change made through one shows in the other."""
    array1[:] += 1
    if not same(array1.asnumpy(), array2.asnumpy()):
        array1[:] -= 1
        return False
    array1[:] -= 1
    return same(array1.asnumpy(), array2.asnumpy())


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """assert_almost_equal over two (nested tuples of) NDArrays; None matches anything."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def compare_optimizer(opt1, opt2, shape, dtype, w_stype="default", g_stype="default",
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """Run one update of opt1 and opt2 on the same random weight and gradient and
    compare the states and weights. With a list of shapes (ntensors > 1) opt2 updates
    all tensors in one multi-tensor call and opt1 one by one. A sparse ``w_stype`` /
    ``g_stype`` gives opt2 fully stored sparse arrays and opt1 their dense copies."""
    from copy import deepcopy
    ctx = default_context()

    def pair(stype):
        if stype == "default":
            second = mx.random.uniform(shape=shape, ctx=ctx, dtype=dtype)
            return second.copyto(ctx), second
        second = rand_ndarray(shape, stype, density=1, dtype=dtype)
        return second.copyto(ctx).tostype("default"), second

    if not isinstance(shape, list):
        if ntensors != 1:
            raise ValueError("compare_optimizer: a single shape needs ntensors == 1")
        w1, w2 = pair(w_stype)
        g1, g2 = pair(g_stype)
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    w1 = tuple(mx.random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    g1 = tuple(mx.random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    w2, g2 = deepcopy(w1), deepcopy(g1)
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        assert_almost_equal(w1[i], w2[i], rtol=rtol, atol=atol)


def same_symbol_structure(sym1, sym2):
    """Whether two symbols have the same operators node by node."""
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    return all(n1["op"] == n2["op"] for n1, n2 in zip(nodes1, nodes2))


@contextmanager
def environment(*args):
    """Scope with environment variables set: ``environment(name, value)`` or
    ``environment({name: value, ...})``; value None unsets. Restored on exit."""
    if len(args) == 2:
        updates = {args[0]: args[1]}
    elif len(args) == 1 and isinstance(args[0], dict):
        updates = args[0]
    else:
        raise ValueError("environment() takes (name, value) or one dict {name: value}")
    saved = {name: os.environ.get(name) for name in updates}
    try:
        for name, value in updates.items():
            setenv(name, value)
        yield
    finally:
        for name, value in saved.items():
            setenv(name, value)


@contextmanager
def discard_stderr():
    """Scope in which everything written to file descriptor 2 is thrown away."""
    with open(os.devnull, "w", encoding="utf-8") as devnull:
        try:
            fd = sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):
            # stderr is not a real file (captured): nothing at fd level to silence
            yield
            return
        sys.stderr.flush()
        saved = os.dup(fd)
        try:
            os.dup2(devnull.fileno(), fd)
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)


def collapse_sum_like(a, shape):
    """Sum numpy array a over the axes broadcasting added to reach a.shape from shape."""
    if len(a.shape) < len(shape):
        raise ValueError(f"collapse_sum_like: {a.shape} has fewer axes than {shape}")
    if np.prod(shape) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = len(a.shape) - len(shape)
    axes = list(range(lead))
    for i, s in enumerate(shape):
        if s != a.shape[i + lead]:
            if s != 1:
                raise ValueError(f"collapse_sum_like: {shape} does not broadcast to {a.shape}")
            axes.append(i + lead)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


def is_cd_run():
    """Whether this runs in MXNet's continuous-delivery job (CD_JOB=1)."""
    return os.environ.get("CD_JOB", 0) == "1"


def is_aarch64_run():
    """Whether the machine is aarch64."""
    return platform.machine() == "aarch64"


def has_tvm_ops():
    """Whether TVM-generated operators are available (never in pymxnet)."""
    return Features().is_enabled("TVM_OP")


def is_op_runnable():
    """Whether operators can run on the current context (always: pymxnet has no TVM ops)."""
    return True


def list_gpus():
    """Indices of the visible GPUs."""
    return list(range(mx.context.num_gpus()))


def check_speed(sym, location=None, ctx=None, N=20, grad_req=None, typ="whole", **kwargs):  # noqa: N803
    """Average seconds per forward ('forward') or forward+backward ('whole') of sym
    over N runs, after one warm-up run."""
    ctx = ctx or default_context()
    if grad_req is None:
        grad_req = "write"
    if location is None:
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx, **kwargs)
        location = {k: np.random.normal(size=arr.shape, scale=1.0)
                    for k, arr in exe.arg_dict.items()}
    else:
        if not isinstance(location, dict):
            raise ValueError("check_speed: location must be a dict {name: array}")
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx,
                              **{k: v.shape for k, v in location.items()})
    for name, value in location.items():
        exe.arg_dict[name][:] = value
    if typ not in ("whole", "forward"):
        raise ValueError(f"check_speed: typ must be 'whole' or 'forward', got {typ!r}")
    is_train = typ == "whole"

    def run():
        exe.forward(is_train=is_train)
        if is_train:
            exe.backward(out_grads=exe.outputs)
        for out in exe.outputs:
            out.wait_to_read()
    run()
    mx.nd.waitall()
    tic = time.time()
    for _ in range(N):
        run()
    mx.nd.waitall()
    return (time.time() - tic) / N


def new_matrix_with_real_eigvals_2d(n):
    """A random n x n matrix with real, well-separated eigenvalues."""
    q = new_orthonormal_matrix_2d(n)
    eig = np.random.uniform(1, 2, size=n) * np.random.choice([-1, 1], size=n)
    return q @ np.diag(eig) @ np.linalg.inv(q)


def new_matrix_with_real_eigvals_nd(shape):
    """A batch (shape[:-2]) of random square matrices with real eigenvalues."""
    n = shape[-1]
    mats = [new_matrix_with_real_eigvals_2d(n) for _ in range(int(np.prod(shape[:-2])))]
    return np.array(mats).reshape(shape)


def new_orthonormal_matrix_2d(n):
    """A random n x n orthonormal matrix (QR of a Gaussian matrix)."""
    q, _ = np.linalg.qr(np.random.normal(size=(n, n)))
    return q


def new_sym_matrix_with_real_eigvals_2d(n):
    """A random symmetric n x n matrix."""
    q = new_orthonormal_matrix_2d(n)
    eig = np.random.uniform(-10, 10, size=n)
    return q @ np.diag(eig) @ q.T


def new_sym_matrix_with_real_eigvals_nd(shape):
    """A batch (shape[:-2]) of random symmetric matrices."""
    n = shape[-1]
    mats = [new_sym_matrix_with_real_eigvals_2d(n) for _ in range(int(np.prod(shape[:-2])))]
    return np.array(mats).reshape(shape)


def check_gluon_hybridize_consistency(net_builder, data_l, numpy_func=None, test_grad=True,
                                      rtol=1e-4, atol=1e-4):
    """Build a network with net_builder() three times (plain, hybridized, hybridized
    with static allocation), run it on data_l and check that the outputs (and input
    gradients, when test_grad) agree — and match numpy_func(*data) when given."""
    saved_outs, saved_grads, first_params = None, None, None
    for hybridize, static in ((False, False), (True, False), (True, True)):
        net = net_builder()
        net.initialize()
        if hybridize:
            net.hybridize(static_alloc=static, static_shape=static)
        inputs = [d.copy() for d in data_l]
        for d in inputs:
            d.attach_grad()
        if first_params is not None:
            # same weights in every variant: copy them over (after deferred init ran)
            net(*[d.copy() for d in data_l])
            for p, value in zip(net.collect_params().values(), first_params):
                p.set_data(value)
        with mx.autograd.record():
            out = net(*inputs)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        if test_grad:
            mx.autograd.backward(outs)
        if first_params is None:
            first_params = [p.data().copy() for p in net.collect_params().values()]
        outs_np = [o.asnumpy() for o in outs]
        grads_np = [d.grad.asnumpy() for d in inputs] if test_grad else []
        if saved_outs is None:
            saved_outs, saved_grads = outs_np, grads_np
            if numpy_func is not None:
                want = numpy_func(*[d.asnumpy() for d in data_l])
                want = list(want) if isinstance(want, (list, tuple)) else [want]
                for got, exp in zip(outs_np, want):
                    assert_almost_equal(got, exp, rtol=rtol, atol=atol)
        else:
            for got, exp in zip(outs_np + grads_np, saved_outs + saved_grads):
                assert_almost_equal(got, exp, rtol=rtol, atol=atol)


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduce dat over axis (int, tuple or None) keeping dims if asked."""
    if axis is None:
        axis = tuple(range(dat.ndim))
    elif isinstance(axis, int):
        axis = (axis,)
    ret = dat
    for a in sorted(axis, reverse=True):
        ret = numpy_reduce_func(ret, axis=a)
        if keepdims:
            ret = np.expand_dims(ret, a)
    return ret


def numeric_grad(f, inputs, out_grad_fn=None, eps=1e-4, use_forward_train=True,
                 dtype=np.float32):
    """Central-difference gradients.

    MXNet's form: ``numeric_grad(executor, location, aux_states=None, eps=1e-4,
    use_forward_train=True, dtype=float32)`` differentiates the sum of the executor's
    first output with respect to each float array of location (a dict name -> numpy
    array) and returns {name: gradient}.

    pymxnet's functional form: ``numeric_grad(f, inputs, out_grad_fn=None, eps=1e-4)``
    where f maps a list of float64 numpy arrays to a list of numpy outputs and
    out_grad_fn gives the head gradient per output (ones by default): the gradients of
    sum(head * f(inputs)), one per input.
    """
    if hasattr(f, "arg_dict"):
        return test_utils_symbolic.executor_numeric_grad(
            f, inputs, aux_states=out_grad_fn, eps=eps,
            use_forward_train=use_forward_train, dtype=dtype)
    grads = []
    base_inputs = [np.array(x, dtype=np.float64) for x in inputs]
    heads = None
    for k, x in enumerate(base_inputs):
        g = np.zeros_like(x)
        flat = x.reshape(-1)
        gflat = g.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            plus = f(base_inputs)
            flat[i] = old - eps
            minus = f(base_inputs)
            flat[i] = old
            if heads is None:
                heads = out_grad_fn(plus) if out_grad_fn else [np.ones_like(o) for o in plus]
            gflat[i] = sum(float(np.sum(h * (p - m))) for h, p, m in
                           zip(heads, plus, minus)) / (2 * eps)
        grads.append(g)
    return grads


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=None, head_grads=None):
    """Compare analytic gradients with central finite differences.

    dtype None means MXNet's float32 for a Symbol and float64 for the callable form.

    ``sym`` is a Symbol (MXNet's form: location is a list or dict of input arrays) or a
    Python callable taking NDArrays and returning an NDArray or list (the imperative
    form: location is a list of numpy arrays; gradients come from autograd). The
    objective is sum(head * output) over outputs with random heads, fixed per check.
    """
    if callable(sym) and not hasattr(sym, "list_arguments"):
        return _check_numeric_gradient_imperative(
            sym, location, 1e-3 if numeric_eps is None else numeric_eps,
            1e-2 if rtol is None else rtol, atol, grad_nodes, use_forward_train, ctx,
            np.float64 if dtype is None else dtype, head_grads)
    return test_utils_symbolic.check_numeric_gradient(
        sym, location, aux_states=aux_states, numeric_eps=numeric_eps, rtol=rtol,
        atol=atol, grad_nodes=grad_nodes, use_forward_train=use_forward_train, ctx=ctx,
        grad_stype_dict=grad_stype_dict, dtype=default_dtype() if dtype is None else dtype)


def _check_numeric_gradient_imperative(fn, location, eps, rtol, atol, grad_nodes,
                                       train, ctx, dtype, head_grads):
    ctx = ctx or default_context()
    location = [np.asarray(x) for x in location]
    nodes = range(len(location)) if grad_nodes is None else grad_nodes

    def run(arrays, record):
        nds = [array(a, ctx=ctx, dtype=dtype) for a in arrays]
        if record:
            for i in nodes:
                nds[i].attach_grad()
        with autograd.record(train_mode=train) if record else autograd.train_mode() \
                if train else autograd.predict_mode():
            out = fn(*nds)
        outs = [out] if isinstance(out, NDArray) else list(out)
        return nds, outs

    nds, outs = run(location, True)
    rng = np.random.RandomState(1234)
    heads = head_grads or [rng.normal(size=o.shape) for o in outs]
    autograd.backward(outs, [array(h, ctx=ctx, dtype=o.dtype) for h, o in zip(heads, outs)])
    analytic = {i: nds[i].grad.asnumpy() for i in nodes}

    def f(arrays):
        return [o.asnumpy().astype(np.float64) for o in run(arrays, False)[1]]

    numeric = numeric_grad(f, location, lambda _: heads, eps)
    for i in nodes:
        assert_almost_equal(analytic[i], numeric[i], rtol=rtol,
                            atol=1e-4 if atol is None else atol,
                            names=(f"analytic grad of input {i}", f"numeric grad of input {i}"))


def get_mnist(path=None):
    """MNIST-format data as a dict of numpy arrays (train_data, train_label, test_data,
    test_label), read from local IDX files: ``path``, ``$MXNET_MNIST_DIR`` or Debian's
    Fashion-MNIST (/usr/share/datasets/fashion-mnist). No download."""
    root = find_mnist_dir(path)
    def load(prefix):
        images = read_idx(root, f"{prefix}-images-idx3-ubyte")
        labels = read_idx(root, f"{prefix}-labels-idx1-ubyte")
        return (images.reshape(-1, 1, 28, 28).astype(np.float32) / 255,
                labels.astype(np.float32))
    trd, trl = load("train")
    ted, tel = load("t10k")
    return {"train_data": trd, "train_label": trl, "test_data": ted, "test_label": tel}


def get_mnist_iterator(batch_size, input_shape, num_parts=1, part_index=0):
    """(train, val) NDArrayIters over MNIST read by get_mnist() (local files only)."""
    data = get_mnist()
    flat = len(input_shape) == 1
    def shaped(x):
        return x.reshape(x.shape[0], -1) if flat else x
    n = data["train_data"].shape[0]
    part = slice(part_index * n // num_parts, (part_index + 1) * n // num_parts)
    train = mx.io.NDArrayIter(shaped(data["train_data"])[part], data["train_label"][part],
                              batch_size, shuffle=True)
    val = mx.io.NDArrayIter(shaped(data["test_data"]), data["test_label"], batch_size)
    return train, val


def _no_download(what):
    raise NotImplementedError(f"{what}: pymxnet's test_utils does not download; put the "
                              f"files in place locally (see get_mnist)")


def download(url, fname=None, dirname=None, overwrite=False, retries=5):
    """Download url to dirname/fname; pymxnet never reaches the network from tests, so
    this only returns the path when the file is already there (and overwrite is False)."""
    fname = fname or url.split("/")[-1]
    if dirname is not None:
        os.makedirs(dirname, exist_ok=True)
        fname = os.path.join(dirname, fname)
    if os.path.exists(fname) and not overwrite:
        return fname
    return _no_download(f"download({url!r})")


def download_model(model_name, dst_dir="./", meta_info=None):
    """Download a model from MXNet's model store: not available in pymxnet."""
    return _no_download(f"download_model({model_name!r})")


def get_mnist_pkl():
    """MNIST as a pickle from the network: not available in pymxnet."""
    return _no_download("get_mnist_pkl()")


def get_mnist_ubyte():
    """MNIST ubyte files in ./data: available when get_mnist() finds local IDX files."""
    return get_mnist()


def get_cifar10():
    """CIFAR-10 from the network: not available in pymxnet."""
    return _no_download("get_cifar10()")


def get_zip_data(data_dir, url, data_origin_name):
    """A zip archive from the network: not available in pymxnet."""
    return _no_download(f"get_zip_data({url!r})")


def get_bz2_data(data_dir, data_name, url, data_origin_name):
    """A bz2 file from the network: not available in pymxnet."""
    return _no_download(f"get_bz2_data({url!r})")


def get_im2rec_path(home_env="MXNET_HOME"):
    """Path of the im2rec.py tool: pymxnet ships it as mxnet.tools.im2rec."""
    from .tools import im2rec  # noqa: F401  (raises ImportError when absent)
    return os.path.abspath(im2rec.__file__)


class DummyIter(mx.io.DataIter):
    """A DataIter that returns the first batch of real_iter forever (speed tests)."""

    def __init__(self, real_iter):
        super().__init__()
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.batch_size = real_iter.batch_size
        self.the_batch = next(real_iter)

    def __iter__(self):
        return self

    def next(self):
        return self.the_batch

    __next__ = next


class np_symbol(Symbol):
    """The class of symbols with NumPy semantics (MXNet's ``mxnet.symbol.numpy._Symbol``),
    which MXNet's test helpers test against with isinstance. pymxnet has no mx.np
    symbols yet: no symbol is an instance, and making one raises."""

    def __new__(cls, *args, **kwargs):
        raise NotImplementedError("np_symbol: symbols with NumPy semantics "
                                  "(mxnet.symbol.numpy._Symbol) are not implemented")


# Symbolic checks and random-generator statistics, re-exported under MXNet's names.
from .test_utils_symbolic import (  # noqa: E402,F401
    check_symbolic_forward, check_symbolic_backward, check_consistency, simple_forward,
    _parse_location, _parse_aux_states)
from .test_utils_stats import (  # noqa: E402,F401
    gen_buckets_probs_with_ppf, mean_check, var_check, chi_square_check, verify_generator)


def __getattr__(name):
    # ``mx.test_utils.ss`` is scipy.stats, imported on first use: importing scipy (and
    # its own BLAS) with ``import mxnet`` would cost time and threads for nothing.
    if name == "ss":
        try:
            import scipy.stats as ss
        except ImportError:  # scipy is optional: only the generator checks need it
            ss = None
        globals()["ss"] = ss
        return ss
    raise AttributeError(f"module 'mxnet.test_utils' has no attribute {name!r}")
