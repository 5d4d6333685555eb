"""mx.test_utils' symbolic helpers (check_symbolic_forward/backward, numeric
gradients for a Symbol, check_consistency, simple_forward) against NumPy."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import test_utils_symbolic as tus
from mxnet.name import NameManager


@pytest.fixture(autouse=True)
def _fresh_names():
    with NameManager():
        yield


def _fc():
    return mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")


def _values():
    rng = np.random.RandomState(3)
    return [rng.randn(4, 5).astype(np.float32), rng.randn(3, 5).astype(np.float32),
            rng.randn(3).astype(np.float32)]


def test_check_symbolic_forward_list_and_dict():
    x, w, b = _values()
    ref = x @ w.T + b
    outs = tus.check_symbolic_forward(_fc(), [x, w, b], [ref])
    np.testing.assert_allclose(outs[0], ref, rtol=1e-5)
    tus.check_symbolic_forward(_fc(), {"data": x, "fc_weight": w, "fc_bias": b},
                               {"fc_output": ref})
    with pytest.raises(AssertionError):
        tus.check_symbolic_forward(_fc(), [x, w, b], [ref + 1])


def test_check_symbolic_backward_write_add_null():
    x, w, b = _values()
    og = np.random.randn(4, 3).astype(np.float32)
    expected = {"data": og @ w, "fc_weight": og.T @ x, "fc_bias": og.sum(0)}
    got = tus.check_symbolic_backward(_fc(), [x, w, b], [og], expected)
    np.testing.assert_allclose(got["fc_bias"], og.sum(0), rtol=1e-5)
    tus.check_symbolic_backward(_fc(), [x, w, b], [og], expected, grad_req="add")
    tus.check_symbolic_backward(_fc(), [x, w, b], [og], expected,
                                grad_req={"data": "null", "fc_weight": "write",
                                          "fc_bias": "add"})
    with pytest.raises(AssertionError):
        tus.check_symbolic_backward(_fc(), [x, w, b], [og], {"data": og @ w + 1})


def test_check_numeric_gradient_symbol():
    x = mx.sym.var("x")
    y = mx.sym.var("y")
    sym = mx.sym.tanh(x) * y + mx.sym.square(x)
    loc = {"x": np.random.randn(3, 2), "y": np.random.randn(3, 2)}
    tus.check_numeric_gradient(sym, loc)
    mx.test_utils.check_numeric_gradient(sym, [loc["x"], loc["y"]], grad_nodes=["x"])
    tus.check_numeric_gradient(_fc(), _values(), dtype=np.float64)


def test_check_numeric_gradient_catches_a_wrong_backward():
    from mxnet.operator.params import Schema
    from mxnet.operator.registry import Op, list_ops, register

    class WrongSquare(Op):
        name = "_test_wrong_square_grad"
        params = Schema()
        backward_uses = ("out_grad", "in_data")

        def forward(self, ctx, p, inputs, aux):
            return [inputs[0] ** 2]

        def backward(self, ctx, p, out_grads, inputs, outputs, aux):
            return [out_grads[0] * inputs[0]]          # should be 2 * x

    if WrongSquare.name not in list_ops():
        register(WrongSquare)
    sym = mx.sym.Symbol._create(WrongSquare.name, [mx.sym.var("x")], {})
    with pytest.raises(AssertionError):
        tus.check_numeric_gradient(sym, [np.random.rand(4) + 0.5])


def test_check_consistency_across_dtypes():
    sym = mx.sym.Activation(_fc(), act_type="tanh")
    ctx_list = [{"ctx": mx.cpu(), "data": (4, 5), "type_dict": {"data": np.float32}},
                {"ctx": mx.cpu(), "data": (4, 5), "type_dict": {"data": np.float64}}]
    gt = tus.check_consistency(sym, ctx_list)
    assert set(gt) >= {"activation0_output", "data", "fc_weight", "fc_bias"}


def test_simple_forward():
    x = np.random.rand(2, 3).astype(np.float32)
    out = tus.simple_forward(mx.sym.relu(mx.sym.var("a") - 0.5), a=x)
    np.testing.assert_allclose(out, np.maximum(x - 0.5, 0), rtol=1e-6)
    two = tus.simple_forward(mx.sym.Group([mx.sym.var("a") * 2, mx.sym.var("a") + 1]), a=x)
    assert len(two) == 2


def test_reexported_from_test_utils():
    for name in ("check_symbolic_forward", "check_symbolic_backward", "check_consistency",
                 "simple_forward"):
        assert getattr(mx.test_utils, name) is getattr(tus, name)


def test_check_consistency_fills_missing_arg_params():
    # arguments left out of arg_params get random values, the given ones are used
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    ctx_list = [{"ctx": mx.cpu(), "data": (2, 4), "type_dict": {"data": np.float32}},
                {"ctx": mx.cpu(), "data": (2, 4), "type_dict": {"data": np.float64}}]
    bias = np.array([0.5, -1.0, 2.0])
    gt = tus.check_consistency(sym, ctx_list, grad_req="null",
                               arg_params={"fc_weight": np.zeros((3, 4)), "fc_bias": bias})
    # zero weights: the output is the given bias whatever random data was drawn
    np.testing.assert_allclose(gt["fc_output"], np.tile(bias, (2, 1)))


def test_check_consistency_takes_an_object_array_of_symbols():
    """MXNet's check_consistency_NxM passes np.repeat(sym_list, n): an object array."""
    import numpy as np
    a = mx.sym.var("a")
    syms = np.repeat([mx.sym.relu(a, name="r"), mx.sym.Activation(a, act_type="relu",
                                                                  name="r")], 1)
    ctx_list = [{"ctx": mx.cpu(), "a": (3, 4), "type_dict": {"a": np.float32}}] * 2
    mx.test_utils.check_consistency(syms, ctx_list)


