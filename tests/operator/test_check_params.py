"""Op.check_params: parameter values a Schema accepts field by field but the operator
rejects are refused once, when the call's parameters are parsed: by an imperative
call, by a symbol's creation (before any binding) and by loading a symbol's JSON."""
import json

import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import get_op

BAD = [("norm", {"ord": 3}, "only ord=1 and ord=2"),
       ("_contrib_quantized_act", {"act_type": "tanh"}, "only act_type='relu'"),
       ("_contrib_MultiBoxPrior", {"sizes": (0.5, -1.0)}, "must be positive"),
       ("RNN", {"state_size": 2, "num_layers": 1, "mode": "lstm",
                "lstm_state_clip_min": 1.0}, "given together"),
       ("multi_sgd_update", {"num_weights": 2, "lrs": (0.1,), "wds": (0.0, 0.0)},
        "lrs and wds need num_weights=2")]


@pytest.mark.parametrize("name, kwargs, msg", BAD)
def test_parse_refuses(name, kwargs, msg):
    with pytest.raises(MXNetError, match=msg):
        get_op(name).parse(kwargs)


@pytest.mark.parametrize("name, kwargs, msg", BAD[:3])
def test_symbol_creation_refuses_before_binding(name, kwargs, msg):
    with pytest.raises(MXNetError, match=msg):
        getattr(mx.sym.op, name)(mx.sym.var("data"), **kwargs)


def test_imperative_call_refuses():
    with pytest.raises(MXNetError, match="only ord=1 and ord=2"):
        mx.nd.norm(mx.nd.ones((2, 2)), ord=3)


def test_loading_json_refuses():
    doc = json.loads(mx.sym.norm(mx.sym.var("data"), ord=2).tojson())
    for node in doc["nodes"]:
        if node["op"] == "norm":
            node["attrs"]["ord"] = "3"
    with pytest.raises(MXNetError, match="only ord=1 and ord=2"):
        mx.sym.load_json(json.dumps(doc))


def test_runs_once_per_imperative_call(monkeypatch):
    op, seen = get_op("norm"), []
    monkeypatch.setattr(type(op), "check_params", lambda self, p: seen.append(p["ord"]),
                        raising=True)
    mx.nd.norm(mx.nd.ones((2, 2)), ord=1).asnumpy()
    assert seen == [1]


def test_variadic_input_count_is_checked_at_the_call():
    with pytest.raises(MXNetError, match="num_arrays=3 means 3 inputs, got 2"):
        mx.nd.multi_sum_sq(mx.nd.ones(2), mx.nd.ones(2), num_arrays=3)
