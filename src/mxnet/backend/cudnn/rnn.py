"""cuDNN's recurrent layers (``cudnnRNNForward``, ``cudnnRNNBackwardData_v8``,
``cudnnRNNBackwardWeights_v8``) for the ``RNN`` operator: a whole stacked, optionally
bidirectional LSTM / GRU / relu / tanh RNN as three library calls instead of a
per-time-step loop, as MXNet 1.9.1 runs it on a GPU.

What this covers: data (T, N, I) in layout TNC, every sequence of full length, both
biases, no projection, no state clipping and, in training, no dropout between layers
(the operator body, operator/nn/rnn.py, runs the rest). float16 (computed in float32),
float32 (TF32 allowed as for convolutions, see ``descriptors.conv_math_type``) and
float64.

Weights: the operator keeps one flat vector in MXNet's order (every i2h then h2h
matrix, layer by layer and direction by direction, then every bias); cuDNN's weight
space has its own order, which ``cudnnGetRNNWeightParams`` reports matrix by matrix.
:class:`Weights` turns those reports into an index map (element of the flat vector ->
element of the weight space, ``weight_map``), used as one scatter forward and one
gather backward per call, or not at all where cuDNN's order is MXNet's. The gate order within a matrix is the
same in both (LSTM i, f, g, o; GRU r, z, n), and so are the GRU's equations.

Reserve space: the operator's hidden ``reserve_space`` output carries cuDNN's reserve
from forward to backward; a plan whose reserve does not fit there is refused (the body
runs both directions), as is any configuration cuDNN rejects while the plan is built.
The choice depends only on the call's shapes, types and parameters, so a backward
always runs on the path its forward took. A cuDNN error once a plan is chosen is an
error (not a fallback): the reserve would no longer match a body's backward. The
forward always runs in cuDNN's training mode, since a backward may follow any forward
(``autograd.record(train_mode=False)``, an executor's backward after
``forward(is_train=False)``).
"""
import ctypes
import threading

import numpy as np

from ...base import get_or_make
from . import _lib as L
from . import descriptors as D
from ._runtime import runtime

__all__ = ["MODES", "TYPES", "Weights", "Plan", "plan_for", "weight_map", "forward",
           "backward"]

# cudnnRNNMode_t, and the gates per cell
MODES = {"rnn_relu": (0, 1), "rnn_tanh": (1, 1), "lstm": (2, 4), "gru": (3, 3)}
TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
_ALGO_STANDARD, _DOUBLE_BIAS, _LINEAR_INPUT, _SEQ_MAJOR_PACKED = 0, 2, 0, 1
_PADDED_IO_DISABLED = 0
_UNIDIRECTIONAL, _BIDIRECTIONAL = 0, 1
_FWD_INFERENCE, _FWD_TRAINING = 0, 1
_WGRAD_ADD = 0

_plans = {}
_lock = threading.Lock()


class Refused(Exception):
    """cuDNN cannot run this configuration here; the operator body runs it."""


def weight_map(gates, hidden, blocks, cudnn_offsets):
    """The index map of one RNN's weights: ``m[i]`` is the weight-space element that
    holds element ``i`` of MXNet's flat parameter vector.

    ``blocks[k]``, for pseudo-layer k (layer * directions + direction): MXNet's
    offsets ``(wx, n_in, wh, n_rec, bx, bh)`` of its i2h matrix (gates*hidden, n_in),
    h2h matrix (gates*hidden, n_rec) and the two biases. ``cudnn_offsets(k, lin)``:
    (matrix offset, matrix elements, bias offset, bias elements) in elements, for
    cuDNN's linear layer ``lin`` (0..gates-1 act on the input, gates..2*gates-1 on the
    recurrent state, gate by gate in MXNet's order)."""
    G, H = gates, hidden
    n = sum(G * H * (b[1] + b[3]) + 2 * G * H for b in blocks)
    m = np.full(n, -1, dtype=np.int64)
    for k, (wx, n_in, wh, n_rec, bx, bh) in enumerate(blocks):
        for lin in range(2 * G):
            g, rec = lin % G, lin >= G
            cols = n_rec if rec else n_in
            src_m = (wh if rec else wx) + g * H * cols
            src_b = (bh if rec else bx) + g * H
            m_off, m_len, b_off, b_len = cudnn_offsets(k, lin)
            if m_len != H * cols or b_len != H:
                raise Refused(f"cuDNN's matrix {lin} of pseudo-layer {k} holds {m_len} "
                              f"weights and {b_len} biases, expected {H * cols} and {H}")
            m[src_m:src_m + m_len] = np.arange(m_off, m_off + m_len)
            m[src_b:src_b + b_len] = np.arange(b_off, b_off + b_len)
    if (m < 0).any():
        raise Refused("cuDNN's weight layout leaves MXNet parameters unplaced")
    return m


