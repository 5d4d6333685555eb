"""ONNX operator -> MXNet symbols, one converter per ONNX op type.

A converter gets the import context ``cx`` (constant values by ONNX name, ``cx.param``
to make a parameter from a transformed constant), the ONNX node, its inputs as Symbols
(None for an omitted optional input) and its attributes as a dict; it returns the
output Symbol or a list of them.
"""
import numpy as np

from ... import symbol as sym
from ...base import MXNetError
from ...onnx.registry import ConverterTable

CONVERTERS = ConverterTable()
converts = CONVERTERS.converts


class LazyParam:
    """A constant (initializer or Constant node) that becomes a parameter variable only
    when a converter reads it as a tensor; converters that need just its value (a
    Reshape's target shape, Pad's widths) read ``cx.consts`` and create nothing."""

    def __init__(self, cx, name, value):
        self.cx, self.name, self.value = cx, name, value
        self.sym = None

    def materialize(self):
        if self.sym is None:
            self.sym = self.cx.param(self.name, self.value)
        return self.sym


def _fail(node, what):
    raise MXNetError(f"ONNX import: {node.op_type} node {node.name!r}: {what}")


def _symmetric_pads(node, pads, nd):
    if not pads:
        return (0,) * nd
    begin, end = list(pads[:nd]), list(pads[nd:])
    if begin != end:
        _fail(node, f"asymmetric pads {pads} have no MXNet form")
    return tuple(int(p) for p in begin)


def _check_auto_pad(node, attrs):
    auto = attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto not in ("NOTSET", "VALID"):
        _fail(node, f"auto_pad={auto} is not supported (export with explicit pads)")


# ------------------------------------------------------------- convolutions
@converts("Conv")
def _conv(cx, node, ins, attrs):
    _check_auto_pad(node, attrs)
    w = cx.require_const(node, 1, "the weight")
    kernel = tuple(attrs.get("kernel_shape", w.shape[2:]))
    nd = len(kernel)
    args = [ins[0], ins[1]] + ([ins[2]] if len(ins) > 2 and ins[2] is not None else [])
    return sym.Convolution(*args, kernel=kernel, stride=tuple(attrs.get("strides", (1,) * nd)),
                           dilate=tuple(attrs.get("dilations", (1,) * nd)),
                           pad=_symmetric_pads(node, attrs.get("pads"), nd),
                           num_filter=int(w.shape[0]), num_group=int(attrs.get("group", 1)),
                           no_bias=len(args) == 2, name=cx.unique(node.name or "conv"))


@converts("ConvTranspose")
def _conv_transpose(cx, node, ins, attrs):
    _check_auto_pad(node, attrs)
    w = cx.require_const(node, 1, "the weight")
    kernel = tuple(attrs.get("kernel_shape", w.shape[2:]))
    nd = len(kernel)
    group = int(attrs.get("group", 1))
    args = [ins[0], ins[1]] + ([ins[2]] if len(ins) > 2 and ins[2] is not None else [])
    extra = {}
    if "output_shape" in attrs:
        extra["target_shape"] = tuple(attrs["output_shape"][-nd:])
    return sym.Deconvolution(*args, kernel=kernel,
                             stride=tuple(attrs.get("strides", (1,) * nd)),
                             dilate=tuple(attrs.get("dilations", (1,) * nd)),
                             pad=_symmetric_pads(node, attrs.get("pads"), nd),
                             adj=tuple(attrs.get("output_padding", (0,) * nd)),
                             num_filter=int(w.shape[1]) * group, num_group=group,
                             no_bias=len(args) == 2, name=cx.unique(node.name or "deconv"),
                             **extra)


