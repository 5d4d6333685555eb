"""The async-error rule (issue 19 point 1, issue 11 item 6a): an error raised while an
operator computes belongs to that operator's outputs and everything computed from them;
it is raised once, at the first sync point that depends on it (or at waitall), then
consumed; inputs, unrelated arrays and other threads never see it. Parameter and shape
errors still raise at the call."""
import threading

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError


@pytest.fixture(params=["inline", "engine"])
def size(request):
    """Small arrays run inline in the calling thread; large ones go through the engine's
    workers: the rule is the same on both paths."""
    return 4 if request.param == "inline" else 400


def test_issue_example_raised_once_then_waitall_returns(size):
    a = mx.nd.ones((size, size))
    b = mx.nd.take(a, mx.nd.array([999]), mode="raise")
    with pytest.raises(MXNetError, match=r"take.*\(%d, %d\)" % (size, size)):
        b.wait_to_read()
    mx.nd.waitall()                       # consumed: the user handled it
    np.testing.assert_array_equal(a.asnumpy(), np.ones((size, size)))   # input untouched


def test_compute_error_is_deferred_to_the_sync_point():
    b = mx.nd.random.normal(0, -1, (2, 2))      # returns: the failure is in the compute
    with pytest.raises(MXNetError, match="Error in operator _random_normal.*scale"):
        b.asnumpy()
    b.asnumpy()                                 # raised once


def test_error_flows_to_dependents_and_is_consumed_for_all(size):
    x = mx.nd.ones((size, size))
    bad = mx.nd.take(x, mx.nd.array([size + 5]), mode="raise")
    d1 = bad * 2
    d2 = mx.nd.dot(d1, mx.nd.ones((size, 3)))
    unrelated = x + 1
    np.testing.assert_array_equal(unrelated.asnumpy(), np.full((size, size), 2.0))
    with pytest.raises(MXNetError, match="take"):
        d2.asnumpy()
    d1.wait_to_read()                          # same failure: already raised
    bad.wait_to_read()
    mx.nd.waitall()
    assert x.sum().asscalar() == size * size


def test_waitall_raises_an_unsynced_failure_once():
    bad = mx.nd.take(mx.nd.ones((3,)), mx.nd.array([7]), mode="raise")
    with pytest.raises(MXNetError, match="take"):
        mx.nd.waitall()
    mx.nd.waitall()
    bad.wait_to_read()                          # consumed by waitall


def test_failed_inplace_write_keeps_old_values_and_input_is_clean():
    x = mx.nd.ones((2, 2))
    mx.nd.random.normal(0, -1, (2, 2), out=x)
    with pytest.raises(MXNetError):
        x.asnumpy()
    np.testing.assert_array_equal(x.asnumpy(), np.ones((2, 2)))
    idx = mx.nd.array([0, 9])
    src = mx.nd.arange(4)
    out = mx.nd.take(src, idx, mode="raise")
    src.wait_to_read()                          # the failed op's inputs never see it
    idx.wait_to_read()
    with pytest.raises(MXNetError):
        out.wait_to_read()


def test_copying_a_failed_array_in_carries_its_error_once():
    """x[:] = failed: the error reaches x (raised at x's sync point, once), it is not
    copied in as zeros with the error left for a later waitall."""
    failed = mx.nd.linalg.potrf(mx.nd.zeros((2, 2)))      # not positive definite
    x = mx.nd.ones((2, 2))
    x[:] = failed
    with pytest.raises(MXNetError, match="potrf"):
        x.wait_to_read()
    mx.nd.waitall()                                       # consumed: nothing left


