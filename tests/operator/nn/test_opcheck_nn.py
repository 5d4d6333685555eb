"""The write-into-outputs families through opcheck: each case runs imperatively, in an
executor (planned buffers, grad_req write and add) and against a float64 numeric
gradient."""
import numpy as np

import opcheck


def _fc(x, w, b, num_hidden, flatten=True):
    x2 = x.reshape(x.shape[0], -1) if flatten else x
    return x2 @ w.T + b


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(x, axis=-1):
    return np.log(_softmax(x, axis))


def _conv2d(x, w, b, kernel, num_filter, pad=(0, 0)):
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0],) * 2, (pad[1],) * 2))
    kh, kw = kernel
    oh, ow = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    out = np.empty((n, num_filter, oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = np.tensordot(xp[:, :, i:i + kh, j:j + kw], w,
                                           axes=([1, 2, 3], [1, 2, 3]))
    return out + b.reshape(1, -1, 1, 1)


def _maxpool(x, kernel, stride, pool_type="max"):
    n, c, h, w = x.shape
    oh, ow = (h - kernel[0]) // stride[0] + 1, (w - kernel[1]) // stride[1] + 1
    out = np.empty((n, c, oh, ow))
    red = np.max if pool_type == "max" else np.mean
    for i in range(oh):
        for j in range(ow):
            win = x[:, :, i * stride[0]:i * stride[0] + kernel[0],
                    j * stride[1]:j * stride[1] + kernel[1]]
            out[:, :, i, j] = red(win, axis=(2, 3))
    return out


_F32_64 = ("float32", "float64")
CASES = [
    opcheck.Case("FullyConnected", _fc, [[(4, 5), (3, 5), (3,)]], kwargs={"num_hidden": 3},
                 dtypes=_F32_64),
    opcheck.Case("FullyConnected", _fc, [[(2, 3, 2), (4, 6), (4,)]],
                 kwargs={"num_hidden": 4}, dtypes=_F32_64),
    opcheck.Case("FullyConnected", _fc, [[(2, 3, 2), (4, 2), (4,)]],
                 kwargs={"num_hidden": 4, "flatten": False}, dtypes=_F32_64),
    opcheck.Case("Activation", lambda x, act_type: np.tanh(x), [[(3, 4)]],
                 kwargs={"act_type": "tanh"}),
    opcheck.Case("Activation", lambda x, act_type: 1 / (1 + np.exp(-x)), [[(3, 4)]],
                 kwargs={"act_type": "sigmoid"}),
    opcheck.Case("Activation", lambda x, act_type: np.maximum(x, 0), [[(3, 4)]],
                 kwargs={"act_type": "relu"}, sample=opcheck.away_from([0])),
    opcheck.Case("softmax", _softmax, [[(3, 5)], [(2, 3, 4)]], kwargs={"axis": -1},
                 dtypes=_F32_64),
    opcheck.Case("log_softmax", _log_softmax, [[(3, 5)]], kwargs={"axis": 1},
                 dtypes=_F32_64),
    opcheck.Case("Flatten", lambda x: x.reshape(x.shape[0], -1), [[(2, 3, 4)]]),
    opcheck.Case("Reshape", lambda x, shape: x.reshape(4, 6), [[(2, 3, 4)]],
                 kwargs={"shape": (4, -1)}),
    opcheck.Case("dot", lambda a, b: a @ b, [[(3, 4), (4, 5)]], dtypes=_F32_64),
    opcheck.Case("dot", lambda a, b, transpose_b: a @ b.T, [[(3, 4), (5, 4)]],
                 kwargs={"transpose_b": True}, dtypes=_F32_64),
    opcheck.Case("add_n", lambda *xs, num_args: sum(xs), [[(3, 4)] * 3],
                 kwargs={"num_args": 3}),
    opcheck.Case("Convolution", _conv2d, [[(2, 3, 5, 5), (4, 3, 3, 3), (4,)]],
                 kwargs={"kernel": (3, 3), "num_filter": 4, "pad": (1, 1)}, dtypes=_F32_64,
                 tol=3),
    opcheck.Case("Pooling", _maxpool, [[(2, 2, 6, 6)]],
                 kwargs={"kernel": (2, 2), "stride": (2, 2), "pool_type": "avg"},
                 dtypes=_F32_64),
    opcheck.Case("Pooling", _maxpool, [[(2, 2, 6, 6)]],
                 kwargs={"kernel": (2, 2), "stride": (2, 2)}, dtypes=_F32_64,
                 sample=lambda s, rng: rng.permutation(np.prod(s)).reshape(s) / 10.0),
]


test_nn_ops = opcheck.cases_test(CASES)
