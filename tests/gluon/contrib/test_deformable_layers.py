"""gluon.contrib.cnn's DeformableConvolution / ModulatedDeformableConvolution against
outputs and gradients written by the real MXNet 1.9.1 (fixtures/deformable_layers.npz,
made by fixtures/make_deformable_fixture.py), and a fresh layer (zero offset
convolution) against an ordinary convolution."""
import os
import sys

import numpy as np
import pytest

import mxnet as mx
from mxnet.gluon.contrib.cnn import DeformableConvolution, ModulatedDeformableConvolution

HERE = os.path.dirname(os.path.abspath(__file__))
REF = np.load(os.path.join(HERE, "fixtures", "deformable_layers.npz"))
sys.path.insert(0, os.path.join(HERE, "fixtures"))
from make_deformable_fixture import CASES  # noqa: E402  (the layers the fixture was made of)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("hybridize", [False, True])
def test_matches_mxnet(case, hybridize):
    cls, kw = CASES[case]
    blk = cls(**kw)
    blk.initialize()
    x = mx.nd.array(REF[f"{case}/x"])
    blk(x)
    names = [n[len(blk.prefix):] for n in blk.collect_params()]
    assert names == [k.split("/")[-1] for k in REF if k.startswith(f"{case}/param/")]
    for name, p in blk.collect_params().items():
        p.set_data(mx.nd.array(REF[f"{case}/param/{name[len(blk.prefix):]}"]))
    if hybridize:
        blk.hybridize()
    x.attach_grad()
    with mx.autograd.record():
        y = blk(x)
    np.testing.assert_allclose(y.asnumpy(), REF[f"{case}/y"], rtol=1e-4, atol=1e-5)
    if f"{case}/head" not in REF:       # MXNet's CPU build has no modulated backward
        return
    y.backward(mx.nd.array(REF[f"{case}/head"]))
    np.testing.assert_allclose(x.grad.asnumpy(), REF[f"{case}/grad_x"], rtol=1e-4,
                               atol=1e-5)
    for name, p in blk.collect_params().items():
        np.testing.assert_allclose(p.grad().asnumpy(),
                                   REF[f"{case}/grad/{name[len(blk.prefix):]}"],
                                   rtol=1e-4, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("cls", [DeformableConvolution, ModulatedDeformableConvolution])
def test_fresh_layer_is_an_ordinary_convolution(cls):
    # the offset convolution has the layer's groups too: 3 * 9 offset channels for the
    # modulated layer split into 3 groups
    groups = 2 if cls is DeformableConvolution else 3
    blk = cls(6, kernel_size=3, padding=1, groups=groups, in_channels=6)
    blk.initialize(mx.init.Uniform(0.5))
    x = mx.nd.random.uniform(-1, 1, (2, 6, 7, 7))
    y = blk(x)
    want = mx.nd.Convolution(x, blk.deformable_conv_weight.data(),
                             blk.deformable_conv_bias.data(), kernel=(3, 3), pad=(1, 1),
                             num_filter=6, num_group=groups)
    np.testing.assert_allclose(y.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-5)
    assert blk.offset_weight.shape == ((2 if cls is DeformableConvolution else 3) * 9,
                                       6 // groups, 3, 3)


def test_names_and_repr():
    d = DeformableConvolution(4, kernel_size=(3, 3), padding=(1, 1), use_bias=False,
                              activation="relu")
    m = ModulatedDeformableConvolution(4)
    assert d.prefix.startswith("deformable_conv") and \
        m.prefix.startswith("modulated_deformable_conv")
    assert d.deformable_conv_bias is None
    assert repr(d) == ("DeformableConvolution(None -> 4, kernel_size=(3, 3), stride=(1, 1), "
                       "padding=(1, 1), bias=False, Activation(relu))")
    with pytest.raises(AssertionError, match="NCHW"):
        DeformableConvolution(4, layout="NHWC")