def test_custom_op_writing_a_failed_array_fails_its_output():
    """A CustomOp whose forward copies a failed result into out_data fails its own
    output (MXNet's test_custom_op_exc, case 4), and nothing is left for waitall."""
    class Dot(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            out_data[0][:] = mx.nd.linalg.potrf(mx.nd.dot(in_data[0], in_data[1]))

        def backward(self, *args):
            pass

    @mx.operator.register("reliability_failed_dot")
    class DotProp(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ["a", "b"]

        def infer_shape(self, in_shape):
            return in_shape, [(in_shape[0][0], in_shape[1][1])]

        def create_operator(self, ctx, shapes, dtypes):
            return Dot()

    c = mx.nd.Custom(mx.nd.zeros((2, 1)), mx.nd.zeros((1, 2)),
                     op_type="reliability_failed_dot")
    with pytest.raises(MXNetError):
        c.wait_to_read()
    mx.nd.waitall()


def test_backward_through_a_failed_forward_raises_once():
    """backward() from a head whose forward failed raises that failure (once): no second
    error from the backward, nothing left for waitall."""
    x = mx.nd.ones((3, 2))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.take(x, mx.nd.array([7]), mode="raise")
    with pytest.raises(MXNetError, match="Error in operator take"):
        y.backward()
    mx.nd.waitall()


class _FailingForward(mx.operator.CustomOp):
    """Doubles its input; its forward raises while ``fail`` is set."""
    fail = True

    def forward(self, is_train, req, in_data, out_data, aux):
        if _FailingForward.fail:
            raise ValueError("forward failed on purpose")
        self.assign(out_data[0], req[0], in_data[0] * 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 2)


@mx.operator.register("reliability_failing_forward")
class _FailingForwardProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def infer_shape(self, in_shape):
        return in_shape, in_shape, []

    def create_operator(self, ctx, shapes, dtypes):
        return _FailingForward()


def test_executor_backward_after_a_failed_forward_keeps_the_failure(monkeypatch):
    """A bound executor whose forward fails, then backward, then the outputs are read:
    the read raises the forward's failure (as MXNet 1.9.1 does), once, instead of
    returning the never-written output memory; a later forward runs normally."""
    monkeypatch.setattr(_FailingForward, "fail", True)
    sym = mx.sym.Custom(mx.sym.var("data"), op_type="reliability_failing_forward")
    exe = sym.simple_bind(mx.cpu(), data=(2, 3))
    exe.arg_dict["data"][:] = 1
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 3)))
    with pytest.raises(MXNetError, match="forward failed on purpose"):
        exe.outputs[0].asnumpy()
    mx.nd.waitall()
    monkeypatch.setattr(_FailingForward, "fail", False)
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 3)))
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.full((2, 3), 2.0))
    np.testing.assert_array_equal(exe.grad_dict["data"].asnumpy(), np.full((2, 3), 2.0))


def test_a_new_forward_replaces_a_failed_one_not_yet_raised(monkeypatch):
    """A forward pushed after a failed one recomputes the outputs; the first failure
    is not lost: waitall raises it (once)."""
    monkeypatch.setattr(_FailingForward, "fail", True)
    sym = mx.sym.Custom(mx.sym.var("data"), op_type="reliability_failing_forward")
    exe = sym.simple_bind(mx.cpu(), data=(2, 3))
    exe.arg_dict["data"][:] = 1
    exe.forward(is_train=True)
    _FailingForward.fail = False
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.full((2, 3), 2.0))
    with pytest.raises(MXNetError, match="forward failed on purpose"):
        mx.nd.waitall()
    mx.nd.waitall()


def test_shape_and_parameter_errors_still_raise_at_the_call():
    with pytest.raises(MXNetError, match="dot"):
        mx.nd.dot(mx.nd.ones((2, 3)), mx.nd.ones((2, 3)))
    with pytest.raises(MXNetError, match="unknown parameter"):
        mx.nd.softmax(mx.nd.ones((2,)), foo=1)
    mx.nd.waitall()


def test_a_failing_custom_op_in_one_thread_leaves_three_others_alone():
    class Fail(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise ValueError("custom op failed on purpose")

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            pass

    @mx.operator.register("reliability_fail")
    class FailProp(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ["data"]

        def infer_shape(self, in_shape):
            return in_shape, in_shape, []

        def create_operator(self, ctx, shapes, dtypes):
            return Fail()

    errors, results = {}, {}
    barrier = threading.Barrier(4)

    def work(k):
        try:
            barrier.wait()
            x = mx.nd.ones((50, 50)) * k
            if k == 0:
                y = mx.nd.Custom(x, op_type="reliability_fail")
                try:
                    y.wait_to_read()
                except MXNetError as err:
                    errors[k] = str(err)
                mx.nd.waitall()
            else:
                for _ in range(50):
                    x = mx.nd.dot(x, mx.nd.ones((50, 50)) / 50)
                    mx.nd.waitall()                   # never raises the other thread's
                results[k] = x.asnumpy()
        except BaseException as err:             # any escape fails the test below
            errors[k] = repr(err)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert list(errors) == [0] and "custom op failed on purpose" in errors[0], errors
    for k in (1, 2, 3):
        np.testing.assert_allclose(results[k], np.full((50, 50), float(k)), rtol=1e-4)
    mx.nd.waitall()


def test_naive_engine_follows_the_same_rule():
    from mxnet import engine
    old = engine.get()
    engine.set_engine("NaiveEngine")
    try:
        b = mx.nd.take(mx.nd.ones((500, 500)), mx.nd.array([999]), mode="raise")
        c = b + 1
        with pytest.raises(MXNetError, match="take"):
            c.wait_to_read()
        mx.nd.waitall()
    finally:
        engine.set_engine(old)