@converts("Gemm")
def _gemm(cx, node, ins, attrs):
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    a = ins[0]
    if attrs.get("transA", 0):
        a = sym.transpose(a)
    b = cx.const(node.input[1])
    c = cx.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if b is not None and (c is not None or len(node.input) < 3 or not node.input[2]):
        weight = (b if attrs.get("transB", 0) else b.T) * alpha
        name = cx.unique(node.name or "gemm")
        args = [a, cx.param(f"{name}_weight", weight)]
        if c is not None:
            bias = np.broadcast_to(c * beta, (weight.shape[0],)).copy()
            args.append(cx.param(f"{name}_bias", bias))
        return sym.FullyConnected(*args, num_hidden=int(weight.shape[0]), no_bias=c is None,
                                  flatten=True, name=name)
    y = sym.dot(a, ins[1], transpose_b=bool(attrs.get("transB", 0)))
    if alpha != 1.0:
        y = y * alpha
    if len(ins) > 2 and ins[2] is not None:
        y = sym.broadcast_add(y, ins[2] * beta if beta != 1.0 else ins[2])
    return y


@converts("MatMul")
def _matmul(cx, node, ins, attrs):
    b = cx.const(node.input[1])
    if b is not None and b.ndim == 2:
        name = cx.unique(node.name or "matmul")
        return sym.FullyConnected(ins[0], cx.param(f"{name}_weight", b.T), no_bias=True,
                                  num_hidden=int(b.shape[1]), flatten=False, name=name)
    return _matmul_dynamic(node, ins)


def _matmul_dynamic(node, ins):
    # ranks are not known here; MXNet's batch_dot covers the 3-d case ONNX models use
    # between two computed tensors (attention scores), dot the 2-d one.
    try:
        return sym.batch_dot(ins[0], ins[1])
    except MXNetError as err:
        _fail(node, f"cannot map MatMul of two computed tensors: {err}")


@converts("BatchNormalization")
def _batch_norm(cx, node, ins, attrs):
    return sym.BatchNorm(ins[0], ins[1], ins[2], ins[3], ins[4],
                         eps=float(attrs.get("epsilon", 1e-5)),
                         momentum=float(attrs.get("momentum", 0.9)), fix_gamma=False,
                         use_global_stats=True, name=cx.unique(node.name or "batchnorm"))


@converts("InstanceNormalization")
def _instance_norm(cx, node, ins, attrs):
    return sym.InstanceNorm(ins[0], ins[1], ins[2], eps=float(attrs.get("epsilon", 1e-5)),
                            name=cx.unique(node.name or "instancenorm"))


@converts("LRN")
def _lrn(cx, node, ins, attrs):
    return sym.LRN(ins[0], nsize=int(attrs["size"]), alpha=float(attrs.get("alpha", 1e-4)),
                   beta=float(attrs.get("beta", 0.75)), knorm=float(attrs.get("bias", 1.0)),
                   name=cx.unique(node.name or "lrn"))


# ------------------------------------------------------------------- pooling
def _pool(kind):
    def convert(cx, node, ins, attrs):
        _check_auto_pad(node, attrs)
        kernel = tuple(attrs["kernel_shape"])
        nd = len(kernel)
        extra = {}
        if kind == "avg":
            extra["count_include_pad"] = bool(attrs.get("count_include_pad", 0))
        if kind == "lp":
            extra["p_value"] = int(attrs.get("p", 2))
        return sym.Pooling(ins[0], kernel=kernel, pool_type=kind,
                           stride=tuple(attrs.get("strides", (1,) * nd)),
                           pad=_symmetric_pads(node, attrs.get("pads"), nd),
                           pooling_convention="full" if attrs.get("ceil_mode", 0) else "valid",
                           name=cx.unique(node.name or "pool"), **extra)
    return convert


CONVERTERS["MaxPool"] = _pool("max")
CONVERTERS["AveragePool"] = _pool("avg")
CONVERTERS["LpPool"] = _pool("lp")


def _global_pool(kind):
    def convert(cx, node, ins, attrs):
        extra = {"p_value": int(attrs.get("p", 2))} if kind == "lp" else {}
        return sym.Pooling(ins[0], kernel=(1, 1), global_pool=True, pool_type=kind,
                           name=cx.unique(node.name or "pool"), **extra)
    return convert


