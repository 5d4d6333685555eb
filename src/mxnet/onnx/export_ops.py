"""MXNet operator -> ONNX nodes (opset 13), one converter per operator.

A converter receives the export context ``cx`` (``cx.add`` appends an ONNX node,
``cx.const`` an initializer) and ``n``, the MXNet node (``n.p`` its parsed parameters,
``n.ins``/``n.outs`` ONNX tensor names, ``n.in_shapes``/``n.out_shapes`` inferred
shapes, ``n.const(i)`` an input's value when it is a constant). It writes
``n.outs[0]`` (and further visible outputs) with inference semantics.
"""
import numpy as np

from ..base import MXNetError
from .registry import ConverterTable

OPSET = 13
CONVERTERS = ConverterTable()
converts = CONVERTERS.converts


def _i64(values):
    return np.asarray(values, dtype=np.int64)


def _spatial(values, nd, default):
    values = tuple(values) if values else ()
    return list(values) if values else [default] * nd


def _pads(pad, nd):
    pad = _spatial(pad, nd, 0)
    return pad + pad


# --------------------------------------------------------------- convolution family
@converts("Convolution")
def _convolution(cx, n):
    p = n.p
    nd = len(p.kernel)
    ins = n.ins[:2] if p.no_bias else n.ins[:3]
    cx.add("Conv", ins, n.outs[0], name=n.name, kernel_shape=list(p.kernel),
           strides=_spatial(p.stride, nd, 1), dilations=_spatial(p.dilate, nd, 1),
           pads=_pads(p.pad, nd), group=int(p.num_group))


@converts("Deconvolution")
def _deconvolution(cx, n):
    p = n.p
    nd = len(p.kernel)
    ins = n.ins[:2] if p.no_bias else n.ins[:3]
    attrs = dict(kernel_shape=list(p.kernel), strides=_spatial(p.stride, nd, 1),
                 dilations=_spatial(p.dilate, nd, 1), group=int(p.num_group))
    if p.target_shape:
        attrs["output_shape"] = list(n.out_shapes[0][2:])
    else:
        attrs["pads"] = _pads(p.pad, nd)
        attrs["output_padding"] = _spatial(p.adj, nd, 0)
    cx.add("ConvTranspose", ins, n.outs[0], name=n.name, **attrs)


@converts("FullyConnected")
def _fully_connected(cx, n):
    p = n.p
    data = n.ins[0]
    if p.flatten:
        if len(n.in_shapes[0]) != 2:
            data = cx.add("Flatten", [data], name=f"{n.name}_flatten", axis=1)[0]
        ins = [data, n.ins[1]] + ([] if p.no_bias else [n.ins[2]])
        cx.add("Gemm", ins, n.outs[0], name=n.name, transB=1)
        return
    weight = n.const(1)
    if weight is not None:
        w_t = cx.const(f"{n.name}_weight_t", weight.T)
    else:
        w_t = cx.add("Transpose", [n.ins[1]], name=f"{n.name}_wt", perm=[1, 0])[0]
    if p.no_bias:
        cx.add("MatMul", [data, w_t], n.outs[0], name=n.name)
    else:
        y = cx.add("MatMul", [data, w_t], name=f"{n.name}_matmul")[0]
        cx.add("Add", [y, n.ins[2]], n.outs[0], name=n.name)


@converts("Pooling")
def _pooling(cx, n):
    p = n.p
    nd = len(n.in_shapes[0]) - 2
    kind = p.pool_type
    if kind not in ("max", "avg", "lp", "sum"):
        raise MXNetError(f"export_model: Pooling pool_type={kind!r} has no ONNX form")
    if p.global_pool:
        op = {"max": "GlobalMaxPool", "avg": "GlobalAveragePool", "lp": "GlobalLpPool"}.get(kind)
        if op is None:
            raise MXNetError("export_model: global sum pooling has no ONNX form")
        attrs = {"p": int(p.p_value or 2)} if kind == "lp" else {}
        cx.add(op, [n.ins[0]], n.outs[0], name=n.name, **attrs)
        return
    kernel = list(p.kernel)
    attrs = dict(kernel_shape=kernel, strides=_spatial(p.stride, nd, 1),
                 pads=_pads(p.pad, nd))
    full = p.pooling_convention == "full"
    if p.pooling_convention not in ("valid", "full"):
        raise MXNetError(f"export_model: Pooling pooling_convention="
                         f"{p.pooling_convention!r} has no ONNX form")
    if kind == "max":
        cx.add("MaxPool", [n.ins[0]], n.outs[0], name=n.name, ceil_mode=int(full), **attrs)
    elif kind == "lp":
        cx.add("LpPool", [n.ins[0]], n.outs[0], name=n.name, p=int(p.p_value or 2), **attrs)
    else:
        include = 1 if p.count_include_pad in (None, True) else 0
        if kind == "sum":
            include = 1
        out = n.outs[0] if kind == "avg" else cx.unique(f"{n.name}_avg")
        cx.add("AveragePool", [n.ins[0]], out, name=n.name, ceil_mode=int(full),
               count_include_pad=include, **attrs)
        if kind == "sum":
            scale = cx.const(f"{n.name}_window", np.asarray(np.prod(kernel), n.out_dtypes[0]))
            cx.add("Mul", [out, scale], n.outs[0], name=f"{n.name}_sum")


