"""mx.contrib.amp graph conversion: the op lists, convert_symbol against real MXNet
1.9.1's converted graph (fixtures/amp_convert_symbol.json, written by
fixtures/make_amp_fixture.py), and converted models computing what the float32 model
computes within float16 tolerance."""
import json
import os

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.contrib import amp
from mxnet.operator.registry import all_ops

HERE = os.path.dirname(__file__)
with open(os.path.join(HERE, "fixtures", "amp_convert_symbol.json")) as f:
    REF = json.load(f)


def net():
    with mx.name.NameManager():      # fresh _plus0/_plus1 names, as in the fixture
        return _net()


def _net():
    d = mx.sym.var("data")
    c = mx.sym.Convolution(d, num_filter=4, kernel=(3, 3), name="conv")
    b = mx.sym.BatchNorm(c, name="bn")
    a = mx.sym.Activation(b, act_type="relu", name="relu")
    a2 = mx.sym.Activation(b, act_type="softrelu", name="srelu")
    s = a + a2
    f = mx.sym.FullyConnected(s, num_hidden=3, name="fc")
    e = mx.sym.exp(f, name="exp")
    return mx.sym.SoftmaxOutput(e + f, name="out")


def nodes(sym):
    return [[n["op"], n["name"], n.get("attrs", {}), [x[0] for x in n["inputs"]]]
            for n in json.loads(sym.tojson(remove_amp_cast=False))["nodes"]]


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_lists_name_only_registered_ops(dt):
    reg = set(all_ops())
    names = (amp.list_lp16_ops(dt) + amp.list_fp32_ops(dt) + amp.list_lp16_fp32_ops(dt)
             + amp.list_widest_type_cast(dt) + amp.list_loss_output_functions(dt)
             + [c[0] for c in amp.list_conditional_fp32_ops(dt)])
    assert names and set(names) <= reg, sorted(set(names) - reg)


def test_list_contents():
    assert amp.list_lp16_ops("float16") == ["Convolution", "Deconvolution", "FullyConnected",
                                            "RNN"]
    assert ("Activation", "act_type", ["softrelu"]) in amp.list_conditional_fp32_ops("float16")
    assert "SoftmaxOutput" in amp.list_loss_output_functions("float16")
    assert "elemwise_add" in amp.list_widest_type_cast("float16")
    assert "BatchNorm" in amp.list_lp16_use_fp32_params("bfloat16")
    with pytest.raises(MXNetError):
        amp.list_lp16_use_fp32_params("float16")
    with pytest.raises(MXNetError):
        amp.list_lp16_ops("float32")


@pytest.mark.parametrize("case,kwargs", [
    ("plain", {}),
    ("cast_optional_params", {"cast_optional_params": True}),
    ("excluded_fc", {"excluded_sym_names": ["fc"]}),
    ("fp32_ops_override", {"target_dtype_ops": ["Convolution"], "fp32_ops": ["FullyConnected"]}),
    ("bf16_plain", {"target_dtype": "bfloat16"}),
    ("bf16_cast_optional_params", {"target_dtype": "bfloat16", "cast_optional_params": True}),
])
def test_convert_symbol_matches_mxnet(case, kwargs):
    got = nodes(amp.convert_symbol(net(), data_names=["data"], **kwargs))
    assert got == REF[case]


def test_saved_json_drops_amp_casts():
    conv = amp.convert_symbol(net(), data_names=["data"])
    got = json.loads(conv.tojson())["nodes"]
    assert [(n["op"], n["name"]) for n in got] == \
        [(n["op"], n["name"]) for n in REF["saved_default"]]
    assert not any(n["op"].startswith("amp_") for n in got)


def test_convert_symbol_types_and_multicast():
    conv = amp.convert_symbol(net(), data_names=["data"])
    internals = conv.get_internals()
    _, out_types, _ = internals.infer_type(data="float32")
    types = dict(zip(internals.list_outputs(), out_types))
    assert types["conv_output"] == np.float16 and types["fc_output"] == np.float16
    assert types["exp_output"] == np.float32 and types["out_output"] == np.float32
    # input types unknown to the pass (no data_names type: a fresh symbol in the
    # sym front end) -> amp_multicast when amp.init wraps mx.sym (see training tests)


