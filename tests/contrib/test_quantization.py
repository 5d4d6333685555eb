"""mx.contrib.quantization: the quantize pass, calibration and the Gluon entry points.

Tolerances: a quantized net's output differs from the float net's by the rounding of
each layer's int8 values (half a step of that layer's range) carried through the
following layers, and by clipping where calibration set a range. For these small nets
(2-3 quantized layers whose ranges are near the output's) we allow 4 int8 steps of the
float output's range, 4 * max|y| / 127; MXNet 1.9.1's own quantized outputs (fixtures,
same parameters and calibration data) stay within the same bound of ours.
"""
import importlib.util
import json

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.contrib import quantization as Q

from common import fixture_path


def _load_nets():
    # the fixture's net definitions, shared with its MXNet 1.9.1 generator (loaded by
    # path: no sys.path entry to clash with other tests' helper modules)
    path = fixture_path("quantization", "quantization_nets.py")
    spec = importlib.util.spec_from_file_location("quantization_nets", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.NETS


NETS = _load_nets()


def _tol(ref, steps=4):
    return steps * np.abs(ref).max() / 127


def _conv_sym():
    data = mx.sym.var("data")
    c = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv0")
    r = mx.sym.Activation(c, act_type="relu", name="relu0")
    p = mx.sym.Pooling(r, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool0")
    f = mx.sym.Flatten(p, name="flat0")
    fc = mx.sym.FullyConnected(f, num_hidden=5, name="fc0")
    return fc


def _params(sym, shape, rng):
    shapes, _, _ = sym.infer_shape(data=shape)
    return {n: mx.nd.array(rng.randn(*s) * 0.3) for n, s in
            zip(sym.list_arguments(), shapes) if n != "data"}


def _run(sym, args, aux, x):
    ex = sym.bind(mx.cpu(), {**args, "data": mx.nd.array(x)}, aux_states=aux or None,
                  grad_req="null")
    return ex.forward()[0].asnumpy()


def _ops(qsym):
    return [(n["op"], n["name"]) for n in json.loads(qsym.tojson())["nodes"]
            if n["op"] != "null"]


def test_graph_has_mxnets_structure_and_int8_weights():
    rng = np.random.RandomState(0)
    sym = _conv_sym()
    args = _params(sym, (2, 3, 8, 8), rng)
    qsym, qarg, qaux = Q.quantize_model(sym, args, {}, calib_mode="none",
                                        quantize_mode="full")
    # the node names and order MXNet 1.9.1's quantize_model gives this net
    assert _ops(qsym) == [
        ("_contrib_quantize_v2", "data_quantize"), ("_contrib_quantized_conv", "quantized_conv0"),
        ("_contrib_requantize", "requantize_conv0"), ("_contrib_quantized_act", "quantized_relu0"),
        ("_contrib_quantized_pooling", "quantized_pool0"),
        ("_contrib_quantized_flatten", "quantized_flat0"),
        ("_contrib_quantized_fully_connected", "quantized_fc0"),
        ("_contrib_requantize", "requantize_fc0"), ("_contrib_dequantize", "fc0_dequantize")]
    assert qarg["conv0_weight_quantize"].dtype == np.int8
    w = args["conv0_weight"].asnumpy()
    r = np.abs(w).max()
    assert qarg["conv0_weight_quantize_max"].asnumpy()[0] == pytest.approx(r)
    np.testing.assert_array_equal(qarg["conv0_weight_quantize"].asnumpy(),
                                  np.sign(w) * np.floor(np.abs(w) * 127 / r + 0.5))
    assert "conv0_weight" not in qarg


@pytest.mark.parametrize("calib_mode", ["none", "naive",
                                        # (8001-bin histograms: seconds per layer; the
                                        # quantize_net_v2 cases below run entropy always)
                                        pytest.param("entropy", marks=pytest.mark.slow)])
@pytest.mark.parametrize("quantized_dtype", ["int8", "auto"])
def test_quantize_model_output_within_quantization_error(calib_mode, quantized_dtype):
    rng = np.random.RandomState(1)
    sym = _conv_sym()
    args = _params(sym, (4, 3, 8, 8), rng)
    x = rng.randn(4, 3, 8, 8).astype(np.float32)
    calib = mx.io.NDArrayIter(np.concatenate([x, rng.randn(4, 3, 8, 8)]).astype(np.float32),
                              batch_size=4)
    qsym, qarg, qaux = Q.quantize_model(sym, args, {}, calib_mode=calib_mode,
                                        calib_data=calib, num_calib_examples=8,
                                        quantized_dtype=quantized_dtype)
    ref = _run(sym, args, {}, x)
    got = _run(qsym, qarg, qaux, x)
    # entropy calibration clips the tails of each layer's range on purpose (a threshold
    # below the largest value seen): twice the allowance there
    assert np.abs(got - ref).max() < _tol(ref, 8 if calib_mode == "entropy" else 4)
    if calib_mode != "none":
        attrs = {n["name"]: n.get("attrs", {}) for n in json.loads(qsym.tojson())["nodes"]}
        assert "min_calib_range" in attrs["data_quantize"]
        assert "max_calib_range" in attrs["requantize_fc0"]


def test_mlp_with_batch_norm_and_exclusions():
    rng = np.random.RandomState(2)
    data = mx.sym.var("data")
    h = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    h = mx.sym.BatchNorm(h, fix_gamma=False, name="bn1")
    h = mx.sym.Activation(h, act_type="relu", name="relu1")
    h = mx.sym.FullyConnected(h, num_hidden=3, name="fc2")
    args = _params(h, (8, 10), rng)
    args["bn1_gamma"] = mx.nd.array(rng.uniform(0.5, 1.5, 16))
    aux = {"bn1_moving_mean": mx.nd.array(rng.randn(16) * 0.1),
           "bn1_moving_var": mx.nd.array(rng.uniform(0.5, 1.5, 16))}
    x = rng.randn(8, 10).astype(np.float32)
    calib = mx.io.NDArrayIter(x, batch_size=4)
    qsym, qarg, qaux = Q.quantize_model(h, args, aux, calib_mode="naive", calib_data=calib)
    assert ("_contrib_quantized_batch_norm", "quantized_bn1") in _ops(qsym)
    ref = _run(h, args, aux, x)
    assert np.abs(_run(qsym, qarg, qaux, x) - ref).max() < _tol(ref)
    # excluded by name and by operator: those stay float
    qsym, qarg, qaux = Q.quantize_model(h, args, aux, calib_mode="naive", calib_data=calib,
                                        excluded_sym_names=["fc2"],
                                        excluded_op_names=["BatchNorm"])
    ops = dict((n, o) for o, n in _ops(qsym))
    assert ops["fc2"] == "FullyConnected" and ops["bn1"] == "BatchNorm"
    assert ops["quantized_fc1"] == "_contrib_quantized_fully_connected"
    assert np.abs(_run(qsym, qarg, qaux, x) - ref).max() < _tol(ref)
    # batch norm needs a calibrated range: uncalibrated it stays float
    qsym, _, _ = Q.quantize_model(h, args, aux, calib_mode="none")
    assert ("BatchNorm", "bn1") in _ops(qsym)


def test_quantize_graph_then_calib_graph_equals_quantize_model():
    rng = np.random.RandomState(3)
    sym = _conv_sym()
    args = _params(sym, (4, 3, 8, 8), rng)
    x = rng.randn(4, 3, 8, 8).astype(np.float32)
    qsym, qarg, qaux, collector = Q.quantize_graph(sym, args, {}, calib_mode="naive")
    assert set(collector.include_layer) == {"data", "conv0_output", "fc0_output"}
    # feed the collector through an executor monitor, as MXNet's examples do
    ex = sym.bind(mx.cpu(), {**args, "data": mx.nd.array(x)}, grad_req="null")
    ex.set_monitor_callback(collector.collect, monitor_all=True)
    ex.forward()
    collector.collect("data", mx.nd.array(x))
    qsym, qarg, qaux = Q.calib_graph(qsym, qarg, qaux, collector, calib_mode="naive")
    direct, _, _ = Q.quantize_model(sym, args, {}, calib_mode="naive",
                                    calib_data=mx.io.NDArrayIter(x, batch_size=4))
    assert qsym.tojson() == direct.tojson()


def test_combine_histogram_grows_symmetrically():
    rng = np.random.RandomState(4)
    a, b = rng.randn(1000), rng.randn(1000) * 3
    hist, edges = np.histogram(a, bins=101, range=(-4, 4))
    old = (hist, edges, a.min(), a.max(), 4.0)
    h2, e2, lo, hi, th = Q.combine_histogram(old, b, b.min(), b.max(), np.abs(b).max())
    assert len(h2) % 2 == 1 and th >= np.abs(b).max() and th == pytest.approx(-e2[0])
    np.testing.assert_allclose(np.diff(e2), 8 / 101, rtol=1e-9)
    want, _ = np.histogram(np.concatenate([a, b]), bins=len(h2), range=(-th, th))
    assert h2.sum() == 2000 and np.abs(h2 - want).max() <= 1
    assert (lo, hi) == (min(a.min(), b.min()), max(a.max(), b.max()))
    h3, e3, _, _, th3 = Q.combine_histogram(old, a * 0.5, 0, 1, 2.0)   # inside: same bins
    assert th3 == 4.0 and (e3 == edges).all() and h3.sum() == 2000


@pytest.mark.parametrize("name", sorted(NETS))
@pytest.mark.parametrize("calib_mode", ["none", "naive", "entropy"])
def test_quantize_net_v2_matches_mxnet(name, calib_mode):
    build, shape = NETS[name]
    data = np.load(fixture_path("quantization", f"{name}.npz"))
    params = fixture_path("quantization", f"{name}.params")
    net = build(mx.gluon.nn)
    net.load_parameters(params)
    ref = net(mx.nd.array(data["test"])).asnumpy()
    np.testing.assert_allclose(ref, data["float"], rtol=1e-5, atol=1e-6)
    loader = mx.gluon.data.DataLoader(mx.gluon.data.ArrayDataset(
        mx.nd.array(data["calib"]), mx.nd.zeros(len(data["calib"]))), batch_size=8)
    net.hybridize()
    qnet = Q.quantize_net_v2(net, quantized_dtype="auto", calib_mode=calib_mode,
                             calib_data=None if calib_mode == "none" else loader,
                             data_shapes=[mx.io.DataDesc("data", (4,) + shape)]
                             if calib_mode == "none" else None, num_calib_examples=16)
    assert isinstance(qnet, mx.gluon.SymbolBlock)
    got = qnet(mx.nd.array(data["test"])).asnumpy()
    assert np.abs(got - ref).max() < _tol(ref)
    assert np.abs(got - data[f"q_{calib_mode}"]).max() < _tol(ref)
    assert any(p.dtype == np.int8 for p in qnet.collect_params().values())


def test_quantize_net_warns_and_excludes():
    build, shape = NETS["mlp"]
    net = build(mx.gluon.nn)
    net.load_parameters(fixture_path("quantization", "mlp.params"))
    with pytest.warns(UserWarning, match="quantize_net_v2"):
        qnet = Q.quantize_net(net, calib_mode="none", data_shapes=[(2,) + shape],
                              exclude_layers_match=["dense2"])
    x = np.random.RandomState(5).randn(2, *shape).astype(np.float32)
    ref = net(mx.nd.array(x)).asnumpy()
    assert np.abs(qnet(mx.nd.array(x)).asnumpy() - ref).max() < _tol(ref)


def test_errors_name_the_problem():
    sym = _conv_sym()
    args = _params(sym, (2, 3, 8, 8), np.random.RandomState(6))
    with pytest.raises(MXNetError, match="calib_mode"):
        Q.quantize_model(sym, args, {}, calib_mode="minmax")
    with pytest.raises(MXNetError, match="calib_data"):
        Q.quantize_model(sym, args, {}, calib_mode="naive")
    with pytest.raises(MXNetError, match="quantized_dtype"):
        Q.quantize_model(sym, args, {}, calib_mode="none", quantized_dtype="int4")
    with pytest.raises(NotImplementedError, match="channel-wise"):
        Q.quantize_model(sym, args, {}, calib_mode="none",
                         quantize_granularity="channel-wise")
    with pytest.raises(MXNetError, match="HybridBlock"):
        Q.quantize_net_v2(mx.gluon.nn.Sequential(), data_shapes=[(1, 2)])
    with pytest.raises(MXNetError, match="cpu"):
        Q.quantize_model_mkldnn(sym, args, {}, ctx=mx.gpu(0), calib_mode="none")


def test_io_helpers_are_mxnets(tmp_path):
    assert Q.nd_load is mx.nd.load and Q.nd_save is mx.nd.save
    assert Q.sym_load is mx.sym.load
    qsym, qarg, _ = Q.quantize_model_mkldnn(_conv_sym(), _params(
        _conv_sym(), (2, 3, 8, 8), np.random.RandomState(7)), {}, calib_mode="none")
    qsym.save(str(tmp_path / "q-symbol.json"))
    assert Q.sym_load(str(tmp_path / "q-symbol.json")).tojson() == qsym.tojson()
