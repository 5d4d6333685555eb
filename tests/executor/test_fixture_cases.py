"""Every golden operator case of MXNet 1.9.1, replayed from its stored symbol JSON
through bind/forward/backward (the fixtures' own "symbol JSON executor" check)."""
import json

import numpy as np
import pytest

import mxnet as mx
from mxnet.test_utils import assert_almost_equal

from common import all_fixture_cases, fixture_path


def _case(name):
    return next(c for c in all_fixture_cases() if c["case"] == name)


@pytest.mark.parametrize("name", [c["case"] for c in all_fixture_cases()])
def test_case_through_executor(name):
    case = _case(name)
    data = np.load(fixture_path(case["file"]))
    sym = mx.sym.load_json(json.dumps(case["symbol_json"]))
    specs = {s["name"]: s for s in case["inputs"]}
    arrays = {n: mx.nd.array(data[specs[n]["key"]], dtype=specs[n]["dtype"])
              for n in sym.list_inputs()}
    args = {n: arrays[n] for n in sym.list_arguments()}
    aux = {n: arrays[n] for n in sym.list_auxiliary_states()}
    grads = {n: mx.nd.zeros(a.shape, dtype=a.dtype) for n, a in args.items()
             if specs[n]["differentiable"]}
    ex = sym.bind(mx.cpu(), args, args_grad=grads, grad_req="write", aux_states=aux)
    outs = ex.forward(is_train=case["autograd_train_mode"])
    for i, spec in enumerate(case["outputs"][:len(outs)]):
        assert np.dtype(outs[i].dtype) == np.dtype(spec["dtype"])
        assert_almost_equal(outs[i].asnumpy(), data[spec["key"]], rtol=1e-4, atol=1e-5,
                            names=(f"{name} out_{i}", "mxnet"))
    if case["grad_keys"]:
        heads = [None] * len(outs)
        for key in case["head_grad_keys"]:
            i = int(key.split("_")[1])
            heads[i] = mx.nd.array(data[key], dtype=outs[i].dtype)
        heads = [h if h is not None else mx.nd.zeros(o.shape, dtype=o.dtype)
                 for h, o in zip(heads, outs)]
        ex.backward(heads, is_train=case["autograd_train_mode"])
        for key in case["grad_keys"]:
            assert_almost_equal(grads[key[len("grad_"):]].asnumpy(), data[key], rtol=1e-4,
                                atol=1e-5, names=(f"{name} {key}", "mxnet"))
    for key in case["after_keys"]:
        assert_almost_equal(aux[key[len("after_"):]].asnumpy(), data[key], rtol=1e-4,
                            atol=1e-5, names=(f"{name} {key}", "mxnet"))
