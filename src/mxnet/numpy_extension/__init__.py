"""``mx.npx``: MXNet's NumPy extensions — the mode switches and the neural-network
operators of NumPy mode, as front ends over the one operator registry.

``npx.set_np()`` turns on NumPy semantics (Gluon blocks then take and return
``mx.np.ndarray``); ``npx.relu``, ``npx.convolution``, ``npx.batch_norm`` ... call the
same registered operators as ``mx.nd.relu``, ``mx.nd.Convolution``, ``mx.nd.BatchNorm``
with the same parameters, and return ``mx.np.ndarray``.
"""
import numpy as _onp

from .. import ndarray as _nd
from ..context import (Context, cpu, cpu_pinned, current_context, gpu,  # noqa: F401
                       gpu_memory_info, num_gpus)
from ..ndarray.dispatch import invoke as _invoke
from ..ndarray.ndarray import NDArray
from ..ndarray.register import simple_arity
from ..numpy.multiarray import as_np, same_sequence, wrap
from ..numpy.multiarray import ndarray as np_ndarray
from ..util import get_cuda_compute_capability  # noqa: F401
from . import random  # noqa: F401
from ..util import (is_np_array, is_np_shape, reset_np, set_np,  # noqa: F401
                    set_np_array, set_np_shape, use_np)


def _front(nd_name, doc):
    """npx.<name>: mx.nd.<nd_name>'s operator, results labelled mx.np.ndarray. The
    common call (only np arrays, no keywords) goes straight to the dispatcher, as
    mx.nd's generated function does (one Python frame less than calling it)."""
    nd_fn = getattr(_nd, nd_name, None) or getattr(_nd.contrib, nd_name[len("contrib_"):])
    op = _registered_op(nd_name)
    arity = None if op is None else simple_arity(op)
    defaults = None if arity is None else op._defaults

    def fn(*args, **kwargs):
        if not kwargs and len(args) == arity:
            for a in args:
                if a.__class__ is not np_ndarray:
                    break
            else:
                out = _invoke(op, list(args), None, None, None, defaults)
                if out.__class__ is NDArray:
                    out.__class__ = np_ndarray
                    return out
                return wrap(out)
        out = nd_fn(*args, **kwargs)
        if out.__class__ is NDArray:
            out.__class__ = np_ndarray
            return out
        return wrap(out)
    fn.__doc__ = doc
    return fn


def _registered_op(nd_name):
    from ..operator.registry import get_op
    try:
        return get_op(nd_name)
    except Exception:           # a front-end-only name (no operator of that name)
        return None


# npx name -> (mx.nd operator, what it computes)
_OPERATORS = {
    "relu": ("relu", "Rectified linear unit, max(x, 0)."),
    "sigmoid": ("sigmoid", "Logistic sigmoid 1 / (1 + exp(-x))."),
    "softmax": ("softmax", "Softmax along axis (MXNet's softmax operator)."),
    "log_softmax": ("log_softmax", "Log of the softmax along axis."),
    "masked_softmax": ("masked_softmax", "Softmax with masked-out positions at zero."),
    "masked_log_softmax": ("masked_log_softmax", "Log-softmax with a mask."),
    "activation": ("Activation", "Activation(act_type=relu/sigmoid/tanh/softrelu/softsign)."),
    "leaky_relu": ("LeakyReLU", "LeakyReLU family (leaky, prelu, elu, selu, gelu)."),
    "batch_norm": ("BatchNorm", "Batch normalisation (MXNet's BatchNorm)."),
    "layer_norm": ("LayerNorm", "Layer normalisation."),
    "instance_norm": ("InstanceNorm", "Instance normalisation."),
    "group_norm": ("GroupNorm", "Group normalisation."),
    "convolution": ("Convolution", "N-d convolution (MXNet's Convolution)."),
    "deconvolution": ("Deconvolution", "Transposed convolution."),
    "pooling": ("Pooling", "Max/avg/sum/lp pooling."),
    "fully_connected": ("FullyConnected", "Dense layer: x W^T + b."),
    "dropout": ("Dropout", "Dropout (active in training mode)."),
    "embedding": ("Embedding", "Row lookup in an embedding matrix."),
    "one_hot": ("one_hot", "One-hot encoding of indices."),
    "pick": ("pick", "Elements picked along an axis by index."),
    "topk": ("topk", "Top-k values or indices along an axis."),
    "batch_dot": ("batch_dot", "Batched matrix product."),
    "batch_flatten": ("Flatten", "Collapse all axes but the first."),
    "sequence_mask": ("SequenceMask", "Mask sequence positions past their lengths."),
    "rnn": ("RNN", "Fused RNN/LSTM/GRU layers (MXNet's RNN operator)."),
    "gamma": ("gamma", "The gamma function."),
    "gammaln": ("gammaln", "Log of the absolute gamma function."),
    "erf": ("erf", "The error function."),
    "erfinv": ("erfinv", "The inverse error function."),
    "smooth_l1": ("smooth_l1", "Smooth L1 (Huber) function."),
    "arange_like": ("contrib_arange_like", "arange with another array's shape."),
    "roi_pooling": ("ROIPooling", "Region-of-interest max pooling."),
    "ctc_loss": ("CTCLoss", "Connectionist temporal classification loss."),
    "slice_channel": ("SliceChannel", "Split into equal parts along an axis."),
    "shape_array": ("shape_array", "The shape as an int64 array."),
    "stop_gradient": ("BlockGrad", "The same values, no gradient flowing back."),
    "cast": ("Cast", "Cast to dtype."),
    "gather_nd": ("gather_nd", "Elements gathered by an index array of leading coordinates."),
    "reshape_like": ("reshape_like", "Reshape (a span of) lhs like (a span of) rhs."),
    "slice": ("slice", "Slice with begin/end/step per axis."),
}