def test_check_consistency_backpropagates_one_set_of_head_gradients(monkeypatch):
    """Every run's backward gets the first run's outputs rounded to the least precise
    output dtype (MXNet 1.9.1), not its own outputs."""
    seen = []
    real = mx.executor.Executor.backward

    def spy(self, out_grads=None, *a, **k):
        seen.append([g.asnumpy().astype(np.float64) for g in out_grads])
        return real(self, out_grads, *a, **k)
    monkeypatch.setattr(mx.executor.Executor, "backward", spy)
    ctx_list = [{"ctx": mx.cpu(), "data": (4, 5), "type_dict": {"data": t}}
                for t in (np.float64, np.float16, np.float32)]
    tus.check_consistency(_fc(), ctx_list)
    assert len(seen) == 3
    first = seen[0][0]
    assert np.array_equal(first, first.astype(np.float16).astype(np.float64))
    for heads in seen[1:]:
        np.testing.assert_array_equal(heads[0], first)


def test_check_consistency_holds_float32_gradients_of_a_float16_run_to_float16():
    """BatchNorm's gamma/beta gradients are float32 in a float16 run; they are sums
    over float16 values, judged with float16's tolerances (MXNet 1.9.1's rule). With
    float32's, beta's gradient fails for most random draws."""
    sym = mx.sym.BatchNorm(mx.sym.var("data"), name="norm", fix_gamma=False)
    ctx_list = [{"ctx": mx.cpu(), "data": (5, 2, 5, 5), "type_dict": {"data": t}}
                for t in (np.float32, np.float16, np.float64)]
    for seed in range(8):
        np.random.seed(seed)
        tus.check_consistency(sym, ctx_list)


def test_tolerance_dicts_by_dtype():
    from mxnet.test_utils_compare import default_rtols, get_tolerance, get_tols
    half, single = np.zeros(2, np.float16), np.zeros(2, np.float32)
    assert get_tolerance(half, {np.dtype(np.float16): 0.5}, default_rtols()) == 0.5
    assert get_tolerance(half, {np.dtype(np.float32): 0.5}, default_rtols()) == \
        default_rtols()[np.dtype(np.float16)]
    assert get_tolerance(single, 0.25, default_rtols()) == 0.25
    # the looser of the two arrays' entries
    assert get_tols(half, single, {np.dtype(np.float16): 0.3, np.dtype(np.float32): 0.1},
                    None)[0] == 0.3


@pytest.mark.parametrize("tf32", [True, False], ids=["tf32", "strict"])
def test_check_consistency_judges_a_tf32_gpu_run_as_float16(monkeypatch, tf32):
    """A float32 run on a GPU that allows TF32 (compute capability 8.0+, unless
    NVIDIA_TF32_OVERRIDE=0) is held to float16's tolerances, as MXNet 1.9.1 does by
    comparing the executors' NDArrays (effective_dtype): a 2e-3 relative error passes
    there and fails float32's 1e-4 under strict fp32."""
    from multi_gpu_host import emulated_gpus
    from mxnet import test_utils_compare
    monkeypatch.setattr(test_utils_compare, "get_cuda_compute_capability", lambda ctx: 90)
    if not tf32:
        monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    sym = mx.sym.exp(mx.sym.var("data"), name="e")
    data = np.random.uniform(0.5, 1.0, size=(4, 6))
    off_by_tf32 = {"e_output": np.exp(data) * (1 + 2e-3)}
    with emulated_gpus(1):
        ctx_list = [{"ctx": mx.gpu(0), "data": (4, 6), "type_dict": {"data": np.float32}},
                    {"ctx": mx.cpu(), "data": (4, 6), "type_dict": {"data": np.float64}}]
        run = lambda: tus.check_consistency(sym, ctx_list, grad_req="null",  # noqa: E731
                                            arg_params={"data": data},
                                            ground_truth=off_by_tf32)
        if tf32:
            gt = run()
            assert isinstance(gt["e_output"], np.ndarray)
        else:
            with pytest.raises(AssertionError, match="exceeds tolerance"):
                run()


def test_check_numeric_gradient_judges_a_tf32_gpu_run_as_float16(monkeypatch):
    """On a GPU that allows TF32, float32's numeric step is float16's (1e-2), and so are
    the tolerances the gradients are held to, as MXNet 1.9.1 compares the executor's
    gradient NDArrays: reciprocal near x = -0.21, whose central difference with that
    step is off by ~0.3 %, passes there (MXNet's test_reciprocal_op on an H200 failed
    with float32's 1e-4 while the step was float16's)."""
    from multi_gpu_host import emulated_gpus
    from mxnet import test_utils_compare
    monkeypatch.setattr(test_utils_compare, "get_cuda_compute_capability", lambda ctx: 90)
    data = np.array([[-0.212, 0.9, -2.5]], dtype=np.float32)
    sym = mx.sym.reciprocal(mx.sym.var("data"))
    with emulated_gpus(1):
        tus.check_numeric_gradient(sym, [data], ctx=mx.gpu(0))
        # float32's tolerances with the same step fail: the step is what TF32 changes
        with pytest.raises(AssertionError, match="exceeds tolerance"):
            tus.check_numeric_gradient(sym, [data], ctx=mx.gpu(0), rtol=1e-4, atol=1e-3)