def _create(lib, kind):
    ptr = ctypes.c_void_p()
    L.check(lib, f"cudnnCreate{kind}Descriptor",
            getattr(lib, f"cudnnCreate{kind}Descriptor")(ctypes.byref(ptr)))
    return ptr.value


def no_dropout(lib, handle):
    """A dropout descriptor of probability 0 and no random states (what PyTorch gives
    cuDNN's RNNs without dropout): dropout between layers stays with the body."""
    d = _create(lib, "Dropout")
    L.check(lib, "cudnnSetDropoutDescriptor", lib.cudnnSetDropoutDescriptor(
        d, handle, 0.0, None, 0, 0))
    return d


def rnn_descriptor(lib, mode, layers, bidirectional, input_size, hidden, dtype,
                   math_type, dropout=None):
    """A finalized cudnnRNNDescriptor_t (needs no GPU without ``dropout``, a dropout
    descriptor): double bias, linear input, no projection (cuDNN wants projSize =
    hiddenSize then)."""
    dt = D.data_type(dtype)
    prec = L.DATA_FLOAT if dt == L.DATA_HALF else dt      # float16 computed in float32
    d = _create(lib, "RNN")
    L.check(lib, "cudnnSetRNNDescriptor_v8", lib.cudnnSetRNNDescriptor_v8(
        d, _ALGO_STANDARD, MODES[mode][0], _DOUBLE_BIAS,
        _BIDIRECTIONAL if bidirectional else _UNIDIRECTIONAL, _LINEAR_INPUT, dt, prec,
        math_type, int(input_size), int(hidden), int(hidden), int(layers), dropout,
        _PADDED_IO_DISABLED))
    return d


def data_descriptor(lib, dtype, T, N, vector):
    """A cudnnRNNDataDescriptor_t for dense (T, N, vector) sequence-major data (needs
    no GPU). Every sequence is T long, so cuDNN's packed layout, which padded I/O
    being off asks for, is the dense array itself."""
    d = _create(lib, "RNNData")
    lens = (ctypes.c_int * N)(*([int(T)] * N))
    L.check(lib, "cudnnSetRNNDataDescriptor", lib.cudnnSetRNNDataDescriptor(
        d, D.data_type(dtype), _SEQ_MAJOR_PACKED, int(T), int(N), int(vector), lens,
        None))
    return d


class Weights:
    """One RNN's descriptor and weight space: its size, and the index map from MXNet's
    flat parameter vector into it (None where it is the identity). Independent of the
    sequence length and batch size, so kept once per (mode, layers, directions, input
    size, state size, dtype, device, math type)."""

    def __init__(self, rt, device_id, mode, layers, bidirectional, I, H, dtype, blocks):
        lib, cp = rt.lib, rt.cupy
        self.dtype = np.dtype(dtype)
        h = rt.handle(device_id)
        self.rnn = rnn_descriptor(lib, mode, layers, bidirectional, I, H, dtype,
                                  D.conv_math_type(dtype), no_dropout(lib, h))
        size = ctypes.c_size_t()
        L.check(lib, "cudnnGetRNNWeightSpaceSize", lib.cudnnGetRNNWeightSpaceSize(
            h, self.rnn, ctypes.byref(size)))
        self.nbytes = int(size.value)
        item = self.dtype.itemsize
        if self.nbytes % item:
            raise Refused("cuDNN's weight space is not a whole number of elements")
        self.elems = self.nbytes // item
        with cp.cuda.Device(device_id):
            probe = cp.empty(self.elems, dtype=self.dtype)
            mdesc, bdesc = _create(lib, "Tensor"), _create(lib, "Tensor")
            try:
                m = weight_map(MODES[mode][1], H, blocks,
                               _offsets_reader(lib, h, self, probe, item, mdesc, bdesc))
            finally:
                lib.cudnnDestroyTensorDescriptor(mdesc)
                lib.cudnnDestroyTensorDescriptor(bdesc)
            identity = self.elems == len(m) and np.array_equal(m, np.arange(len(m)))
            self.index = None if identity else cp.asarray(
                m.astype(np.int32 if self.elems < 2 ** 31 else np.int64))
        # elements of the space that hold no parameter: zeroed, not left as they were
        self.padded = len(m) != self.elems

    def space_of(self, cp, flat):
        """(buffer to keep alive, pointer) of the weight space holding ``flat``."""
        if self.index is None:
            return flat, flat.data.ptr
        space = (cp.zeros if self.padded else cp.empty)(self.elems, dtype=self.dtype)
        space[self.index] = flat
        return space, space.data.ptr


