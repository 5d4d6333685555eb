"""mx.profiler: the trace it writes is valid Chrome trace JSON whose timed events nest
per thread, operators appear by name (imperative, inline or pushed, and per executor
node), the aggregate table counts calls, and nothing is recorded when stopped."""
import json
import os
from collections import defaultdict

import numpy as np
import pytest

import mxnet as mx
from mxnet import profiler
from mxnet.base import MXNetError
from mxnet.engine import base as engine_base


@pytest.fixture
def trace_file(tmp_path):
    path = tmp_path / "trace.json"
    profiler.set_config(profile_all=True, aggregate_stats=True, filename=str(path))
    profiler.dumps(reset=True)
    yield path
    profiler.set_state("stop")
    profiler.set_config(profile_all=False, aggregate_stats=False, filename="profile.json")
    profiler.dumps(reset=True)
    profiler.core.clear_events()


def _load(path):
    with open(path) as f:
        return json.load(f)


def _check_nesting(events):
    """Complete events on one (pid, tid) track either nest or are disjoint."""
    tracks = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            tracks[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], e["name"]))
    assert tracks
    eps = 1e-3
    for spans in tracks.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for start, end, name in spans:
            while stack and stack[-1][1] <= start + eps:
                stack.pop()
            if stack:
                assert end <= stack[-1][1] + eps, f"{name} overlaps {stack[-1][2]}"
            stack.append((start, end, name))


def test_hook_off_when_stopped(trace_file):
    assert engine_base.profile_hook is None
    profiler.set_state("run")
    assert engine_base.profile_hook is not None
    profiler.pause()
    assert engine_base.profile_hook is None
    profiler.resume()
    assert engine_base.profile_hook is not None
    profiler.set_state("stop")
    assert engine_base.profile_hook is None


def test_imperative_ops_recorded_and_counted(trace_file):
    profiler.set_state("run")
    a = mx.nd.ones((10,))
    b = mx.nd.sqrt(a + 1)
    big = mx.nd.ones((600, 600))          # large enough to go through the engine
    c = (big + 1) + 1
    mx.nd.waitall()
    profiler.set_state("stop")
    stats = json.loads(profiler.dumps(format="json"))["Time"]["operator"]
    assert stats["sqrt"]["Count"] == 1
    assert stats["_plus_scalar"]["Count"] == 3
    assert stats["_ones"]["Count"] == 2
    np.testing.assert_allclose(b.asnumpy(), np.sqrt(2.0), rtol=1e-6)
    assert c.asnumpy()[0, 0] == 3
    profiler.dump()
    trace = _load(trace_file)
    names = {e["name"] for e in trace["traceEvents"] if e["ph"] == "X"}
    assert {"sqrt", "_plus_scalar", "_ones"} <= names
    assert trace["displayTimeUnit"] == "ms"
    _check_nesting(trace["traceEvents"])


def test_nothing_recorded_when_stopped(trace_file):
    x = mx.nd.ones((4,)) * 2
    x.wait_to_read()
    assert profiler.dumps(format="json") and \
        json.loads(profiler.dumps(format="json"))["Time"] == {}


def test_executor_nodes_nest_in_forward_backward(trace_file):
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    net = mx.sym.Activation(net, act_type="relu", name="act")
    ex = net.simple_bind(mx.cpu(), data=(2, 4))
    profiler.set_state("run")
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((2, 3)))
    mx.nd.waitall()
    profiler.set_state("stop")
    profiler.dump()
    events = [e for e in _load(trace_file)["traceEvents"] if e["ph"] == "X"]
    names = [e["name"] for e in events]
    for n in ("FullyConnected", "Activation", "_backward_Activation",
              "_backward_FullyConnected", "Executor.forward", "Executor.backward"):
        assert n in names
    fwd = next(e for e in events if e["name"] == "Executor.forward")
    fc = next(e for e in events if e["name"] == "FullyConnected")
    assert fwd["tid"] == fc["tid"]
    assert fwd["ts"] <= fc["ts"] and fc["ts"] + fc["dur"] <= fwd["ts"] + fwd["dur"] + 1e-3
    _check_nesting(events)