CONVERTERS["GlobalMaxPool"] = _global_pool("max")
CONVERTERS["GlobalAveragePool"] = _global_pool("avg")
CONVERTERS["GlobalLpPool"] = _global_pool("lp")


# --------------------------------------------------------------- activations
_ACT = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Softplus": "softrelu",
        "Softsign": "softsign"}


def _activation(act):
    def convert(cx, node, ins, attrs):
        return sym.Activation(ins[0], act_type=act, name=cx.unique(node.name or act))
    return convert


for _onnx, _act in _ACT.items():
    CONVERTERS[_onnx] = _activation(_act)


@converts("LeakyRelu")
def _leaky(cx, node, ins, attrs):
    return sym.LeakyReLU(ins[0], act_type="leaky", slope=float(attrs.get("alpha", 0.01)),
                         name=cx.unique(node.name or "leaky"))


@converts("Elu")
def _elu(cx, node, ins, attrs):
    return sym.LeakyReLU(ins[0], act_type="elu", slope=float(attrs.get("alpha", 1.0)),
                         name=cx.unique(node.name or "elu"))


@converts("Selu")
def _selu(cx, node, ins, attrs):
    if abs(float(attrs.get("alpha", 1.67326)) - 1.6732632) > 1e-4 or \
            abs(float(attrs.get("gamma", 1.0507)) - 1.0507009) > 1e-4:
        _fail(node, "only SELU's standard alpha/gamma have an MXNet form")
    return sym.LeakyReLU(ins[0], act_type="selu", name=cx.unique(node.name or "selu"))


@converts("PRelu")
def _prelu(cx, node, ins, attrs):
    slope = cx.require_const(node, 1, "the slope")
    name = cx.unique(node.name or "prelu")
    return sym.LeakyReLU(ins[0], cx.param(f"{name}_gamma", slope.reshape(-1)),
                         act_type="prelu", name=name)


_UNARY = {"Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Abs": "abs", "Neg": "negative",
          "Floor": "floor", "Ceil": "ceil", "Reciprocal": "reciprocal", "Sin": "sin",
          "Cos": "cos", "Tan": "tan", "Asin": "arcsin", "Acos": "arccos", "Atan": "arctan",
          "Erf": "erf", "Sign": "sign", "Round": "round", "Not": "logical_not",
          "Identity": "identity"}


def _unary(fname):
    def convert(cx, node, ins, attrs):
        return getattr(sym, fname)(ins[0], name=cx.unique(node.name or fname))
    return convert


for _onnx, _fn in _UNARY.items():
    CONVERTERS[_onnx] = _unary(_fn)


@converts("Dropout")
def _dropout(cx, node, ins, attrs):
    # inference: identity (the mask output, if asked for, is all ones)
    out = sym.identity(ins[0], name=cx.unique(node.name or "dropout"))
    if len(node.output) > 1 and node.output[1]:
        return [out, sym.ones_like(ins[0])]
    return out


@converts("Softmax", "LogSoftmax")
def _softmax(cx, node, ins, attrs):
    axis = int(attrs.get("axis", -1 if cx.opset >= 13 else 1))
    if cx.opset < 13 and axis != -1:
        # before opset 13 Softmax flattens from axis on; exact for the common 2-d case
        pass
    fn = sym.log_softmax if node.op_type == "LogSoftmax" else sym.softmax
    return fn(ins[0], axis=axis, name=cx.unique(node.name or "softmax"))


# -------------------------------------------------------------- arithmetic
_BINARY = {"Add": "broadcast_add", "Sub": "broadcast_sub", "Mul": "broadcast_mul",
           "Div": "broadcast_div", "Pow": "broadcast_power", "Equal": "broadcast_equal",
           "Greater": "broadcast_greater", "Less": "broadcast_lesser"}


