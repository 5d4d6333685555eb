"""mx.monitor.Monitor sees backward too: each backward node's outputs are reported
under MXNet 1.9.1's names (<node>_backward_output<i>, taken from the real MXNet), with
the values of the gradients the executor computes."""
import numpy as np
import pytest

import mxnet as mx


def _bound():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    act = mx.sym.Activation(fc, act_type="relu", name="act")
    out = mx.sym.SoftmaxOutput(act, name="softmax")
    ex = out.simple_bind(mx.cpu(), data=(4, 5))
    rng = np.random.RandomState(0)
    ex.arg_dict["data"][:] = rng.uniform(-1, 1, (4, 5))
    ex.arg_dict["fc_weight"][:] = rng.uniform(-1, 1, (3, 5))
    ex.arg_dict["fc_bias"][:] = rng.uniform(-1, 1, (3,))
    ex.arg_dict["softmax_label"][:] = [0, 1, 2, 1]
    return ex


def test_callback_names_forward_and_backward():
    ex = _bound()
    names = []
    ex.set_monitor_callback(lambda name, arr: names.append(name.decode()))
    ex.forward(is_train=True)
    ex.backward()
    # the order and names real MXNet 1.9.1 reports for this graph
    assert names == ["fc_output", "act_output", "softmax_output",
                     "softmax_backward_output0", "softmax_backward_output1",
                     "act_backward_output", "fc_backward_output0", "fc_backward_output1",
                     "fc_backward_output2"]


def test_monitor_stats_of_gradients():
    ex = _bound()
    mon = mx.monitor.Monitor(1, pattern="fc_backward.*")
    mon.install(ex)
    mon.tic()
    ex.forward(is_train=True)
    ex.backward()
    res = {name: float(value.split()[0]) for _, name, value in mon.toc()}
    assert set(res) == {"fc_backward_output0", "fc_backward_output1",
                        "fc_backward_output2"}

    def rms(a):
        return float(np.sqrt((a ** 2).mean()))
    # outputs 1 and 2 of fc's backward are the weight and bias gradients
    assert res["fc_backward_output1"] == pytest.approx(
        rms(ex.grad_dict["fc_weight"].asnumpy()), rel=1e-5)
    assert res["fc_backward_output2"] == pytest.approx(
        rms(ex.grad_dict["fc_bias"].asnumpy()), rel=1e-5)
    assert res["fc_backward_output0"] == pytest.approx(
        rms(ex.grad_dict["data"].asnumpy()), rel=1e-5)


def test_monitor_all_input_names_follow_mxnet():
    # MXNet names an operator's inputs after its arguments where the operator lists
    # them (FullyConnected: data/weight/bias, softmax: data, elemwise_add: lhs/rhs) and
    # input0, input1... where it does not (Activation, sum, _plus_scalar, Reshape)
    a, b = mx.sym.var("a"), mx.sym.var("b")
    cases = {
        "fc": (mx.sym.FullyConnected(a, num_hidden=2, name="n"), ["n_data", "n_weight", "n_bias"]),
        "act": (mx.sym.Activation(a, act_type="relu", name="n"), ["n_input0"]),
        "sum": (mx.sym.sum(a, name="n"), ["n_input0"]),
        "scalar": (mx.sym._mul_scalar(mx.sym.broadcast_add(a, b, name="n"), scalar=2,
                                      name="m"), ["n_lhs", "n_rhs", "m_input0"]),
        "softmax": (mx.sym.softmax(a, name="n"), ["n_data"]),
        "reshape": (mx.sym.reshape(a, shape=(-1,), name="n"), ["n_input0"]),
    }
    for sym, want in cases.values():
        args = {n: mx.nd.ones((2, 2)) for n in sym.list_arguments()}
        args.update({n: mx.nd.ones((2,)) for n in sym.list_arguments() if n.endswith("bias")})
        ex = sym.bind(mx.cpu(), args)
        names = []
        ex.set_monitor_callback(lambda name, arr: names.append(name.decode()),
                                monitor_all=True)
        ex.forward()
        # (a variable input is also reported under its own name first, as in MXNet:
        # tests/executor/test_executor.py checks that order)
        got = [n for n in names if not n.endswith("_output")]
        for var in args:
            got.remove(var)
        assert got == want


def test_monitor_reports_unrequested_gradient_slots():
    # MXNet's backward node reports every input's gradient slot, also the data and
    # label ones nobody asked for (their buffers are left unwritten: zeros here)
    data, label = mx.sym.var("data"), mx.sym.var("label")
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(data, num_hidden=2, name="fc"),
                                        label, name="out")
    ex = net.simple_bind(mx.cpu(), data=(3, 4), label=(3, 2),
                         grad_req={"data": "null", "label": "null", "fc_weight": "write",
                                   "fc_bias": "write"})
    got = {}
    ex.set_monitor_callback(lambda name, arr: got.__setitem__(name.decode(), arr.asnumpy()))
    ex.forward(is_train=True)
    ex.backward()
    assert {"fc_backward_output0", "out_backward_output1"} <= set(got)
    assert not got["fc_backward_output0"].any() and got["fc_backward_output0"].shape == (3, 4)
    assert got["out_backward_output1"].shape == (3, 2)