def test_bad_arguments():
    with pytest.raises(MXNetError, match="float16"):
        amp.convert_symbol(net(), target_dtype="int8")
    with pytest.raises(MXNetError, match="two lists"):
        amp.convert_symbol(net(), target_dtype_ops=["FullyConnected"],
                           fp32_ops=["FullyConnected"])
    with pytest.raises(MXNetError, match="none of AMP"):
        amp.convert_symbol(net(), fp32_ops=["NoSuchOp"])
    with pytest.raises(MXNetError, match="bfloat16"):
        amp.init(target_dtype="float64")


def _model(rng):
    sym = net()
    arg_shapes, _, aux_shapes = sym.infer_shape(data=(2, 3, 6, 6))
    args = {n: mx.nd.array(rng.normal(0, 0.3, s)) for n, s in
            zip(sym.list_arguments(), arg_shapes) if n not in ("data", "out_label")}
    aux = {n: mx.nd.array(rng.uniform(0.5, 1.5, s)) for n, s in
           zip(sym.list_auxiliary_states(), aux_shapes)}
    return sym, args, aux


def _run(sym, args, aux, data):
    ex = sym.bind(mx.cpu(), dict(args, data=data, out_label=mx.nd.zeros((2,))),
                  aux_states=dict(aux), grad_req="null")
    return ex.forward(is_train=False)[0].asnumpy()


# how close a converted model's outputs stay to the float32 model's
_CONVERT_TOL = {"float16": (2e-2, 2e-3), "bfloat16": (5e-2, 1e-2)}


@pytest.mark.parametrize("target", ["float16", "bfloat16"])
@pytest.mark.parametrize("cop", [False, True])
def test_convert_model_matches_float32(cop, target):
    rng = np.random.default_rng(0)
    sym, args, aux = _model(rng)
    data = mx.nd.array(rng.normal(size=(2, 3, 6, 6)))
    ref = _run(sym, args, aux, data)
    csym, cargs, caux = amp.convert_model(sym, args, aux, target_dtype=target,
                                          cast_optional_params=cop)
    want = np.dtype(target) if cop else np.float32
    assert cargs["conv_weight"].dtype == want and cargs["fc_bias"].dtype == want
    assert cargs["bn_gamma"].dtype == np.float32 and caux["bn_moving_var"].dtype == np.float32
    got = _run(csym, cargs, caux, data)
    assert got.dtype == np.float32
    rtol, atol = _CONVERT_TOL[target]
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


@pytest.mark.parametrize("target", ["float16", "bfloat16"])
def test_convert_hybrid_block_matches_float32(target):
    rng = np.random.default_rng(1)
    blk = mx.gluon.nn.HybridSequential()
    blk.add(mx.gluon.nn.Conv2D(4, 3), mx.gluon.nn.BatchNorm(),
            mx.gluon.nn.Activation("relu"), mx.gluon.nn.Dense(5))
    blk.initialize(mx.init.Xavier())
    blk.hybridize()
    x = mx.nd.array(rng.normal(size=(2, 3, 8, 8)))
    ref = blk(x).asnumpy()
    with pytest.raises(MXNetError, match="hybridize"):
        fresh = mx.gluon.nn.Dense(2)
        fresh.initialize()
        amp.convert_hybrid_block(fresh, ctx=mx.cpu())
    for cop in (False, True):
        conv = amp.convert_hybrid_block(blk, target_dtype=target, ctx=mx.cpu(),
                                        cast_optional_params=cop)
        out = conv(x)
        assert out.dtype == np.float32          # outputs are cast back to float32
        np.testing.assert_allclose(out.asnumpy().astype(np.float32), ref,
                                   rtol=2e-2, atol=2e-2 if target == "float16" else 5e-2)
        dtypes = {p.name: p.data().dtype for p in conv.collect_params().values()}
        fc_w = [n for n in dtypes if n.endswith("weight") and "dense" in n][0]
        assert dtypes[fc_w] == (np.dtype(target) if cop else np.float32)
        assert all(dtypes[n] == np.float32 for n in dtypes if "batchnorm" in n)