@converts("BatchNorm")
def _batch_norm(cx, n):
    p = n.p
    if p.axis != 1:
        raise MXNetError("export_model: BatchNorm with axis != 1 has no ONNX form")
    gamma = n.ins[1]
    if p.fix_gamma:
        gamma = cx.const(f"{n.name}_gamma_ones",
                         np.ones(n.in_shapes[1], dtype=n.in_dtypes[1]))
    cx.add("BatchNormalization", [n.ins[0], gamma, n.ins[2], n.ins[3], n.ins[4]], n.outs[0],
           name=n.name, epsilon=float(p.eps), momentum=float(p.momentum))


@converts("InstanceNorm")
def _instance_norm(cx, n):
    cx.add("InstanceNormalization", n.ins[:3], n.outs[0], name=n.name, epsilon=float(n.p.eps))


@converts("LayerNorm")
def _layer_norm(cx, n):
    # opset 13 has no LayerNormalization: normalise over the axis, then scale and shift.
    axis = n.p.axis % len(n.in_shapes[0])
    x = n.ins[0]
    mean = cx.add("ReduceMean", [x], name=f"{n.name}_mean", axes=[axis], keepdims=1)[0]
    centred = cx.add("Sub", [x, mean], name=f"{n.name}_centre")[0]
    sq = cx.add("Mul", [centred, centred], name=f"{n.name}_sq")[0]
    var = cx.add("ReduceMean", [sq], name=f"{n.name}_var", axes=[axis], keepdims=1)[0]
    eps = cx.const(f"{n.name}_eps", np.asarray(n.p.eps, n.in_dtypes[0]))
    std = cx.add("Sqrt", [cx.add("Add", [var, eps], name=f"{n.name}_vareps")[0]],
                 name=f"{n.name}_std")[0]
    normed = cx.add("Div", [centred, std], name=f"{n.name}_norm")[0]
    shape = [1] * len(n.in_shapes[0])
    shape[axis] = n.in_shapes[0][axis]
    gamma = _reshaped(cx, n, 1, shape)
    beta = _reshaped(cx, n, 2, shape)
    scaled = cx.add("Mul", [normed, gamma], name=f"{n.name}_scale")[0]
    cx.add("Add", [scaled, beta], n.outs[0], name=n.name)


def _reshaped(cx, n, i, shape):
    value = n.const(i)
    if value is not None:
        return cx.const(f"{n.name}_in{i}_reshaped", value.reshape(shape))
    target = cx.const(f"{n.name}_in{i}_shape", _i64(shape))
    return cx.add("Reshape", [n.ins[i], target], name=f"{n.name}_in{i}_reshape")[0]


@converts("LRN")
def _lrn(cx, n):
    p = n.p
    cx.add("LRN", [n.ins[0]], n.outs[0], name=n.name, size=int(p.nsize), alpha=float(p.alpha),
           beta=float(p.beta), bias=float(p.knorm))


