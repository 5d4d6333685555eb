"""Training steps of a bound executor with fixed random values, and the comparison of
two such runs: for the layout tests, which check that an executor keeping entries in
a device layout computes what the plain executor computes."""
import numpy as np


def bind_random(sym, ctx, data_shape, grad_req="write", classes=5, seed=0):
    """``sym.simple_bind`` with arguments drawn from ``seed`` (labels below
    ``classes``), moving means 0 and variances 1; 'add' gradients start at 0.25."""
    ex = sym.simple_bind(ctx, data=data_shape, grad_req=grad_req)
    rng = np.random.RandomState(seed)
    for name, arr in ex.arg_dict.items():
        if name.endswith("_label"):
            arr[:] = rng.randint(0, classes, arr.shape)
        else:
            arr[:] = rng.standard_normal(arr.shape).astype(np.float32) * 0.5
    for name, arr in ex.aux_dict.items():
        arr[:] = 1.0 if name.endswith("var") else 0.0
    if grad_req == "add":
        for arr in ex.grad_dict.values():
            if arr is not None:
                arr[:] = 0.25
    return ex


def train_steps(ex, steps=2):
    """(outputs of every step, final gradients, final auxiliary states) as NumPy."""
    outs = []
    for _ in range(steps):
        ex.forward(is_train=True)
        ex.backward()
        outs.append([o.asnumpy() for o in ex.outputs])
    grads = {k: v.asnumpy() for k, v in ex.grad_dict.items() if v is not None}
    aux = {k: v.asnumpy() for k, v in ex.aux_dict.items()}
    return outs, grads, aux


def assert_same_runs(a, b, rtol=1e-5, atol=1e-5):
    """Two ``train_steps`` results agree: outputs, gradients and auxiliary states."""
    (oa, ga, xa), (ob, gb, xb) = a, b
    for p, q in zip(oa, ob):
        for u, v in zip(p, q):
            np.testing.assert_allclose(u, v, rtol=rtol, atol=atol)
    assert ga.keys() == gb.keys()
    for k in ga:
        np.testing.assert_allclose(ga[k], gb[k], rtol=rtol, atol=atol, err_msg=k)
    for k in xa:
        np.testing.assert_allclose(xa[k], xb[k], rtol=rtol, atol=atol, err_msg=k)


def switch_runs(monkeypatch, env, ctx, data_shape=(4, 3, 16, 16), steps=3):
    """``train_steps`` of ``small_resnet(16)`` bound on ``ctx`` with environment switch
    ``env`` off ('0'), then on ('1'): (off's results, the 'on' executor, its results)."""
    runs = []
    for value in ("0", "1"):
        monkeypatch.setenv(env, value)
        ex = bind_random(small_resnet(channels=16), ctx, data_shape)
        runs.append((ex, train_steps(ex, steps=steps)))
    return runs[0][1], runs[1][0], runs[1][1]


def small_resnet(channels=16, classes=5):
    """A residual CNN with what a ResNet's executor meets: Convolution, BatchNorm,
    relu, a residual add (r1 read twice: its gradients add), max and global average
    pooling, a classifier; and a pooled map also read by slice_axis (an operator no
    device layout takes), so the convolution after it reads plain data. Node names:
    c1 b1 r1 c2 b2 sum r2 p c3 g fc."""
    import mxnet as mx
    sym = mx.sym
    x = sym.var("data")
    c1 = sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=channels, name="c1")
    b1 = sym.BatchNorm(c1, fix_gamma=False, name="b1")
    r1 = sym.Activation(b1, act_type="relu", name="r1")
    c2 = sym.Convolution(r1, kernel=(3, 3), pad=(1, 1), num_filter=channels, name="c2")
    b2 = sym.BatchNorm(c2, fix_gamma=False, name="b2")
    r2 = sym.relu(sym.elemwise_add(b2, r1, name="sum"), name="r2")
    p = sym.Pooling(r2, kernel=(2, 2), stride=(2, 2), pool_type="max", name="p")
    c3 = sym.Convolution(p, kernel=(1, 1), num_filter=channels, no_bias=True, name="c3")
    g = sym.Pooling(c3, kernel=(1, 1), global_pool=True, pool_type="avg", name="g")
    fc = sym.FullyConnected(sym.flatten(g), num_hidden=classes, name="fc")
    side = sym.make_loss(sym.mean(sym.slice_axis(p, axis=1, begin=0, end=3)), name="side")
    return sym.Group([sym.SoftmaxOutput(fc, name="out"), side])