def test_convert_hybrid_block_rnn():
    """MXNet's test_amp_conversion_rnn on CPU (input_size given: pymxnet cannot yet
    defer an LSTM's input size in a hybridized graph)."""
    model = mx.gluon.nn.HybridSequential()
    model.add(mx.gluon.rnn.LSTM(hidden_size=10, num_layers=2, bidirectional=True,
                                input_size=4))
    model.add(mx.gluon.nn.Dense(2))
    model.initialize()
    model.hybridize()
    x = mx.nd.ones((2, 3, 4))
    out = model(x)
    converted = amp.convert_hybrid_block(model, ctx=mx.cpu())
    out2 = converted(x)
    assert out2.dtype == np.float32
    mx.test_utils.assert_almost_equal(out.asnumpy(), out2.asnumpy(), atol=1e-2, rtol=1e-2)


def test_mxnet_fp16_casting_cases():
    """MXNet's test_fp16_casting (cast_optional_params with amp_cast / amp_multicast
    already in the graph), on CPU."""
    def arg_dtypes(sym, **shapes):
        return [a.dtype for a in sym.simple_bind(ctx=mx.cpu(), **shapes).arg_arrays]

    data = mx.sym.var("data")
    out1 = mx.sym.amp_cast(data, dtype="float16")
    out2 = mx.sym.amp_cast(data, dtype="float32")
    out3 = mx.sym.amp_cast(data, dtype="float16")
    res = amp.convert_symbol(mx.sym.Group([out1, out2]), data_names=[],
                             cast_optional_params=True)
    assert arg_dtypes(res, data=(1, 2))[0] == np.float32
    res = amp.convert_symbol(mx.sym.Group([out1, out3]), data_names=[],
                             cast_optional_params=True)
    assert arg_dtypes(res, data=(1, 2))[0] == np.float16

    data = mx.sym.var("data", dtype=np.float32)
    data2 = mx.sym.var("data2", dtype=np.float16)
    res = amp.convert_symbol(mx.sym.amp_multicast(data, data2, num_outputs=2),
                             cast_optional_params=True)
    assert arg_dtypes(res, data=(1, 2), data2=(1, 2))[0] == np.float16

    data3 = mx.sym.var("data3", dtype=np.float16)
    out5 = mx.sym.amp_multicast(data, mx.sym.elemwise_add(data2, data3), num_outputs=2)
    res = amp.convert_symbol(out5, target_dtype_ops=[], fp32_ops=[], cast_optional_params=True)
    assert arg_dtypes(res, data=(1, 2), data2=(1, 2), data3=(1, 2))[0] == np.float32

    d16, d32 = mx.sym.var("data", dtype=np.float16), mx.sym.var("data2", dtype=np.float32)
    out7 = mx.sym.Group([mx.sym.amp_multicast(d16, d32, num_outputs=2),
                         mx.sym.amp_cast(d16, dtype="float16")])
    res = amp.convert_symbol(out7, target_dtype_ops=[], fp32_ops=[], cast_optional_params=True)
    assert arg_dtypes(res, data=(1, 2), data2=(1, 2))[0] == np.float16
    d32, d16 = mx.sym.var("data", dtype=np.float32), mx.sym.var("data2", dtype=np.float16)
    out8 = mx.sym.Group([mx.sym.amp_multicast(d32, d16, num_outputs=2),
                         mx.sym.amp_cast(d32, dtype="float16")])
    res = amp.convert_symbol(out8, target_dtype_ops=[], fp32_ops=[], cast_optional_params=True)
    assert arg_dtypes(res, data=(1, 2), data2=(1, 2))[0] == np.float16

    a, b = mx.sym.var("data"), mx.sym.var("data2")
    a._set_attr(__dtype__="-1")
    b._set_attr(__dtype__="-1")
    with mx.name.NameManager():
        out = mx.sym.split(mx.sym.concat(a, b), axis=1, num_outputs=2)
    conv = amp.convert_symbol(out)
    assert [(n["op"], n["name"]) for n in json.loads(conv.tojson(remove_amp_cast=False))[
        "nodes"]] == [("null", "data"), ("null", "data2"), ("amp_multicast", "data_amp_multicast"),
                      ("Concat", "concat0"), ("SliceChannel", "split0"),
                      ("amp_cast", "split0_output0_amp_cast_float32"),
                      ("amp_cast", "split0_output1_amp_cast_float32")]