def _binary(fname):
    def convert(cx, node, ins, attrs):
        return getattr(sym, fname)(ins[0], ins[1], name=cx.unique(node.name or fname))
    return convert


for _onnx, _fn in _BINARY.items():
    CONVERTERS[_onnx] = _binary(_fn)


def _nary(fname):
    def convert(cx, node, ins, attrs):
        out = ins[0]
        for other in ins[1:]:
            out = getattr(sym, fname)(out, other)
        return out
    return convert


CONVERTERS["Max"] = _nary("broadcast_maximum")
CONVERTERS["Min"] = _nary("broadcast_minimum")


@converts("Sum")
def _sum(cx, node, ins, attrs):
    return _nary("broadcast_add")(cx, node, ins, attrs)


@converts("Mean")
def _mean(cx, node, ins, attrs):
    return _nary("broadcast_add")(cx, node, ins, attrs) / len(ins)


@converts("Clip")
def _clip(cx, node, ins, attrs):
    if cx.opset >= 11:
        lo = cx.const(node.input[1]) if len(node.input) > 1 and node.input[1] else None
        hi = cx.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if (len(node.input) > 1 and node.input[1] and lo is None) or \
                (len(node.input) > 2 and node.input[2] and hi is None):
            _fail(node, "min/max must be constants")
    else:
        lo, hi = attrs.get("min"), attrs.get("max")
    lo = -np.inf if lo is None else float(lo)
    hi = np.inf if hi is None else float(hi)
    return sym.clip(ins[0], a_min=lo, a_max=hi, name=cx.unique(node.name or "clip"))


@converts("Cast")
def _cast(cx, node, ins, attrs):
    from onnx import helper
    dtype = helper.tensor_dtype_to_np_dtype(attrs["to"])
    if dtype == np.bool_:
        dtype = np.dtype(np.uint8)
    return sym.Cast(ins[0], dtype=np.dtype(dtype).name, name=cx.unique(node.name or "cast"))


# ---------------------------------------------------------------- shape ops
@converts("Flatten")
def _flatten(cx, node, ins, attrs):
    axis = int(attrs.get("axis", 1))
    if axis == 1:
        return sym.Flatten(ins[0], name=cx.unique(node.name or "flatten"))
    if axis == 0:
        return sym.reshape(ins[0], shape=(1, -1))
    # keep the leading axes, merge the rest: MXNet's -3 code merges two axes at a time
    _fail(node, f"Flatten with axis={axis} is not supported")


@converts("Reshape")
def _reshape(cx, node, ins, attrs):
    shape = cx.require_const(node, 1, "the target shape")
    if attrs.get("allowzero", 0) and 0 in shape:
        _fail(node, "allowzero=1 with a zero in the shape has no MXNet form")
    return sym.reshape(ins[0], shape=tuple(int(d) for d in shape),
                       name=cx.unique(node.name or "reshape"))


@converts("Transpose")
def _transpose(cx, node, ins, attrs):
    perm = attrs.get("perm")
    return sym.transpose(ins[0], axes=tuple(perm) if perm is not None else (),
                         name=cx.unique(node.name or "transpose"))


def _axes(cx, node, attrs, position):
    if "axes" in attrs:
        return [int(a) for a in attrs["axes"]]
    if len(node.input) > position and node.input[position]:
        return [int(a) for a in cx.require_const(node, position, "axes")]
    return None


@converts("Squeeze")
def _squeeze(cx, node, ins, attrs):
    axes = _axes(cx, node, attrs, 1)
    return sym.squeeze(ins[0], axis=tuple(axes) if axes else None,
                       name=cx.unique(node.name or "squeeze"))


@converts("Unsqueeze")
def _unsqueeze(cx, node, ins, attrs):
    axes = _axes(cx, node, attrs, 1)
    if not axes:
        _fail(node, "axes are required")
    out = ins[0]
    for a in sorted(axes):
        out = sym.expand_dims(out, axis=a)
    return out


