"""Run the Module and FeedForward example programs (seeds 000 and 004) on a few
hundred Fashion-MNIST samples for one epoch: they must learn (accuracy above chance,
the training loss going down) and produce well-formed predictions."""
import importlib.util
import os
import warnings

import numpy as np

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_module_lenet_with_custom_reorg_op(fashion_mnist):
    example = load_example("module_lenet_custom_op")
    res = example.main(["--epochs", "1", "--limit", "200", "--test-limit", "100",
                        "--batch-size", "20", "--lr", "0.05", "--init", "xavier"])
    prob = res["prob"]
    assert prob.shape == (100, 10)
    np.testing.assert_allclose(prob.sum(1), 1.0, rtol=1e-4)
    losses = res["batch_losses"]
    assert len(losses) == 10
    assert np.mean(losses[-3:]) < np.mean(losses[:3])
    assert res["test_accuracy"] > 0.2                      # chance is 0.1


def test_reorg_custom_op_against_numpy():
    """The reorg layer: channel 4c+q of the output is input channel c at row parity
    q // 2 and column parity q % 2; its gradient is the inverse permutation."""
    import mxnet as mx
    load_example("module_lenet_custom_op")                # registers 'reorg'
    rng = np.random.RandomState(0)
    x = rng.randn(2, 3, 4, 6).astype(np.float32)
    xs = mx.nd.array(x)
    xs.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(xs, op_type="reorg", stride=2)
    ref = np.empty((2, 12, 2, 3), np.float32)
    for c in range(3):
        for q in range(4):
            ref[:, 4 * c + q] = x[:, c, q // 2::2, q % 2::2]
    np.testing.assert_array_equal(y.asnumpy(), ref)
    g = rng.randn(*ref.shape).astype(np.float32)
    y.backward(mx.nd.array(g))
    gref = np.empty_like(x)
    for c in range(3):
        for q in range(4):
            gref[:, c, q // 2::2, q % 2::2] = g[:, 4 * c + q]
    np.testing.assert_array_equal(xs.grad.asnumpy(), gref)


def test_feedforward_mlp(fashion_mnist):
    example = load_example("feedforward_mlp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        res = example.main(["--epochs", "1", "--limit", "600", "--test-limit", "300",
                            "--lr", "0.1", "--batch-size", "20", "--track-loss"])
    losses = [h["cross-entropy"] for h in res["history"]]
    assert len(losses) == 30
    assert np.mean(losses[-5:]) < np.mean(losses[:5])
    assert res["test_accuracy"] > 0.2