@converts("L2Normalization")
def _l2_normalization(cx, n):
    p = n.p
    if p.mode != "channel":
        axes = list(range(1, len(n.in_shapes[0]))) if p.mode == "instance" else None
        if axes is None:
            raise MXNetError(f"export_model: L2Normalization mode={p.mode!r} has no "
                             "ONNX form")
    else:
        axes = [1]
    x = n.ins[0]
    sq = cx.add("Mul", [x, x], name=f"{n.name}_sq")[0]
    s = cx.add("ReduceSum", [sq, cx.const(f"{n.name}_axes", _i64(axes))],
               name=f"{n.name}_sum", keepdims=1)[0]
    eps = cx.const(f"{n.name}_eps", np.asarray(p.eps, n.in_dtypes[0]))
    norm = cx.add("Sqrt", [cx.add("Add", [s, eps], name=f"{n.name}_addeps")[0]],
                  name=f"{n.name}_norm")[0]
    cx.add("Div", [x, norm], n.outs[0], name=n.name)


# ----------------------------------------------------------------- activations
_ACTIVATIONS = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh",
                "softrelu": "Softplus", "softsign": "Softsign"}


@converts("Activation")
def _activation(cx, n):
    op = _ACTIVATIONS.get(n.p.act_type)
    if op is None:
        raise MXNetError(f"export_model: Activation act_type={n.p.act_type!r} has no ONNX "
                         "form")
    cx.add(op, [n.ins[0]], n.outs[0], name=n.name)


@converts("LeakyReLU")
def _leaky_relu(cx, n):
    p = n.p
    kind = p.act_type
    if kind == "leaky":
        cx.add("LeakyRelu", [n.ins[0]], n.outs[0], name=n.name, alpha=float(p.slope))
    elif kind == "rrelu":          # inference: the mean slope
        cx.add("LeakyRelu", [n.ins[0]], n.outs[0], name=n.name,
               alpha=float((p.lower_bound + p.upper_bound) / 2))
    elif kind == "elu":
        cx.add("Elu", [n.ins[0]], n.outs[0], name=n.name, alpha=float(p.slope))
    elif kind == "selu":
        cx.add("Selu", [n.ins[0]], n.outs[0], name=n.name)
    elif kind == "prelu":
        shape = [1] * len(n.in_shapes[0])
        if n.in_shapes[1][0] > 1:
            shape[1] = n.in_shapes[1][0]
        cx.add("PRelu", [n.ins[0], _reshaped(cx, n, 1, shape[1:])], n.outs[0], name=n.name)
    elif kind == "gelu":
        # 0.5 x (1 + erf(x / sqrt 2)): opset 13 has no Gelu node
        dt = n.in_dtypes[0]
        x = n.ins[0]
        scaled = cx.add("Mul", [x, cx.const(f"{n.name}_rsqrt2", np.asarray(2 ** -0.5, dt))],
                        name=f"{n.name}_scale")[0]
        erf = cx.add("Erf", [scaled], name=f"{n.name}_erf")[0]
        one = cx.add("Add", [erf, cx.const(f"{n.name}_one", np.asarray(1, dt))],
                     name=f"{n.name}_plus1")[0]
        half = cx.add("Mul", [x, cx.const(f"{n.name}_half", np.asarray(0.5, dt))],
                      name=f"{n.name}_half")[0]
        cx.add("Mul", [half, one], n.outs[0], name=n.name)
    else:
        raise MXNetError(f"export_model: LeakyReLU act_type={kind!r} has no ONNX form")


_UNARY = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log",
          "sqrt": "Sqrt", "abs": "Abs", "negative": "Neg", "floor": "Floor", "ceil": "Ceil",
          "reciprocal": "Reciprocal", "sin": "Sin", "cos": "Cos", "erf": "Erf",
          "softsign": "Softsign", "sign": "Sign", "round": "Round", "tan": "Tan",
          "arcsin": "Asin", "arccos": "Acos", "arctan": "Atan", "logical_not": "Not",
          "_copy": "Identity", "identity": "Identity", "BlockGrad": "Identity",
          "stop_gradient": "Identity", "Dropout": "Identity", "make_loss": "Identity",
          "MakeLoss": "Identity"}


def _unary_converter(onnx_op):
    def convert(cx, n):
        cx.add(onnx_op, [n.ins[0]], n.outs[0], name=n.name)
    return convert


for _name, _op in _UNARY.items():
    CONVERTERS[_name] = _unary_converter(_op)


@converts("square")
def _square(cx, n):
    cx.add("Mul", [n.ins[0], n.ins[0]], n.outs[0], name=n.name)


@converts("rsqrt")
def _rsqrt(cx, n):
    r = cx.add("Sqrt", [n.ins[0]], name=f"{n.name}_sqrt")[0]
    cx.add("Reciprocal", [r], n.outs[0], name=n.name)