def _offsets_reader(lib, h, weights, space, item, mdesc, bdesc):
    """cuDNN's (matrix offset, elements, bias offset, elements) of each linear layer,
    in elements from the start of ``space``."""
    base = space.data.ptr
    dims = (ctypes.c_int * 8)()
    strides = (ctypes.c_int * 8)()

    def elems(desc):
        dt, nd = ctypes.c_int(), ctypes.c_int()
        L.check(lib, "cudnnGetTensorNdDescriptor", lib.cudnnGetTensorNdDescriptor(
            desc, 8, ctypes.byref(dt), ctypes.byref(nd), dims, strides))
        return int(np.prod([dims[i] for i in range(nd.value)], dtype=np.int64))

    def read(k, lin):
        ma, ba = ctypes.c_void_p(), ctypes.c_void_p()
        L.check(lib, "cudnnGetRNNWeightParams", lib.cudnnGetRNNWeightParams(
            h, weights.rnn, k, weights.nbytes, base, lin, mdesc, ctypes.byref(ma), bdesc,
            ctypes.byref(ba)))
        if not ma.value or not ba.value:
            raise Refused(f"cuDNN reports no matrix or bias for linear layer {lin}")
        return ((ma.value - base) // item, elems(mdesc),
                (ba.value - base) // item, elems(bdesc))
    return read


class Plan:
    """One call geometry: the Weights, the data and state descriptors of (T, N), the
    byte sizes of cuDNN's workspaces and reserve, and the per-sequence lengths cuDNN
    reads from device memory."""

    def __init__(self, rt, device_id, weights, layers, directions, T, N, I, H,
                 reserve_capacity):
        lib, cp = rt.lib, rt.cupy
        self.weights, self.dtype = weights, weights.dtype
        self.rnn = weights.rnn
        self.x = data_descriptor(lib, self.dtype, T, N, I)
        self.y = data_descriptor(lib, self.dtype, T, N, directions * H)
        self.h = D.tensor(lib, (layers * directions, N, H), self.dtype)
        h = rt.handle(device_id)
        sizes = [ctypes.c_size_t() for _ in range(4)]
        for mode_id, work, reserve in ((_FWD_TRAINING, 0, 1), (_FWD_INFERENCE, 2, 3)):
            L.check(lib, "cudnnGetRNNTempSpaceSizes", lib.cudnnGetRNNTempSpaceSizes(
                h, self.rnn, mode_id, self.x, ctypes.byref(sizes[work]),
                ctypes.byref(sizes[reserve])))
        self.work_train, self.reserve_bytes, self.work_infer = (
            int(sizes[0].value), int(sizes[1].value), int(sizes[2].value))
        if self.reserve_bytes > reserve_capacity:
            raise Refused(f"cuDNN's reserve ({self.reserve_bytes} bytes) exceeds the "
                          f"operator's reserve_space ({reserve_capacity} bytes)")
        with cp.cuda.Device(device_id):
            self.seq_lengths = cp.full(N, T, dtype=cp.int32)


def plan_for(key, make):
    """The cached Plan (or Weights) for ``key``, built by ``make()`` the first time
    (None when refused; the refusal is cached too, so forward and backward agree)."""
    def build():
        try:
            return make()
        except (Refused, L.CudnnError, D.NotSupported) as err:
            return err
    got = get_or_make(_plans, key, build, _lock)
    return None if isinstance(got, Exception) else got


def refusal(key):
    """Why the plan for ``key`` was refused (None when it was not, or not built)."""
    got = _plans.get(key)
    return str(got) if isinstance(got, Exception) else None


def _null(a):
    return None if a is None else a.data.ptr


def _error(name, text):
    from ...base import MXNetError
    return MXNetError(f"RNN: cuDNN {name} failed: {text}; MXNET_CUDNN_RNN=0 runs the "
                      "operator without cuDNN")


def _run(lib, name, *args):
    status = getattr(lib, name)(*args)
    if status != L.STATUS_SUCCESS:
        text = lib.cudnnGetErrorString(status)
        raise _error(name, f"{text.decode() if text else status} (status {status})")


def _handle(rt, device_id):
    """This thread's handle. Once a plan is chosen its failure is an error, never a
    fallback: the reserve would no longer match the path that reads it."""
    try:
        return rt.handle(device_id)
    except L.CudnnError as err:
        raise _error(err.func, str(err)) from None


def forward(plan, device_id, x, flat, hx, cx, y, hy, cy, reserve):
    """y, hy, cy (cy only for LSTM; hy/cy may be None) from x, the flat parameters and
    the initial states, keeping what backward needs in ``reserve`` (a device array of
    at least ``plan.reserve_bytes``). Always cuDNN's training mode: a backward may
    follow any forward."""
    rt = runtime()
    cp, lib = rt.cupy, rt.lib
    h = _handle(rt, device_id)
    keep, w = plan.weights.space_of(cp, flat)
    work = cp.empty(max(plan.work_train, 1), dtype=cp.uint8)
    _run(lib, "cudnnRNNForward", h, plan.rnn, _FWD_TRAINING, plan.seq_lengths.data.ptr,
         plan.x, x.data.ptr, plan.y, y.data.ptr, plan.h, hx.data.ptr, _null(hy), plan.h,
         _null(cx), _null(cy), plan.weights.nbytes, w, plan.work_train, work.data.ptr,
         plan.reserve_bytes, reserve.data.ptr)
    del keep, work              # back to the pool once the call is queued


def backward(plan, device_id, x, flat, hx, cx, y, dy, dhy, dcy, reserve, dx, dhx, dcx,
             dflat):
    """dx and, where not None, dhx, dcx (LSTM) and the flat parameters' gradient
    (overwritten), from the forward's reserve (which cuDNN's backward rewrites).
    ``dhy``/``dcy`` may be None (zero)."""
    rt = runtime()
    cp, lib = rt.cupy, rt.lib
    h = _handle(rt, device_id)
    wts = plan.weights
    keep, w = wts.space_of(cp, flat)
    work = cp.empty(max(plan.work_train, 1), dtype=cp.uint8)
    _run(lib, "cudnnRNNBackwardData_v8", h, plan.rnn, plan.seq_lengths.data.ptr, plan.y,
         y.data.ptr, dy.data.ptr, plan.x, dx.data.ptr, plan.h, hx.data.ptr, _null(dhy),
         _null(dhx), plan.h, _null(cx), _null(dcy), _null(dcx), wts.nbytes, w,
         plan.work_train, work.data.ptr, plan.reserve_bytes, reserve.data.ptr)
    if dflat is not None:
        # cuDNN adds into the weight gradient: it starts from zero
        space = dflat if wts.index is None else cp.empty(wts.elems, wts.dtype)
        space.fill(0)
        _run(lib, "cudnnRNNBackwardWeights_v8", h, plan.rnn, _WGRAD_ADD,
             plan.seq_lengths.data.ptr, plan.x, x.data.ptr, plan.h, hx.data.ptr, plan.y,
             y.data.ptr, wts.nbytes, space.data.ptr, plan.work_train, work.data.ptr,
             plan.reserve_bytes, reserve.data.ptr)
        if wts.index is not None:
            cp.take(space, wts.index, out=dflat)
    del keep, work
