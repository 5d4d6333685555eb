"""Below the cost rule's break-even size the adapters return NotImplemented (the NumPy
body runs); above it, or when forced, they compute on oneDNN."""
import numpy as np
import pytest

from mxnet.backend import onednn
from mxnet.base import MXNetError
from mxnet.operator import kernels_onednn as KO
from onednn_helpers import both_forward, close, ctx_for, params, rand

pytestmark = pytest.mark.skipif(not onednn.available(), reason="libdnnl not available")


@pytest.fixture
def unforced(monkeypatch):
    monkeypatch.setattr(KO, "_FORCE", [0])
    monkeypatch.setattr(KO, "_SCALE", [None])


def _fc_call(n, k, h):
    p = params("FullyConnected", num_hidden=h)
    return KO.OPS["FullyConnected"][0](ctx_for(), p, [rand(n, k), rand(h, k), rand(h)], [])


def test_small_calls_fall_back_and_large_ones_do_not(unforced):
    assert _fc_call(4, 8, 3) is NotImplemented
    relu = params("Activation", act_type="relu")
    assert KO.OPS["Activation"][0](ctx_for(), relu, [rand(10, 10)], []) is NotImplemented
    big = rand(8, 64, 32, 32)       # 524288 elements, above the ReLU threshold
    got = KO.OPS["Activation"][0](ctx_for(), relu, [big], [])
    assert got is not NotImplemented
    close(got[0], np.maximum(big, 0))


def test_the_type_check_follows_the_size_check(unforced):
    # adapters ask the size first (the cheap test most calls stop at); a large call of
    # a type the primitives do not take still goes to the NumPy body
    relu = params("Activation", act_type="relu")
    big = rand(8, 64, 32, 32)
    assert KO.OPS["Activation"][0](ctx_for(), relu, [big.astype(np.float64)], []) \
        is NotImplemented
    assert KO.OPS["Activation"][0](ctx_for(), relu, [big], []) is not NotImplemented


def test_forced_runs_small_calls_on_onednn(unforced):
    with KO.forced():
        p = params("FullyConnected", num_hidden=3)
        ref, got, _, _ = both_forward("FullyConnected", p, [rand(4, 8), rand(3, 8), rand(3)])
    assert got is not NotImplemented
    close(ref[0], got[0])
    assert _fc_call(4, 8, 3) is NotImplemented       # the block ended


def test_scale_variable(unforced, monkeypatch):
    monkeypatch.setenv("MXNET_ONEDNN_MIN_WORK_SCALE", "0")
    assert _fc_call(4, 8, 3) is not NotImplemented
    monkeypatch.setattr(KO, "_SCALE", [None])
    monkeypatch.setenv("MXNET_ONEDNN_MIN_WORK_SCALE", "lots")
    with pytest.raises(MXNetError, match="MXNET_ONEDNN_MIN_WORK_SCALE"):
        _fc_call(4, 8, 3)


def test_every_family_has_a_threshold():
    fams = {k.split(":")[0] for k in KO.MIN_WORK}
    assert set(KO.OPS) - {"log_softmax"} <= fams


@pytest.mark.parametrize("channels,need_data,on_onednn", [
    (1, False, False),    # a grayscale first layer: its weight gradient goes to NumPy
    (2, False, False),
    (1, True, True),      # the data gradient too: oneDNN computes both
    (3, False, True),     # RGB: oneDNN's padded weight gradient still wins
])
def test_weight_gradient_of_few_input_channels(channels, need_data, on_onednn, unforced):
    p = params("Convolution", kernel=(5, 5), num_filter=20)
    x, w, b = rand(32, channels, 28, 28), rand(20, channels, 5, 5), rand(20)
    dy = rand(32, 20, 24, 24)
    need = [need_data, True, True]
    ctx = ctx_for(True, need, [x.shape, w.shape, b.shape])
    got = KO.OPS["Convolution"][1](ctx, p, [dy], [x, w, b], [None], [])
    assert (got is not NotImplemented) == on_onednn
    if on_onednn:
        from mxnet.operator.registry import get_op
        ref = get_op("Convolution").backward(ctx, p, [dy], [x, w, b], [None], [])
        for r, g, wanted in zip(ref, got, need):
            if wanted:
                close(r, g, rtol=1e-3, atol=1e-3)
