"""A Convolution's bias folded into the BatchNorm after it (executor/bias_fold.py).

GPU executors fold; here a CPU executor is made to (``applies`` forced) and must train
exactly as the plain executor: outputs, every gradient (the folded convolutions' bias
gradients included) and the moving statistics, which the fold moves by
(1 - momentum) * bias itself. The biases are non-zero, so a fold that lost them would
show in the moving means."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.executor import bias_fold
from mxnet.executor.prepared import FwdCall

from bound_runs import assert_same_runs, bind_random, small_resnet, switch_runs, train_steps


@pytest.fixture
def fold_on_cpu(monkeypatch):
    monkeypatch.setattr(bias_fold, "applies", lambda device: True)


def _bind(sym, grad_req="write"):
    return bind_random(sym, mx.cpu(), (2, 3, 8, 8), grad_req)


def _unbiased(ex):
    """Names of the convolutions whose calls run without their bias."""
    return sorted(c.name for c in ex._fcalls
                  if isinstance(c.fused, bias_fold._UnbiasedConvolution))


def _same(a, b):
    assert_same_runs(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_training_equals_the_plain_executor(fold_on_cpu, monkeypatch, grad_req):
    with monkeypatch.context() as m:
        m.setattr(bias_fold, "applies", lambda device: False)
        want = train_steps(_bind(small_resnet(), grad_req), steps=3)
    ex = _bind(small_resnet(), grad_req)
    got = train_steps(ex, steps=3)
    assert _unbiased(ex) == ["c1", "c2"]     # c3 has no bias
    _same(got, want)
    assert all(c.fused.folded[0] for c in ex._fcalls
               if isinstance(c.fused, bias_fold._UnbiasedConvolution))
    # the biases moved the moving means: a lost shift would show
    assert np.abs(want[2]["b1_moving_mean"]).max() > 1e-2


def test_the_folded_convolution_output_lacks_only_its_bias(fold_on_cpu):
    ex = _bind(small_resnet())
    ex.forward(is_train=True)
    g = ex._graph
    e = next(e for e in range(g.num_entries)
             if g.nodes[g.entry_node[e]].name == "c1" and e == g.row_ptr[g.entry_node[e]])
    x = ex.arg_dict["data"].asnumpy()
    w, b = ex.arg_dict["c1_weight"].asnumpy(), ex.arg_dict["c1_bias"].asnumpy()
    biased = mx.nd.Convolution(mx.nd.array(x), mx.nd.array(w), mx.nd.array(b),
                               kernel=(3, 3), pad=(1, 1), num_filter=16).asnumpy()
    np.testing.assert_allclose(np.asarray(ex._vals[e]) + b.reshape(1, -1, 1, 1), biased,
                               rtol=1e-4, atol=1e-5)


def test_inference_forward_runs_the_bias(fold_on_cpu, monkeypatch):
    """Not training, BatchNorm uses the moving statistics: both steps run as usual."""
    with monkeypatch.context() as m:
        m.setattr(bias_fold, "applies", lambda device: False)
        plain = _bind(small_resnet())
        train_steps(plain)
        plain.forward(is_train=False)
        want = [o.asnumpy() for o in plain.outputs]
    ex = _bind(small_resnet())
    train_steps(ex)
    ex.forward(is_train=False)
    for u, v in zip(ex.outputs, want):
        np.testing.assert_allclose(u.asnumpy(), v, rtol=1e-4, atol=1e-5)


def _conv_bn(**bn):
    x = mx.sym.var("data")
    c = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, name="c")
    return c, mx.sym.BatchNorm(c, fix_gamma=False, name="b", **bn)


@pytest.mark.parametrize("case", ["output", "second_reader", "global_stats",
                                  "mean_var_out", "other_axis"])
def test_nothing_folds_where_the_difference_could_be_seen(fold_on_cpu, case):
    c, b = _conv_bn(**({"use_global_stats": True} if case == "global_stats" else
                       {"output_mean_var": True} if case == "mean_var_out" else
                       {"axis": 2} if case == "other_axis" else {}))
    if case == "output":            # the convolution's output is a graph output
        sym = mx.sym.Group([mx.sym.make_loss(b.sum()), c])
    elif case == "second_reader":
        sym = mx.sym.make_loss((b + c).sum())
    elif case == "mean_var_out":    # the batch mean is an output too
        sym = mx.sym.Group([mx.sym.make_loss(b[0].sum()), b[1]])
    else:
        sym = mx.sym.make_loss(b.sum())
    ex = _bind(sym)
    ex.forward(is_train=True)
    assert _unbiased(ex) == []


def test_the_switch_turns_it_off(monkeypatch):
    monkeypatch.setenv("MXNET_GPU_CONV_BIAS_FOLD", "0")
    assert not bias_fold.applies("gpu")
    monkeypatch.delenv("MXNET_GPU_CONV_BIAS_FOLD")
    assert bias_fold.applies("gpu") and not bias_fold.applies("cpu")


def test_a_declining_convolution_keeps_the_bias_and_the_moving_mean(
        fold_on_cpu, monkeypatch):
    """Neither the kernel nor the body can take the call (as for a declined
    channels-last or bfloat16 call): the wrapped call runs the plain one (bias added)
    and the moving mean is not shifted."""
    with monkeypatch.context() as m:
        m.setattr(bias_fold, "applies", lambda device: False)
        want = train_steps(_bind(small_resnet()))
    monkeypatch.setattr(bias_fold, "_body_takes", lambda c: False)
    monkeypatch.setattr(bias_fold, "_KERNELS", {})     # the unbiased call's kernels only
    ex = _bind(small_resnet())
    _same(train_steps(ex), want)
    assert _unbiased(ex) == ["c1", "c2"]
    assert not any(c.fused.folded[0] for c in ex._fcalls
                   if isinstance(c.fused, bias_fold._UnbiasedConvolution))


def test_wrapped_calls_copy_every_slot():
    c = FwdCall()
    for name in FwdCall.__slots__:
        setattr(c, name, name)
    w = bias_fold._wrapped(c, len)
    assert w.fused is len and w.then == (c,)
    assert all(getattr(w, n) == n for n in FwdCall.__slots__ if n not in ("fused", "then"))


@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")
def test_on_a_gpu_training_equals_the_unfolded_executor(monkeypatch):
    want, ex, got = switch_runs(monkeypatch, "MXNET_GPU_CONV_BIAS_FOLD", mx.gpu(0))
    assert_same_runs(got, want, rtol=1e-3, atol=1e-4)
    folded = [c for c in ex._fcalls if isinstance(c.fused, bias_fold._UnbiasedConvolution)]
    assert [c.name for c in folded] == ["c1", "c2"] and all(c.fused.folded[0] for c in folded)