# npx name -> mx.nd.contrib operator
_CONTRIB = {
    "multibox_prior": ("MultiBoxPrior", "SSD anchor boxes for a feature map."),
    "multibox_target": ("MultiBoxTarget", "SSD training targets for anchors."),
    "multibox_detection": ("MultiBoxDetection", "SSD detections from class scores and "
                                                "box offsets."),
}


def _contrib_front(nd_name, doc):
    def fn(*args, **kwargs):
        return wrap(getattr(_nd.contrib, nd_name)(*args, **kwargs))
    fn.__doc__ = doc
    return fn


for _name, (_op, _doc) in _CONTRIB.items():
    globals()[_name] = _contrib_front(_op, _doc)

for _name, (_op, _doc) in _OPERATORS.items():
    if hasattr(_nd, _op) or hasattr(_nd.contrib, _op.replace("contrib_", "")):
        globals()[_name] = _front(_op, _doc)


def reshape(a, newshape, reverse=False, order="C"):
    """Reshape with MXNet's NumPy-extension codes (``operator.ops.np_shape.npx_target``:
    -1 infers, -2 copies an axis, -3 drops a size-1 axis, -4 copies the rest, -5 merges
    two axes, -6 splits one); ``reverse`` reads the codes right to left."""
    from ..numpy.manipulation import reshape as np_reshape
    from ..operator.ops.np_shape import npx_target
    newshape = (newshape,) if isinstance(newshape, (int, _onp.integer)) else newshape
    return np_reshape(a, npx_target(a.shape, newshape, reverse), order)


def nonzero(a):
    """The indices of a's nonzero elements as an (N, a.ndim) int64 array."""
    from ..numpy import array
    host = _onp.argwhere(_onp.atleast_1d(a.asnumpy()))   # MXNet: a 0-d array acts 1-d
    return array(host, dtype=_onp.int64, ctx=a.context)


def constraint_check(x, msg="Constraint violated"):
    """True (a bool scalar array) when every element of the bool array x holds; an
    MXNetError carrying msg otherwise."""
    from ..base import MXNetError
    if x.dtype != _onp.bool_:
        raise MXNetError(f"constraint_check: the input must be a bool array, got {x.dtype}")
    ok = bool(x.asnumpy().all())
    if not ok:
        from ..base import InvalidArgument      # an MXNetError that is a ValueError
        raise InvalidArgument(msg)
    from ..numpy import array
    return array(True, dtype=_onp.bool_, ctx=x.context)


def save(file, arr):
    """Save one array (``np.save``)."""
    from ..numpy import save as np_save
    np_save(file, arr)


def waitall():
    """Wait for all pending work (``mx.nd.waitall``)."""
    _nd.waitall()


def seed(seed, ctx="all"):
    """Seed the random generators (``mx.random.seed``)."""
    from .. import random
    random.seed(seed, ctx)


def from_numpy(ndarray, zero_copy=True):
    """An mx.np array holding a NumPy array's values."""
    from ..numpy import array
    return array(ndarray, dtype=ndarray.dtype)


def savez(file, *args, **kwds):
    """Save arrays positionally (``arr_0``, ...) or by name in MXNet's format."""
    from ..ndarray import save
    if args and kwds:
        raise ValueError("npx.savez: give arrays either positionally or by name")
    if args:
        data = {f"arr_{i}": a for i, a in enumerate(args)}
    else:
        data = dict(kwds)
    save(file, {k: (v.as_nd_ndarray() if hasattr(v, "as_nd_ndarray") else v)
                for k, v in data.items()})


def load(file):
    """Arrays saved by ``npx.savez`` / ``mx.nd.save`` as mx.np arrays."""
    from ..numpy import load as np_load
    return np_load(file)


def to_np(value):
    """NDArrays (nested in lists, tuples and dicts) as mx.np views of the same data."""
    if isinstance(value, NDArray):
        return as_np(value)
    if isinstance(value, (list, tuple)):
        return same_sequence(value, [to_np(v) for v in value])
    if isinstance(value, dict):
        return {k: to_np(v) for k, v in value.items()}
    return value


def current_device():
    return current_context()


def __getattr__(name):
    from ..numpy import NotImplementedName
    if name.startswith("_"):
        raise AttributeError(name)
    raise NotImplementedName(f"mx.npx.{name} is not implemented in pymxnet yet")


del Context