@converts("softmax", "log_softmax", "SoftmaxActivation", "SoftmaxOutput", "Softmax")
def _softmax(cx, n):
    p, rank = n.p, len(n.in_shapes[0])
    name = n.op_name
    op = "LogSoftmax" if name == "log_softmax" else "Softmax"
    if name in ("softmax", "log_softmax"):
        if p.get("use_length"):
            raise MXNetError("export_model: softmax(use_length=True) has no ONNX form")
        axis = p.axis
        x = n.ins[0]
        if p.get("temperature") not in (None, 1.0):
            t = cx.const(f"{n.name}_temperature", np.asarray(p.temperature, n.in_dtypes[0]))
            x = cx.add("Div", [x, t], name=f"{n.name}_temp")[0]
        cx.add(op, [x], n.outs[0], name=n.name, axis=int(axis))
        return
    if name == "SoftmaxActivation":
        axis = 1 if p.mode == "channel" else -1
        if p.mode != "channel" and rank > 2:
            return _softmax_flat(cx, n)
        cx.add(op, [n.ins[0]], n.outs[0], name=n.name, axis=axis)
        return
    # SoftmaxOutput at inference: softmax over the class axis
    if p.multi_output:
        cx.add(op, [n.ins[0]], n.outs[0], name=n.name, axis=1)
    elif rank == 2 or p.preserve_shape:
        cx.add(op, [n.ins[0]], n.outs[0], name=n.name, axis=-1)
    else:
        _softmax_flat(cx, n)


def _softmax_flat(cx, n):
    flat = cx.add("Flatten", [n.ins[0]], name=f"{n.name}_flatten", axis=1)[0]
    sm = cx.add("Softmax", [flat], name=f"{n.name}_softmax", axis=-1)[0]
    _reshape_to(cx, n, sm, n.out_shapes[0], n.outs[0])


# ------------------------------------------------------------------- arithmetic
_BINARY = {"elemwise_add": "Add", "_plus": "Add", "_Plus": "Add", "broadcast_add": "Add",
           "broadcast_plus": "Add", "_add": "Add",
           "elemwise_sub": "Sub", "_minus": "Sub", "_Minus": "Sub", "broadcast_sub": "Sub",
           "broadcast_minus": "Sub", "_sub": "Sub",
           "elemwise_mul": "Mul", "_mul": "Mul", "_Mul": "Mul", "broadcast_mul": "Mul",
           "elemwise_div": "Div", "_div": "Div", "_Div": "Div", "broadcast_div": "Div",
           "_power": "Pow", "_Power": "Pow", "broadcast_power": "Pow",
           "_maximum": "Max", "_Maximum": "Max", "broadcast_maximum": "Max",
           "_minimum": "Min", "_Minimum": "Min", "broadcast_minimum": "Min",
           "broadcast_equal": "Equal", "_equal": "Equal",
           "broadcast_greater": "Greater", "_greater": "Greater",
           "broadcast_lesser": "Less", "_lesser": "Less"}
_COMPARISONS = {"Equal", "Greater", "Less"}


def _binary_converter(onnx_op):
    def convert(cx, n):
        if onnx_op in _COMPARISONS:      # MXNet returns 0/1 in the input dtype
            b = cx.add(onnx_op, n.ins[:2], name=f"{n.name}_bool")[0]
            cx.add("Cast", [b], n.outs[0], name=n.name, to=_onnx_type(n.out_dtypes[0]))
        else:
            cx.add(onnx_op, n.ins[:2], n.outs[0], name=n.name)
    return convert


for _name, _op in _BINARY.items():
    CONVERTERS[_name] = _binary_converter(_op)

# scalar forms: (ONNX op, scalar on the left)
_SCALAR = {"_plus_scalar": ("Add", False), "_PlusScalar": ("Add", False),
           "_minus_scalar": ("Sub", False), "_MinusScalar": ("Sub", False),
           "_rminus_scalar": ("Sub", True), "_RMinusScalar": ("Sub", True),
           "_mul_scalar": ("Mul", False), "_MulScalar": ("Mul", False),
           "_div_scalar": ("Div", False), "_DivScalar": ("Div", False),
           "_rdiv_scalar": ("Div", True), "_RDivScalar": ("Div", True),
           "_power_scalar": ("Pow", False), "_PowerScalar": ("Pow", False),
           "_rpower_scalar": ("Pow", True), "_RPowerScalar": ("Pow", True),
           "_maximum_scalar": ("Max", False), "_MaximumScalar": ("Max", False),
           "_minimum_scalar": ("Min", False), "_MinimumScalar": ("Min", False)}


