"""mx.contrib.onnx: ONNX models built by hand with onnx.helper (not by our exporter)
import with the outputs onnxruntime computes for them, and exported models round-trip
through import_model / import_to_gluon."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.gluon.model_zoo import vision

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import mxnet.contrib.onnx as onnx_mxnet  # noqa: E402
import mxnet.onnx  # noqa: E402

RNG = np.random.RandomState(7)


def _f32(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def _model(nodes, inputs, outputs, inits, opset=13):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _compare(model, feeds, tmp_path, rtol=1e-4, atol=1e-5):
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    expected = sess.run(None, feeds)
    sym, args, aux = onnx_mxnet.import_model(path)
    inputs = {k: mx.nd.array(v) for k, v in feeds.items()}
    ex = sym.bind(mx.cpu(), dict(args, **inputs), aux_states=aux, grad_req="null")
    got = [o.asnumpy() for o in ex.forward()]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    return path


def test_cnn_ops(tmp_path):
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["bn"],
                         epsilon=1e-3),
        helper.make_node("LeakyRelu", ["bn"], ["r"], alpha=0.2),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2],
                         ceil_mode=1),
        helper.make_node("AveragePool", ["p"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         count_include_pad=0),
        helper.make_node("Flatten", ["a"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["g"], transB=0, alpha=0.5),
        helper.make_node("Softmax", ["g"], ["y"], axis=-1),
    ]
    inits = {"w": _f32(4, 3, 3, 3), "b": _f32(4), "s": _f32(4), "bb": _f32(4),
             "m": _f32(4), "v": np.abs(_f32(4)) + 0.5, "wf": _f32(144, 5), "bf": _f32(5)}
    model = _model(nodes, [("x", [2, 3, 22, 22])], ["y"], inits)
    _compare(model, {"x": _f32(2, 3, 22, 22)}, tmp_path)


def test_shape_and_arithmetic_ops(tmp_path):
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["ad"]),
        helper.make_node("Unsqueeze", ["ad", "ax1"], ["u"]),
        helper.make_node("Concat", ["u", "u"], ["cat"], axis=1),
        helper.make_node("Transpose", ["cat"], ["t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["t", "shp"], ["rs"]),
        helper.make_node("Slice", ["rs", "st", "en", "ax1"], ["sl"]),
        helper.make_node("ReduceMean", ["sl"], ["rm"], axes=[1], keepdims=1),
        helper.make_node("Sub", ["sl", "rm"], ["d"]),
        helper.make_node("Mul", ["d", "d"], ["sq"]),
        helper.make_node("Sqrt", ["sq"], ["sr"]),
        helper.make_node("Clip", ["sr", "lo", "hi"], ["cl"]),
        helper.make_node("Reshape", ["cl", "shp4"], ["c4"]),
        helper.make_node("Pad", ["c4", "pads", "pv"], ["pd"], mode="constant"),
        helper.make_node("Tanh", ["pd"], ["y"]),
    ]
    inits = {"w": _f32(6, 5), "b": _f32(5), "ax1": np.array([1], np.int64),
             "shp": np.array([0, -1], np.int64), "st": np.array([2], np.int64),
             "en": np.array([9], np.int64), "lo": np.array(0.1, np.float32),
             "hi": np.array(0.9, np.float32), "pads": np.array([0, 0, 1, 0, 0, 0, 0, 2], np.int64),
             "shp4": np.array([3, 1, 1, 7], np.int64),
             "pv": np.array(0.25, np.float32)}
    model = _model(nodes, [("x", [3, 4, 6])], ["y"], inits)
    _compare(model, {"x": _f32(3, 4, 6)}, tmp_path)


@pytest.mark.parametrize("op,gates,extra", [("LSTM", 4, {}),
                                            ("GRU", 3, {"linear_before_reset": 1})])
def test_recurrent_import(op, gates, extra, tmp_path):
    T, N, C, H, D = 4, 2, 3, 5, 2
    inits = {"W": _f32(D, gates * H, C), "R": _f32(D, gates * H, H),
             "B": _f32(D, 2 * gates * H), "h0": _f32(D, N, H)}
    ins = ["x", "W", "R", "B", "", "h0"]
    if op == "LSTM":
        inits["c0"] = _f32(D, N, H)
        ins.append("c0")
    node = helper.make_node(op, ins, ["y", "yh"], hidden_size=H, direction="bidirectional",
                            **extra)
    model = _model([node], [("x", [T, N, C])], ["y", "yh"], inits)
    _compare(model, {"x": _f32(T, N, C)}, tmp_path)


def test_exported_model_round_trips_to_gluon(tmp_path):
    net = vision.get_model("resnet18_v1")
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = mx.nd.array(_f32(1, 3, 32, 32))
    expected = net(x).asnumpy()
    prefix = str(tmp_path / "r")
    net.export(prefix)
    path = mx.onnx.export_model(prefix + "-symbol.json", prefix + "-0000.params",
                                [x.shape], np.float32, str(tmp_path / "r.onnx"))
    block = onnx_mxnet.import_to_gluon(path, mx.cpu())
    np.testing.assert_allclose(block(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    sym, args, aux = onnx_mxnet.import_model(path)
    assert any("running_mean" in k or "moving_mean" in k for k in aux)
    meta = onnx_mxnet.get_model_metadata(path)
    assert meta["input_tensor_data"] == [("data", (1, 3, 32, 32))]
    assert meta["output_tensor_data"][0][1] == (1, 1000)


def test_import_errors(tmp_path):
    with pytest.raises(mx.MXNetError, match="does not exist"):
        onnx_mxnet.import_model(str(tmp_path / "none.onnx"))
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08garbage" * 10)
    with pytest.raises(mx.MXNetError, match="bad.onnx"):
        onnx_mxnet.import_model(str(bad))
    node = helper.make_node("Hardmax", ["x"], ["y"])
    model = _model([node], [("x", [2, 3])], ["y"], {})
    with pytest.raises(mx.MXNetError, match="Hardmax"):
        onnx_mxnet.import_model(model)
