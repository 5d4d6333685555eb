"""mx.onnx.export_model: models written here run under onnxruntime (an independent
executor) with the outputs of pymxnet's own inference forward pass."""
import os

import numpy as np
import pytest

import mxnet as mx
from mxnet import gluon
from mxnet.gluon.model_zoo import vision

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
import mxnet.onnx  # noqa: E402


def _randomize_norm_stats(net):
    """Non-trivial BatchNorm statistics so a wrong eps/gamma/mean mapping shows."""
    for name, p in net.collect_params().items():
        if name.endswith("running_var"):
            p.set_data(mx.nd.random.uniform(0.5, 1.5, p.shape))
        elif name.endswith(("running_mean", "beta")):
            p.set_data(mx.nd.random.uniform(-0.2, 0.2, p.shape))
        elif name.endswith("gamma"):
            p.set_data(mx.nd.random.uniform(0.8, 1.2, p.shape))


def _export_and_run(net, x, tmp_path, **kw):
    net.hybridize()
    net(x)
    _randomize_norm_stats(net)
    expected = net(x).asnumpy()
    prefix = str(tmp_path / "model")
    net.export(prefix)
    path = mx.onnx.export_model(prefix + "-symbol.json", prefix + "-0000.params",
                                [x.shape], np.float32, str(tmp_path / "model.onnx"), **kw)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x.asnumpy()})[0]
    return expected, got, path


def _input(shape):
    return mx.nd.array(np.random.uniform(-1, 1, shape).astype(np.float32))


VISION = [("resnet18_v1", (2, 3, 64, 64)), ("resnet18_v2", (2, 3, 64, 64)),
          ("mobilenet0.25", (2, 3, 64, 64)), ("mobilenetv2_0.25", (2, 3, 64, 64)),
          ("squeezenet1.1", (1, 3, 224, 224))]
VISION_SLOW = [("vgg11_bn", (1, 3, 32, 32)), ("densenet121", (1, 3, 224, 224)), ("inceptionv3", (1, 3, 299, 299)),
               ("squeezenet1.0", (1, 3, 224, 224)), ("alexnet", (1, 3, 224, 224))]


@pytest.mark.parametrize("name,shape", VISION + [pytest.param(*c, marks=pytest.mark.slow)
                                                 for c in VISION_SLOW])
def test_model_zoo_matches_onnxruntime(name, shape, tmp_path):
    net = vision.get_model(name)
    net.initialize(mx.init.Xavier(magnitude=2))
    expected, got, _ = _export_and_run(net, _input(shape), tmp_path)
    scale = max(1.0, float(np.abs(expected).max()))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * scale)


class _SeqModel(gluon.HybridBlock):
    def __init__(self, layer):
        super().__init__()
        with self.name_scope():
            self.rnn = layer
            self.out = gluon.nn.Dense(5, flatten=False)

    def hybrid_forward(self, F, x):
        return self.out(self.rnn(x))


@pytest.mark.parametrize("make", [
    lambda: gluon.rnn.LSTM(8, num_layers=2, input_size=4),
    lambda: gluon.rnn.LSTM(8, bidirectional=True, layout="NTC", input_size=4),
    lambda: gluon.rnn.GRU(6, num_layers=2, bidirectional=True, input_size=4),
    lambda: gluon.rnn.RNN(7, activation="relu", input_size=4),
], ids=["lstm2", "bilstm_ntc", "bigru2", "rnn_relu"])
def test_recurrent_layers_match_onnxruntime(make, tmp_path):
    net = _SeqModel(make())
    net.initialize(mx.init.Uniform(0.5))
    expected, got, _ = _export_and_run(net, _input((5, 3, 4)), tmp_path)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_symbol_ops_and_params_forms(tmp_path):
    """A Symbol with the arithmetic, shape and normalisation converters, exported from a
    Symbol object and [arg_params, aux_params] instead of files."""
    data = mx.sym.var("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, name="c")
    x = mx.sym.LeakyReLU(x, act_type="leaky", slope=0.1, name="lr")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="avg", pad=(1, 1),
                       count_include_pad=False, name="p")
    x = mx.sym.clip(x * 2.0 - 0.5, a_min=-1, a_max=1.5)
    y = mx.sym.transpose(mx.sym.Reshape(x, shape=(0, -1)), axes=(1, 0))
    y = mx.sym.softmax(mx.sym.transpose(y), axis=-1)
    z = mx.sym.concat(y, mx.sym.mean(x, axis=(2, 3)), dim=1)
    z = mx.sym.LayerNorm(z, mx.sym.var("g"), mx.sym.var("b"), name="ln")
    z = mx.sym.FullyConnected(z, num_hidden=3, name="fc")
    z = mx.sym.slice_axis(z, axis=1, begin=1, end=3)
    shapes = {"data": (2, 3, 6, 6)}
    arg_shapes, _, _ = z.infer_shape(**shapes)
    rng = np.random.RandomState(1)
    args = {n: mx.nd.array(rng.uniform(-1, 1, s)) for n, s in
            zip(z.list_arguments(), arg_shapes) if n != "data"}
    x_in = mx.nd.array(rng.uniform(-1, 1, shapes["data"]))
    expected = z.bind(mx.cpu(), dict(args, data=x_in)).forward()[0].asnumpy()
    path = mx.onnx.export_model(z, [args, {}], [shapes["data"]], np.float32,
                                str(tmp_path / "s.onnx"))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {"data": x_in.asnumpy()})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_dynamic_batch(tmp_path):
    net = vision.get_model("resnet18_v1")
    net.initialize(mx.init.Xavier())
    _, _, path = _export_and_run(net, _input((2, 3, 32, 32)), tmp_path, dynamic=True,
                                 dynamic_input_shapes=[(None, 3, 32, 32)])
    x = _input((5, 3, 32, 32))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {"data": x.asnumpy()})[0]
    np.testing.assert_allclose(got, net(x).asnumpy(), rtol=1e-4, atol=1e-5)


def test_written_atomically_and_checked(tmp_path):
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(3, in_units=4))
    net.initialize()
    path = str(tmp_path / "m.onnx")
    _export_and_run(net, _input((2, 4)), tmp_path)
    assert os.path.isfile(str(tmp_path / "model.onnx"))
    assert [f for f in os.listdir(tmp_path) if ".tmp" in f] == []
    onnx.checker.check_model(onnx.load(str(tmp_path / "model.onnx")))
    assert not os.path.exists(path)


def test_errors_name_the_problem(tmp_path):
    data = mx.sym.var("data")
    with pytest.raises(mx.MXNetError, match="in_shapes"):
        mx.onnx.export_model(mx.sym.relu(data), {}, None, np.float32, str(tmp_path / "a"))
    with pytest.raises(mx.MXNetError, match="2 input shapes"):
        mx.onnx.export_model(mx.sym.relu(data), {}, [(1, 2), (3, 4)], np.float32,
                             str(tmp_path / "a"))
    with pytest.raises(mx.MXNetError, match="topk"):
        mx.onnx.export_model(mx.sym.topk(data, k=1), {}, [(2, 3)], np.float32,
                             str(tmp_path / "a"))
    with pytest.raises(mx.MXNetError, match="does not exist"):
        mx.onnx.export_model(str(tmp_path / "missing-symbol.json"), {}, [(1,)])
    assert not os.path.exists(tmp_path / "a")


def test_operator_support_lists_converters():
    names = mx.onnx.get_operator_support()
    for op in ("Convolution", "BatchNorm", "RNN", "FullyConnected", "Pooling", "softmax"):
        assert op in names