def _scalar_converter(onnx_op, left):
    def convert(cx, n):
        s = cx.const(f"{n.name}_scalar", np.asarray(n.p.scalar, dtype=n.in_dtypes[0]))
        ins = [s, n.ins[0]] if left else [n.ins[0], s]
        cx.add(onnx_op, ins, n.outs[0], name=n.name)
    return convert


for _name, (_op, _left) in _SCALAR.items():
    CONVERTERS[_name] = _scalar_converter(_op, _left)


@converts("add_n", "ElementWiseSum")
def _add_n(cx, n):
    cx.add("Sum", n.ins, n.outs[0], name=n.name)


@converts("clip")
def _clip(cx, n):
    dt = n.in_dtypes[0]
    lo = cx.const(f"{n.name}_min", np.asarray(n.p.a_min, dt))
    hi = cx.const(f"{n.name}_max", np.asarray(n.p.a_max, dt))
    cx.add("Clip", [n.ins[0], lo, hi], n.outs[0], name=n.name)


@converts("dot")
def _dot(cx, n):
    p = n.p
    a, b = n.ins[:2]
    if len(n.in_shapes[0]) != 2 or len(n.in_shapes[1]) != 2:
        if p.transpose_a or p.transpose_b:
            raise MXNetError("export_model: dot with transpose on inputs of rank > 2 has "
                             "no ONNX form here")
        # MXNet's dot contracts a's last axis with b's first: flatten, matmul, reshape
        sa, sb = n.in_shapes
        a2 = _reshape_to(cx, n, a, (int(np.prod(sa[:-1])), sa[-1]), None, "a2")
        b2 = _reshape_to(cx, n, b, (sb[0], int(np.prod(sb[1:]))), None, "b2")
        y = cx.add("MatMul", [a2, b2], name=f"{n.name}_matmul")[0]
        _reshape_to(cx, n, y, n.out_shapes[0], n.outs[0])
        return
    if p.transpose_a:
        a = cx.add("Transpose", [a], name=f"{n.name}_ta", perm=[1, 0])[0]
    if p.transpose_b:
        b = cx.add("Transpose", [b], name=f"{n.name}_tb", perm=[1, 0])[0]
    cx.add("MatMul", [a, b], n.outs[0], name=n.name)


@converts("batch_dot")
def _batch_dot(cx, n):
    p = n.p
    a, b = n.ins[:2]
    rank = len(n.in_shapes[0])
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    if p.transpose_a:
        a = cx.add("Transpose", [a], name=f"{n.name}_ta", perm=perm)[0]
    if p.transpose_b:
        b = cx.add("Transpose", [b], name=f"{n.name}_tb", perm=perm)[0]
    cx.add("MatMul", [a, b], n.outs[0], name=n.name)


# ---------------------------------------------------------------- shape ops
def _onnx_type(dtype):
    from onnx import helper
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _reshape_to(cx, n, tensor, shape, out, tag="reshape"):
    """Reshape tensor to a static shape; the batch axis stays dynamic (0 = copy) when
    the model's batch is dynamic and the leading dimension is unchanged."""
    shape = [int(d) for d in shape]
    if cx.dynamic_batch and shape and n.in_shapes and n.in_shapes[0] and \
            shape[0] == n.in_shapes[0][0]:
        shape[0] = 0
    target = cx.const(f"{n.name}_{tag}_shape", _i64(shape))
    outs = None if out is None else [out]
    return cx.add("Reshape", [tensor, target], outs, name=f"{n.name}_{tag}")[0]


@converts("Reshape", "reshape")
def _reshape(cx, n):
    _reshape_to(cx, n, n.ins[0], n.out_shapes[0], n.outs[0])


@converts("Flatten", "flatten")
def _flatten(cx, n):
    cx.add("Flatten", [n.ins[0]], n.outs[0], name=n.name, axis=1)


@converts("expand_dims", "squeeze", "reshape_like")
def _static_reshape(cx, n):
    _reshape_to(cx, n, n.ins[0], n.out_shapes[0], n.outs[0])