@converts("Concat")
def _concat(cx, node, ins, attrs):
    return sym.concat(*ins, dim=int(attrs.get("axis", 1)), name=cx.unique(node.name or "concat"))


@converts("Split")
def _split(cx, node, ins, attrs):
    axis = int(attrs.get("axis", 0))
    sizes = attrs.get("split")
    if sizes is None and len(node.input) > 1 and node.input[1]:
        sizes = cx.require_const(node, 1, "split sizes")
    count = len(node.output)
    if sizes is not None and len(set(int(s) for s in sizes)) > 1:
        outs, start = [], 0
        for s in sizes:
            outs.append(sym.slice_axis(ins[0], axis=axis, begin=start, end=start + int(s)))
            start += int(s)
        return outs
    parts = sym.split(ins[0], num_outputs=count, axis=axis,
                      name=cx.unique(node.name or "split"))
    return [parts[i] for i in range(count)] if count > 1 else [parts]


@converts("Slice")
def _slice(cx, node, ins, attrs):
    if cx.opset >= 10:
        starts = cx.require_const(node, 1, "starts")
        ends = cx.require_const(node, 2, "ends")
        axes = cx.const(node.input[3]) if len(node.input) > 3 and node.input[3] else None
        steps = cx.const(node.input[4]) if len(node.input) > 4 and node.input[4] else None
    else:
        starts, ends = attrs["starts"], attrs["ends"]
        axes, steps = attrs.get("axes"), None
    axes = list(range(len(starts))) if axes is None else [int(a) for a in axes]
    steps = [1] * len(starts) if steps is None else [int(s) for s in steps]
    out = ins[0]
    big = 2 ** 62
    for a, b, e, s in zip(axes, starts, ends, steps):
        if s != 1:
            _fail(node, "steps other than 1 are not supported")
        b, e = int(b), int(e)
        out = sym.slice_axis(out, axis=a, begin=b, end=None if e >= big else e)
    return out


def _reduce(fname):
    def convert(cx, node, ins, attrs):
        axes = _axes(cx, node, attrs, 1)
        if axes is None and attrs.get("noop_with_empty_axes", 0):
            return sym.identity(ins[0])
        return getattr(sym, fname)(ins[0], axis=tuple(axes) if axes else None,
                                   keepdims=bool(attrs.get("keepdims", 1)),
                                   name=cx.unique(node.name or fname))
    return convert


for _onnx, _fn in {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max",
                   "ReduceMin": "min", "ReduceProd": "prod"}.items():
    CONVERTERS[_onnx] = _reduce(_fn)


@converts("Gather")
def _gather(cx, node, ins, attrs):
    axis = int(attrs.get("axis", 0))
    return sym.take(ins[0], ins[1], axis=axis, mode="wrap" if axis else "clip",
                    name=cx.unique(node.name or "gather"))


@converts("Where")
def _where(cx, node, ins, attrs):
    return sym.where(ins[0], ins[1], ins[2], name=cx.unique(node.name or "where"))


@converts("Pad")
def _pad(cx, node, ins, attrs):
    pads = attrs.get("pads")
    if pads is None:
        pads = cx.require_const(node, 1, "pads")
    value = 0.0
    if len(node.input) > 2 and node.input[2]:
        value = float(cx.require_const(node, 2, "the constant value"))
    elif "value" in attrs:
        value = float(attrs["value"])
    mode = attrs.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    nd = len(pads) // 2
    width = []
    for b, e in zip(pads[:nd], pads[nd:]):
        width += [int(b), int(e)]
    return sym.pad(ins[0], mode=mode, pad_width=tuple(width), constant_value=value,
                   name=cx.unique(node.name or "pad"))


