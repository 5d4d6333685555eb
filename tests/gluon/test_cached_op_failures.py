"""A hybridized block whose input was written by failed work: the failure surfaces once,
at the first read of the block's output (or waitall), whether the call runs the
executor, a static-memory executor or a CUDA graph (the stand-in graph backend of
tests/executor/test_cuda_graph.py); the block's own waits before its next call (to
re-point or reuse its buffers) do not consume it."""
import time

import pytest

import mxnet as mx
from mxnet import engine
from mxnet.base import MXNetError

from executor.test_cuda_graph import FakeBackend, _net
from mxnet.executor import cuda_graph


def _written_by_failed_work(shape, delay=0.1):
    """An array whose (pending) producer fails after ``delay`` seconds."""
    arr = mx.nd.ones(shape)

    def fail(rctx):
        time.sleep(delay)
        raise RuntimeError("upstream kernel failed")
    engine.get().push_sync(fail, arr.context, [], [arr._chunk], 0, "failing")
    return arr


def _raised(*reads):
    try:
        for r in reads:
            r()
    except MXNetError as err:
        return "upstream kernel failed" in str(err)
    return False


@pytest.fixture(params=["plain", "static", "graphs"])
def hybridized(request, monkeypatch):
    monkeypatch.setenv("MXNET_EXEC_INLINE_MAX_BYTES", "0")     # executor runs are pushed
    if request.param == "graphs":
        monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "1")
        monkeypatch.setattr(cuda_graph, "_test_backend", FakeBackend())
    net = _net()
    if request.param == "plain":
        net.hybridize()
    else:
        net.hybridize(static_alloc=True, static_shape=True)
    return net


def test_the_failure_reaches_the_output_read(hybridized):
    x = mx.nd.ones((4, 5))
    hybridized(x).asnumpy()
    hybridized(x).asnumpy()          # warm: with graphs, the next call captures
    out = hybridized(_written_by_failed_work((4, 5)))
    assert _raised(out.asnumpy, mx.nd.waitall)


def test_the_next_call_does_not_swallow_the_previous_failure(hybridized):
    x = mx.nd.ones((4, 5))
    for _ in range(4):
        hybridized(x).asnumpy()
    first = hybridized(_written_by_failed_work((4, 5)))
    second = hybridized(x)           # waits for the first run before reusing buffers
    assert _raised(first.asnumpy, mx.nd.waitall)
    second.asnumpy()                 # the engine keeps working