@converts("transpose")
def _transpose(cx, n):
    rank = len(n.in_shapes[0])
    perm = list(n.p.axes) if n.p.axes else list(range(rank))[::-1]
    cx.add("Transpose", [n.ins[0]], n.outs[0], name=n.name, perm=[a % rank for a in perm])


@converts("SwapAxis", "swapaxes")
def _swapaxes(cx, n):
    rank = len(n.in_shapes[0])
    perm = list(range(rank))
    d1, d2 = n.p.dim1 % rank, n.p.dim2 % rank
    perm[d1], perm[d2] = perm[d2], perm[d1]
    cx.add("Transpose", [n.ins[0]], n.outs[0], name=n.name, perm=perm)


@converts("Concat", "concat")
def _concat(cx, n):
    cx.add("Concat", n.ins, n.outs[0], name=n.name, axis=int(n.p.dim))


@converts("stack")
def _stack(cx, n):
    axis = n.p.axis % len(n.out_shapes[0])
    axes = cx.const(f"{n.name}_axes", _i64([axis]))
    parts = [cx.add("Unsqueeze", [x, axes], name=f"{n.name}_unsq{i}")[0]
             for i, x in enumerate(n.ins)]
    cx.add("Concat", parts, n.outs[0], name=n.name, axis=axis)


@converts("SliceChannel", "split")
def _split(cx, n):
    p = n.p
    axis = p.axis % len(n.in_shapes[0])
    count = int(p.num_outputs)
    size = n.in_shapes[0][axis] // count
    sizes = cx.const(f"{n.name}_sizes", _i64([size] * count))
    if not p.squeeze_axis:
        cx.add("Split", [n.ins[0], sizes], n.outs[:count], name=n.name, axis=axis)
        return
    parts = cx.add("Split", [n.ins[0], sizes], [cx.unique(f"{n.name}_part{i}")
                                                for i in range(count)],
                   name=n.name, axis=axis)
    axes = cx.const(f"{n.name}_axes", _i64([axis]))
    for i, part in enumerate(parts):
        cx.add("Squeeze", [part, axes], n.outs[i], name=f"{n.name}_squeeze{i}")


@converts("slice_axis")
def _slice_axis(cx, n):
    p = n.p
    axis = p.axis % len(n.in_shapes[0])
    dim = n.in_shapes[0][axis]
    begin = p.begin % dim if p.begin < 0 else p.begin
    end = dim if p.end is None else (p.end % dim if p.end < 0 else p.end)
    _slice(cx, n, [begin], [end], [axis], [1])


@converts("slice")
def _slice_op(cx, n):
    p = n.p
    shape = n.in_shapes[0]
    begins, ends, axes, steps = [], [], [], []
    step = list(p.step) if p.step else [None] * len(p.begin)
    for ax, (b, e, s) in enumerate(zip(p.begin, p.end, step)):
        s = 1 if s is None else int(s)
        dim = shape[ax]
        b = (0 if s > 0 else dim - 1) if b is None else b
        e = (dim if s > 0 else -dim - 1) if e is None else e
        begins.append(int(b))
        ends.append(int(e))
        axes.append(ax)
        steps.append(s)
    _slice(cx, n, begins, ends, axes, steps)


def _slice(cx, n, begins, ends, axes, steps):
    ins = [n.ins[0]] + [cx.const(f"{n.name}_{k}", _i64(v))
                        for k, v in (("starts", begins), ("ends", ends), ("axes", axes),
                                     ("steps", steps))]
    cx.add("Slice", ins, n.outs[0], name=n.name)


def _reduce_axes(n):
    p = n.p
    rank = len(n.in_shapes[0])
    axes = p.axis
    if axes is None or axes == ():
        axes = list(range(rank))
    elif isinstance(axes, int):
        axes = [axes]
    axes = [a % rank for a in axes]
    if p.exclude:
        axes = [a for a in range(rank) if a not in axes]
    return axes


def _reduce_converter(onnx_op):
    def convert(cx, n):
        axes = _reduce_axes(n)
        keep = int(bool(n.p.keepdims))
        if onnx_op == "ReduceSum":      # opset 13: ReduceSum takes axes as an input
            cx.add(onnx_op, [n.ins[0], cx.const(f"{n.name}_axes", _i64(axes))], n.outs[0],
                   name=n.name, keepdims=keep)
        else:
            cx.add(onnx_op, [n.ins[0]], n.outs[0], name=n.name, axes=axes, keepdims=keep)
    return convert


