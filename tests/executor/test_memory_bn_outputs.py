"""BatchNorm's backward reads its saved mean/invstd, not its normalised output: the
memory plan does not keep that output alive for backward (PyTorch-like activation
memory for conv-BN-ReLU stacks), and gradients stay those of the NumPy reference."""
import numpy as np

import mxnet as mx


def _net():
    x = mx.sym.Variable("data")
    c = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, pad=(1, 1), no_bias=True,
                           name="conv")
    b = mx.sym.BatchNorm(c, fix_gamma=False, name="bn")
    r = mx.sym.Activation(b, act_type="relu", name="relu")
    return mx.sym.make_loss(mx.sym.sum(r * r), name="loss")


def test_batchnorm_output_is_not_kept_for_backward():
    ex = _net().simple_bind(mx.cpu(), data=(2, 3, 6, 6))
    kept = ex.memory_plan.kept_for_backward()
    assert "bn_output" not in kept
    assert "conv_output" in kept            # BatchNorm's backward reads its input
    assert "relu_output" in kept            # ReLU's backward reads its output


def test_gradients_unchanged_by_the_narrower_plan():
    rng = np.random.RandomState(0)
    shapes = dict(data=(2, 3, 6, 6))
    ex = _net().simple_bind(mx.cpu(), **shapes)
    vals = {n: rng.randn(*a.shape).astype(np.float32) for n, a in ex.arg_dict.items()}
    for n, a in ex.arg_dict.items():
        a[:] = vals[n]
    ex.forward(is_train=True)
    ex.backward()
    # the same through autograd (the tape keeps only mean/invstd of BatchNorm too),
    # and a central finite difference on one weight entry
    args = {n: mx.nd.array(v) for n, v in vals.items()}
    for a in args.values():
        a.attach_grad()
    with mx.autograd.record():
        c = mx.nd.Convolution(args["data"], args["conv_weight"], kernel=(3, 3),
                              num_filter=4, pad=(1, 1), no_bias=True)
        b = mx.nd.BatchNorm(c, args["bn_gamma"], args["bn_beta"], mx.nd.zeros(4),
                            mx.nd.ones(4), fix_gamma=False)
        loss = mx.nd.sum(mx.nd.relu(b) ** 2)
    loss.backward()
    for n in vals:
        np.testing.assert_allclose(ex.grad_dict[n].asnumpy(), args[n].grad.asnumpy(),
                                   rtol=1e-4, atol=1e-4)

    def f(w):
        c = mx.nd.Convolution(args["data"], mx.nd.array(w), kernel=(3, 3), num_filter=4,
                              pad=(1, 1), no_bias=True)
        with mx.autograd.train_mode():
            b = mx.nd.BatchNorm(c, args["bn_gamma"], args["bn_beta"], mx.nd.zeros(4),
                                mx.nd.ones(4), fix_gamma=False)
        return float(mx.nd.sum(mx.nd.relu(b) ** 2).asscalar())
    w = vals["conv_weight"].astype(np.float64)
    eps = 1e-2
    wp, wm = w.copy(), w.copy()
    wp[0, 0, 1, 1] += eps
    wm[0, 0, 1, 1] -= eps
    num = (f(wp.astype(np.float32)) - f(wm.astype(np.float32))) / (2 * eps)
    np.testing.assert_allclose(ex.grad_dict["conv_weight"].asnumpy()[0, 0, 1, 1], num,
                               rtol=2e-2, atol=2e-2)
