"""mx.test_utils: comparison helpers and numeric gradient checks, as in MXNet 1.9.1.

``check_numeric_gradient`` compares the registry's backward (through autograd, or
through an executor for a Symbol) with central finite differences.
"""
import numpy as np

from .base import MXNetError
from .context import current_context

__all__ = ["default_context", "set_default_context", "default_dtype", "assert_almost_equal",
           "almost_equal", "same", "rand_ndarray", "rand_shape_nd", "rand_shape_2d",
           "rand_shape_3d", "check_numeric_gradient", "numeric_grad", "get_atol", "get_rtol",
           "assert_exception", "np_reduce", "get_mnist", "get_etol"]

_default_ctx = [None]


def default_context():
    """The context tests run on (cpu() unless set_default_context changed it)."""
    return _default_ctx[0] or current_context()


def set_default_context(ctx):
    _default_ctx[0] = ctx


def default_dtype():
    return np.float32


_RTOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}
_ATOL = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20}


def get_rtol(rtol=None, dtype=np.float32):
    return _RTOL.get(np.dtype(dtype), 1e-5) if rtol is None else rtol


def get_atol(atol=None, dtype=np.float32):
    return _ATOL.get(np.dtype(dtype), 1e-20) if atol is None else atol


def get_etol(etol=None):
    return 0 if etol is None else etol


def _as_np(a):
    from .ndarray.ndarray import NDArray
    if isinstance(a, NDArray):
        return a.asnumpy()
    return np.asarray(a)


def same(a, b):
    """True when a and b are equal element by element (and in shape)."""
    a, b = _as_np(a), _as_np(b)
    return a.shape == b.shape and np.array_equal(a, b)


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False):
    a, b = _as_np(a), _as_np(b)
    dt = np.result_type(a.dtype, b.dtype) if a.dtype.kind == "f" else np.float64
    return np.allclose(a, b, rtol=get_rtol(rtol, dt), atol=get_atol(atol, dt),
                       equal_nan=equal_nan)


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Assert |a - b| <= atol + rtol * |b| elementwise, reporting the worst element."""
    a, b = _as_np(a), _as_np(b)
    if not use_broadcast and a.shape != b.shape:
        raise AssertionError(f"shape mismatch: {names[0]} {a.shape} vs {names[1]} {b.shape}")
    dt = np.result_type(a.dtype, b.dtype)
    if dt.kind not in "fc":
        dt = np.dtype(np.float64)
    rtol, atol = get_rtol(rtol, dt), get_atol(atol, dt)
    af, bf = a.astype(np.float64), b.astype(np.float64)
    try:
        close = np.isclose(af, bf, rtol=rtol, atol=atol, equal_nan=equal_nan)
    except ValueError as err:
        raise AssertionError(f"cannot compare {names[0]} {a.shape} with {names[1]} "
                             f"{b.shape}: {err}") from None
    if close.all():
        return
    err = np.abs(af - bf) / (atol + rtol * np.abs(bf))
    err = np.where(np.isnan(err), np.inf, err)
    idx = np.unravel_index(np.argmax(err), err.shape)
    raise AssertionError(
        f"Items are not equal (rtol={rtol}, atol={atol}): {int((~close).sum())} of "
        f"{close.size} differ; worst at {tuple(int(i) for i in idx)}: "
        f"{names[0]}={af[idx]!r} {names[1]}={bf[idx]!r} (error ratio {err[idx]:.3g})")


def assert_exception(f, exception_type, *args, **kwargs):
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{exception_type.__name__} was not raised")


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return tuple(np.random.randint(low, dim + 1, size=num_dim).tolist())


def rand_shape_2d(dim0=10, dim1=10):
    return rand_shape_nd(2, max(dim0, dim1))


def rand_shape_3d(dim0=10, dim1=10, dim2=10):
    return rand_shape_nd(3, max(dim0, dim1, dim2))


def rand_ndarray(shape, stype="default", density=None, dtype=None, ctx=None, **kwargs):
    """A dense NDArray of uniform random values in [0, 1) (only 'default' storage)."""
    from .ndarray import array
    if stype != "default":
        raise MXNetError(f"rand_ndarray: storage type {stype!r} is not supported by pymxnet")
    data = np.random.uniform(size=shape).astype(dtype or np.float32)
    return array(data, ctx=ctx or default_context(), dtype=data.dtype)


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


def numeric_grad(f, inputs, out_grad_fn=None, eps=1e-4):
    """Central-difference gradient of sum(head * f(inputs)) for each numpy input.

    f maps a list of float64 numpy arrays to a list of numpy outputs; out_grad_fn gives
    the head gradient per output (ones by default).
    """
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


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=1e-3, rtol=1e-2,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=np.float64, head_grads=None,
                           **kwargs):
    """Compare analytic gradients with central finite differences.

    ``sym`` is a Symbol (MXNet's form: location is a list or dict of input arrays) or a
    Python callable taking NDArrays and returning an NDArray or list (the imperative
    form: location is a list of numpy arrays; gradients come from autograd). The
    objective is sum(head * output) over outputs with random heads, fixed per check.
    """
    if callable(sym) and not hasattr(sym, "list_arguments"):
        return _check_numeric_gradient_imperative(sym, location, numeric_eps, rtol, atol,
                                                  grad_nodes, use_forward_train, ctx,
                                                  dtype, head_grads)
    from . import test_utils_symbolic
    return test_utils_symbolic.check_numeric_gradient(
        sym, location, aux_states=aux_states, numeric_eps=numeric_eps, rtol=rtol,
        atol=atol, grad_nodes=grad_nodes, use_forward_train=use_forward_train, ctx=ctx,
        grad_stype_dict=grad_stype_dict, dtype=dtype, **kwargs)


def _check_numeric_gradient_imperative(fn, location, eps, rtol, atol, grad_nodes,
                                       train, ctx, dtype, head_grads):
    from . import autograd
    from .ndarray import array
    from .ndarray.ndarray import NDArray
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
    from .io.idx import find_mnist_dir, read_idx
    root = find_mnist_dir(path)
    def load(prefix):
        images = read_idx(root, f"{prefix}-images-idx3-ubyte")
        labels = read_idx(root, f"{prefix}-labels-idx1-ubyte")
        return (images.reshape(-1, 1, 28, 28).astype(np.float32) / 255,
                labels.astype(np.float32))
    trd, trl = load("train")
    ted, tel = load("t10k")
    return {"train_data": trd, "train_label": trl, "test_data": ted, "test_label": tel}





def __getattr__(name):
    """Symbolic helpers (check_symbolic_forward, ...) live in test_utils_symbolic."""
    if not name.startswith("__"):
        try:
            from . import test_utils_symbolic
            return getattr(test_utils_symbolic, name)
        except (ImportError, AttributeError):
            pass
    raise AttributeError(f"module 'mxnet.test_utils' has no attribute {name!r}")