def test_module_with_converted_model():
    """MXNet's test_module_backward_compatibility on CPU: a parameter read by an op
    that now sees float16 data is stored as float16."""
    data = mx.sym.var("data")
    conv = mx.sym.Convolution(data, num_filter=10, kernel=(2, 3),
                              name="convolution0")   # auto names depend on test order
    bn = mx.sym.BatchNorm(conv, fix_gamma=False, name="conv0_batchnorm")
    fc = mx.sym.FullyConnected(bn, num_hidden=10, name="fullyconnected")
    mod = mx.mod.Module(fc, data_names=["data"], label_names=None, context=mx.cpu())
    mod.bind(data_shapes=[("data", (1, 3, 16, 16))])
    mod.init_params()
    sym, args, aux = amp.convert_model(mod._symbol, mod._arg_params, mod._aux_params,
                                       target_dtype_ops=["Convolution"])
    assert args["fullyconnected_weight"].dtype == np.float16
    assert args["convolution0_weight"].dtype == np.float32
    mod2 = mx.mod.Module(sym, data_names=["data"], label_names=None, context=mx.cpu())
    mod2.bind(data_shapes=[("data", (1, 3, 16, 16))], for_training=False)
    mod2.set_params(args, aux)
    x = mx.nd.array(np.random.default_rng(0).normal(size=(1, 3, 16, 16)))
    mod.forward(mx.io.DataBatch([x]), is_train=False)
    mod2.forward(mx.io.DataBatch([x]), is_train=False)
    assert mod2.get_outputs()[0].dtype == np.float32
    np.testing.assert_allclose(mod2.get_outputs()[0].asnumpy(),
                               mod.get_outputs()[0].asnumpy(), rtol=2e-2, atol=2e-2)


def test_convert_bucketing_module():
    def sym_gen(key):
        data = mx.sym.var("data")
        fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
        return mx.sym.SoftmaxOutput(fc, name="softmax"), ("data",), ("softmax_label",)

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=5, context=mx.cpu())
    mod.bind(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2,))],
             for_training=False)
    mod.init_params(mx.init.Xavier())
    x = mx.nd.array(np.random.default_rng(0).normal(size=(2, 5)))
    batch = mx.io.DataBatch([x], [mx.nd.zeros((2,))], bucket_key=5,
                            provide_data=[("data", (2, 5))],
                            provide_label=[("softmax_label", (2,))])
    mod.forward(batch, is_train=False)
    ref = mod.get_outputs()[0].asnumpy()
    with pytest.raises(MXNetError, match="bound"):
        amp.convert_bucketing_module(mx.mod.BucketingModule(sym_gen, default_bucket_key=5))
    conv = amp.convert_bucketing_module(mod)
    assert not conv.binded
    conv.bind(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2,))],
              for_training=False)
    conv.forward(batch, is_train=False)
    ops = [n.op.name for n in conv._curr_module._symbol._topo() if n.op is not None]
    assert ops.count("amp_cast") == 4          # data, weight, bias to fp16; fc out to fp32
    np.testing.assert_allclose(conv.get_outputs()[0].asnumpy(), ref, rtol=2e-2, atol=2e-3)