def test_symbolic_only_leaves_out_imperative(trace_file):
    profiler.set_config(profile_all=False, profile_symbolic=True, profile_imperative=False)
    data = mx.sym.var("data")
    ex = mx.sym.relu(data, name="r").simple_bind(mx.cpu(), data=(3,))
    profiler.set_state("run")
    (mx.nd.ones((3,)) + 1).wait_to_read()
    ex.forward()
    mx.nd.waitall()
    profiler.set_state("stop")
    stats = json.loads(profiler.dumps(format="json"))["Time"]["operator"]
    assert "relu" in stats and "_plus_scalar" not in stats


def test_user_objects_and_sorting(trace_file):
    profiler.set_state("run")
    dom = profiler.Domain("D")
    task = dom.new_task("T")
    task.start()
    task.stop()
    frame = profiler.Frame(dom, "F")
    frame.start()
    frame.stop()
    ev = profiler.Event("E")
    for _ in range(3):
        ev.start()
        ev.stop()
    counter = dom.new_counter("C", 5)
    counter += 2
    counter -= 1
    profiler.Marker(dom, "M").mark("thread")
    profiler.set_state("stop")
    doc = json.loads(profiler.dumps(format="json", sort_by="count", ascending=True))
    assert doc["Time"]["D"]["T"]["Count"] == 1
    assert doc["Time"]["D,frame"]["F"]["Count"] == 1
    assert doc["Time"]["event"]["E"]["Count"] == 3
    assert doc["Unit"] == {"Time": "ms", "Memory": "kB"}
    profiler.dump()
    events = _load(trace_file)["traceEvents"]
    counts = [e["args"]["C"] for e in events if e["ph"] == "C"]
    assert counts == [5, 7, 6]
    assert any(e["ph"] == "i" and e["name"] == "M" and e["s"] == "t" for e in events)
    table = profiler.dumps()
    assert "Total Count" in table and "event" in table


def test_scope_prefixes_operator_names(trace_file):
    profiler.set_state("run")
    with profiler.scope("fwd:"):
        (mx.nd.ones((3,)) * 2).wait_to_read()
    profiler.set_state("stop")
    stats = json.loads(profiler.dumps(format="json"))["Time"]["operator"]
    assert "fwd:_mul_scalar" in stats


def test_bad_options():
    with pytest.raises(MXNetError, match="bogus"):
        profiler.set_config(bogus=1)
    with pytest.raises(KeyError):
        profiler.set_state("walk")
    with pytest.raises(AssertionError):
        profiler.dumps(format="xml")
    with pytest.raises(AssertionError):
        profiler.dumps(sort_by="median")
    with pytest.raises(MXNetError, match="valid values"):
        profiler.Marker(profiler.Domain("d"), "m").mark("galaxy")
    with pytest.raises(MXNetError):
        profiler.Task("not a domain", "t")


class _Double(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * 2)
        mx.nd.zeros((2, 2))                  # an operator run inside the callback

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 2)


@mx.operator.register("ProfDouble")
class _DoubleProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["data"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        return [in_shape[0]], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Double()


def test_custom_operator_callbacks_named(trace_file):
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    profiler.set_state("run")
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="ProfDouble")
    y.backward()
    mx.nd.waitall()
    profiler.set_state("stop")
    np.testing.assert_array_equal(x.grad.asnumpy(), [2.0, 2.0])
    custom = json.loads(profiler.dumps(format="json"))["Time"]["Custom Operator"]
    assert {"ProfDouble::pure_python", "_backward_ProfDouble::pure_python",
            "ProfDouble::_zeros", "ProfDouble::_mul_scalar"} <= set(custom)


def test_dumps_append_and_stay_valid_json(trace_file):
    profiler.set_state("run")
    ev = profiler.Event("first")
    ev.start()
    ev.stop()
    profiler.dump(False)
    size1 = os.path.getsize(trace_file)
    assert [e["name"] for e in _load(trace_file)["traceEvents"] if e["ph"] == "X"] == \
        ["first"]
    ev = profiler.Event("second")
    ev.start()
    ev.stop()
    profiler.dump(False)
    assert os.path.getsize(trace_file) > size1
    assert [e["name"] for e in _load(trace_file)["traceEvents"] if e["ph"] == "X"] == \
        ["first", "second"]
    profiler.dump(True)                     # finishes this trace
    ev = profiler.Event("third")
    ev.start()
    ev.stop()
    profiler.set_state("stop")
    profiler.dump()
    assert [e["name"] for e in _load(trace_file)["traceEvents"] if e["ph"] == "X"] == \
        ["third"]