for _name, _op in {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax",
                   "min": "ReduceMin", "prod": "ReduceProd"}.items():
    CONVERTERS[_name] = _reduce_converter(_op)


@converts("Cast", "cast", "amp_cast")
def _cast(cx, n):
    cx.add("Cast", [n.ins[0]], n.outs[0], name=n.name, to=_onnx_type(n.out_dtypes[0]))


@converts("Embedding")
def _embedding(cx, n):
    idx = cx.add("Cast", [n.ins[0]], name=f"{n.name}_idx", to=_onnx_type(np.int64))[0]
    cx.add("Gather", [n.ins[1], idx], n.outs[0], name=n.name, axis=0)


@converts("take")
def _take(cx, n):
    if n.p.mode == "raise":
        raise MXNetError("export_model: take(mode='raise') has no ONNX form")
    axis = n.p.axis % len(n.in_shapes[0])
    dim = n.in_shapes[0][axis]
    idx = cx.add("Cast", [n.ins[1]], name=f"{n.name}_idx", to=_onnx_type(np.int64))[0]
    if n.p.mode == "wrap":
        idx = cx.add("Mod", [idx, cx.const(f"{n.name}_dim", _i64(dim))], name=f"{n.name}_wrap")[0]
    else:
        idx = cx.add("Clip", [idx, cx.const(f"{n.name}_lo", _i64(0)),
                              cx.const(f"{n.name}_hi", _i64(dim - 1))], name=f"{n.name}_clip")[0]
    cx.add("Gather", [n.ins[0], idx], n.outs[0], name=n.name, axis=axis)


@converts("where")
def _where(cx, n):
    cond = cx.add("Cast", [n.ins[0]], name=f"{n.name}_cond", to=_onnx_type(np.bool_))[0]
    cx.add("Where", [cond, n.ins[1], n.ins[2]], n.outs[0], name=n.name)


@converts("Pad", "pad")
def _pad(cx, n):
    p = n.p
    width = list(p.pad_width)
    begins, ends = width[0::2], width[1::2]
    pads = cx.const(f"{n.name}_pads", _i64(begins + ends))
    ins = [n.ins[0], pads]
    if p.mode == "constant":
        ins.append(cx.const(f"{n.name}_value", np.asarray(p.constant_value, n.in_dtypes[0])))
    cx.add("Pad", ins, n.outs[0], name=n.name, mode=p.mode)


@converts("UpSampling")
def _upsampling(cx, n):
    p = n.p
    if p.sample_type != "nearest" or len(n.ins) != 1:
        raise MXNetError("export_model: only single-input nearest UpSampling converts")
    rank = len(n.in_shapes[0])
    scales = cx.const(f"{n.name}_scales",
                      np.asarray([1.0, 1.0] + [float(p.scale)] * (rank - 2), np.float32))
    roi = cx.const(f"{n.name}_roi", np.zeros(0, np.float32))
    cx.add("Resize", [n.ins[0], roi, scales], n.outs[0], name=n.name, mode="nearest",
           coordinate_transformation_mode="asymmetric", nearest_mode="floor")


# ----------------------------------------------------------------------- RNN
# MXNet packs each gate block as cuDNN does; ONNX orders the gates differently.
_GATES = {"lstm": (4, [0, 3, 1, 2]),      # MXNet i,f,c,o -> ONNX i,o,f,c
          "gru": (3, [1, 0, 2]),          # MXNet r,z,n  -> ONNX z,r,h
          "rnn_tanh": (1, [0]), "rnn_relu": (1, [0])}


def _rnn_weights(flat, mode, layers, dirs, hidden, input_size):
    """Split MXNet's flat RNN parameter vector into per-layer ONNX W, R, B arrays."""
    ngates, order = _GATES[mode]
    g = ngates * hidden
    pos = 0
    weights = []
    for layer in range(layers):
        in_size = input_size if layer == 0 else hidden * dirs
        per_dir = []
        for _ in range(dirs):
            w = flat[pos:pos + g * in_size].reshape(g, in_size)
            pos += g * in_size
            r = flat[pos:pos + g * hidden].reshape(g, hidden)
            pos += g * hidden
            per_dir.append([w, r])
        weights.append(per_dir)
    for layer in range(layers):
        for d in range(dirs):
            bw = flat[pos:pos + g]
            pos += g
            br = flat[pos:pos + g]
            pos += g
            weights[layer][d] += [bw, br]
    if pos != flat.size:
        raise MXNetError(f"export_model: RNN parameters have {flat.size} values, the "
                         f"layout needs {pos}")

    def reorder(a):
        blocks = np.split(a, ngates, axis=0)
        return np.concatenate([blocks[i] for i in order], axis=0)

    out = []
    for per_dir in weights:
        W = np.stack([reorder(w) for w, _, _, _ in per_dir])
        R = np.stack([reorder(r) for _, r, _, _ in per_dir])
        B = np.stack([np.concatenate([reorder(bw), reorder(br)]) for _, _, bw, br in per_dir])
        out.append((W, R, B))
    return out