@converts("Resize", "Upsample")
def _resize(cx, node, ins, attrs):
    mode = attrs.get("mode", b"nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode != "nearest":
        _fail(node, f"mode={mode} is not supported (nearest only)")
    scales = None
    for i in ((2,) if node.op_type == "Resize" else (1,)):
        if len(node.input) > i and node.input[i]:
            scales = cx.const(node.input[i])
    if scales is None or len(scales) < 3 or len(set(scales[2:])) != 1 or \
            float(scales[2]) != int(scales[2]):
        _fail(node, "only equal integer scales on the spatial axes are supported")
    return sym.UpSampling(ins[0], scale=int(scales[2]), sample_type="nearest", num_args=1,
                          name=cx.unique(node.name or "upsampling"))


@converts("Constant")
def _constant(cx, node, ins, attrs):
    from onnx import numpy_helper
    if "value" not in attrs:
        _fail(node, "only tensor-valued Constant nodes are supported")
    value = numpy_helper.to_array(attrs["value"])
    cx.consts[node.output[0]] = value
    return LazyParam(cx, node.output[0], value)


# ----------------------------------------------------------------------- RNN
_GATES = {"LSTM": ("lstm", 4, [0, 2, 3, 1]),    # ONNX i,o,f,c -> MXNet i,f,c,o
          "GRU": ("gru", 3, [1, 0, 2]),         # ONNX z,r,h  -> MXNet r,z,n
          "RNN": (None, 1, [0])}


@converts("LSTM", "GRU", "RNN")
def _rnn(cx, node, ins, attrs):
    mode, ngates, order = _GATES[node.op_type]
    if node.op_type == "RNN":
        acts = [a.decode() if isinstance(a, bytes) else a
                for a in attrs.get("activations", [b"Tanh"])]
        if len(set(acts)) != 1 or acts[0] not in ("Tanh", "Relu"):
            _fail(node, f"activations {acts} have no MXNet form")
        mode = "rnn_tanh" if acts[0] == "Tanh" else "rnn_relu"
    if attrs.get("layout", 0):
        _fail(node, "layout=1 is not supported")
    if node.op_type == "GRU" and not attrs.get("linear_before_reset", 0):
        _fail(node, "GRU needs linear_before_reset=1 (MXNet's cuDNN-style GRU)")
    if len(node.input) > 4 and node.input[4]:
        _fail(node, "sequence_lens is not supported")
    W = cx.require_const(node, 1, "W")
    R = cx.require_const(node, 2, "R")
    dirs, gh, in_size = W.shape
    hidden = int(attrs.get("hidden_size", R.shape[-1]))
    B = cx.const(node.input[3]) if len(node.input) > 3 and node.input[3] else \
        np.zeros((dirs, 2 * gh), W.dtype)

    def reorder(a):
        blocks = np.split(a, ngates, axis=0)
        return np.concatenate([blocks[i] for i in order], axis=0)

    weights = [reorder(m).ravel() for d in range(dirs) for m in (W[d], R[d])]
    biases = [reorder(b) for d in range(dirs) for b in (B[d][:gh], B[d][gh:])]
    name = cx.unique(node.name or mode)
    flat = cx.param(f"{name}_parameters", np.concatenate(weights + biases))
    states = []
    for pos in ((5, 6) if mode == "lstm" else (5,)):
        if len(node.input) > pos and node.input[pos]:
            states.append(ins[pos])
        else:
            states.append(sym.zeros(shape=(dirs, 0, hidden), dtype=W.dtype))
    rnn = sym.RNN(ins[0], flat, *states, state_size=hidden, num_layers=1,
                  bidirectional=dirs == 2, mode=mode, state_outputs=True, name=name)
    # MXNet: (T, N, D*H); ONNX Y: (T, D, N, H)
    y = sym.transpose(sym.reshape(rnn[0], shape=(0, 0, dirs, hidden)), axes=(0, 2, 1, 3))
    outs = [y, rnn[1]]
    if mode == "lstm":
        outs.append(rnn[2])
    return outs