@converts("RNN")
def _rnn(cx, n):
    p = n.p
    mode = p.mode
    if mode not in _GATES:
        raise MXNetError(f"export_model: RNN mode={mode!r} has no ONNX form")
    if p.get("projection_size") or p.get("use_sequence_length"):
        raise MXNetError("export_model: RNN with projection_size or use_sequence_length "
                         "has no ONNX form here")
    flat = n.const(1)
    if flat is None:
        raise MXNetError("export_model: the RNN operator's parameters must be constants")
    seq, batch, input_size = n.in_shapes[0]
    hidden, layers = int(p.state_size), int(p.num_layers)
    dirs = 2 if p.bidirectional else 1
    per_layer = _rnn_weights(flat.ravel(), mode, layers, dirs, hidden, input_size)
    onnx_op = {"lstm": "LSTM", "gru": "GRU"}.get(mode, "RNN")
    direction = "bidirectional" if dirs == 2 else "forward"
    x = n.ins[0]
    dt = n.in_dtypes[0]
    h_finals, c_finals = [], []
    for layer, (W, R, B) in enumerate(per_layer):
        tag = f"{n.name}_l{layer}"
        states = []
        for k in range(2 if mode == "lstm" else 1):
            init = _layer_state(cx, n, 2 + k, layer, dirs, f"{tag}_s{k}")
            states.append(init)
        ins = [x, cx.const(f"{tag}_W", W.astype(dt)), cx.const(f"{tag}_R", R.astype(dt)),
               cx.const(f"{tag}_B", B.astype(dt)), ""] + states
        attrs = dict(hidden_size=hidden, direction=direction)
        if mode == "gru":
            attrs["linear_before_reset"] = 1
        elif mode in ("rnn_tanh", "rnn_relu"):
            attrs["activations"] = ["Tanh" if mode == "rnn_tanh" else "Relu"] * dirs
        n_out = 3 if mode == "lstm" else 2
        outs = [cx.unique(f"{tag}_{s}") for s in ("Y", "Yh", "Yc")[:n_out]]
        y, yh = cx.add(onnx_op, ins, outs, name=tag, **attrs)[:2]
        h_finals.append(yh)
        if mode == "lstm":
            c_finals.append(outs[2])
        # Y: (seq, dirs, batch, hidden) -> (seq, batch, dirs*hidden)
        yt = cx.add("Transpose", [y], name=f"{tag}_ytrans", perm=[0, 2, 1, 3])[0]
        last = layer == layers - 1
        target = cx.const(f"{tag}_yshape", _i64([0, 0, dirs * hidden]))
        x = cx.add("Reshape", [yt, target], [n.outs[0]] if last else None,
                   name=f"{tag}_y")[0]
    if p.state_outputs:
        state_lists = [h_finals, c_finals] if mode == "lstm" else [h_finals]
        for k, finals in enumerate(state_lists[:len(n.outs) - 1]):
            cx.add("Concat", finals, n.outs[1 + k], name=f"{n.name}_state{k}", axis=0)


def _layer_state(cx, n, i, layer, dirs, tag):
    """The initial state slice (dirs, batch, hidden) of one layer."""
    if i >= len(n.ins):
        return ""
    value = n.const(i)
    if value is not None:
        return cx.const(tag, value[layer * dirs:(layer + 1) * dirs])
    ins = [n.ins[i], cx.const(f"{tag}_b", _i64([layer * dirs])),
           cx.const(f"{tag}_e", _i64([(layer + 1) * dirs])), cx.const(f"{tag}_a", _i64([0]))]
    return cx.add("Slice", ins, name=tag)[0]
