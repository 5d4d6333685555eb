"""Bad input never passes silently (issue 19 point 3): each row is an input, the
exception class it must raise and a fragment of the message naming what was wrong;
after each, the engine must still compute correctly."""
import json
import pickle
import os
import tempfile

import numpy as np
import pytest

import mxnet as mx
from mxnet import gluon, nd
from mxnet.base import MXNetError


def _dl(**kw):
    return gluon.data.DataLoader(gluon.data.ArrayDataset(nd.ones((4, 2))), **kw)


def _trainer(**kw):
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    return gluon.Trainer(net.collect_params(), **kw)


def _module_forward(n_arrays):
    s = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3)
    m = mx.mod.Module(s, data_names=["x"], label_names=None)
    m.bind(data_shapes=[("x", (2, 4))])
    m.init_params()
    m.forward(mx.io.DataBatch([nd.ones((2, 4))] * n_arrays))


def _kv_twice(what):
    kv = mx.kv.create("local")
    kv.init(3, nd.ones((2,)))
    if what == "init":
        kv.init(3, nd.ones((2,)))
    else:
        kv.push(3, nd.ones((3,)))
        kv.pull(3, out=nd.ones((2,)))


# One folder for the files the cases write, removed when the test process ends.
_SCRATCH = tempfile.TemporaryDirectory(prefix="mx-bad-input-")


def _saved_bytes():
    path = os.path.join(tempfile.mkdtemp(dir=_SCRATCH.name), "ok.params")
    nd.save(path, {"a": nd.arange(20)})
    with open(path, "rb") as f:
        return f.read()


def _bad_file(name, content):
    path = os.path.join(tempfile.mkdtemp(dir=_SCRATCH.name), name)
    with open(path, "wb") as f:
        f.write(content)
    return path


def _load_states(content):
    t = _trainer(optimizer="sgd", kvstore=None)
    t.load_states(_bad_file("t.states", content))


def _nested_json(depth):
    return "[" * depth + "]" * depth


def _setitem(target, key, value):
    target[key] = value
    target.wait_to_read()


X = lambda: nd.ones((2, 3))  # noqa: E731
GOOD_NODE = {"op": "null", "name": "x", "inputs": []}

ROWS = [
    # --- NDArray creation ------------------------------------------------------------
    ("array None", lambda: nd.array(None), MXNetError, "source_array is None"),
    ("array ragged", lambda: nd.array([[1, 2], [3]]), MXNetError, "cannot create"),
    ("array str dtype", lambda: nd.array([1, 2], dtype="str"), MXNetError, "not supported"),
    ("array object dtype", lambda: nd.array([1, 2], dtype=object), MXNetError, "not supported"),
    ("array bad dtype name", lambda: nd.array([1], dtype="float7"), MXNetError, "float7"),
    ("array of strings", lambda: nd.array(["a", "b"]), MXNetError, "cannot create"),
    ("full val None", lambda: nd.full((2, 2), None), MXNetError, "val must be a number"),
    ("full val str", lambda: nd.full((2, 2), "x"), MXNetError, "val must be a number"),
    ("full val list", lambda: nd.full((2, 2), [1, 2]), MXNetError, "val must be a number"),
    ("full bad shape", lambda: nd.full("x", 1), MXNetError, "invalid shape"),
    ("arange step 0", lambda: nd.arange(0, 5, 0), MXNetError, "step must not be 0"),
    ("arange step 0.0", lambda: nd.arange(0, 5, 0.0), MXNetError, "step must not be 0"),
    ("arange str stop", lambda: nd.arange(0, "5"), MXNetError, "stop must be a number"),
    ("arange None start", lambda: nd.arange(None), MXNetError, "must be a number"),
    ("arange repeat 0", lambda: nd.arange(0, 5, repeat=0), MXNetError, "repeat"),
    ("arange repeat 1.5", lambda: nd.arange(0, 5, repeat=1.5), MXNetError, "repeat"),
    ("empty 2**40", lambda: nd.empty((2 ** 40,)), MXNetError, "GiB requested"),
    ("zeros 2**25 x 2**25", lambda: nd.zeros((2 ** 25, 2 ** 25)), MXNetError,
     "cannot allocate"),
]
for fn in ("zeros", "ones", "empty"):
    for bad, frag in [((-1, 2), "non-negative"), ((2, -3), "non-negative"),
                      ("a", "invalid shape"), ((2.5,), "invalid shape"),
                      ((2, None), "invalid shape"), (None, "invalid shape"),
                      ((True, 2), "invalid shape"), (-4, "non-negative")]:
        ROWS.append((f"{fn} shape {bad!r}", lambda fn=fn, bad=bad: getattr(nd, fn)(bad),
                     MXNetError, frag))
for dt in ["object", "str", "U5", "S3", "datetime64[s]", "timedelta64", "V8", "float7",
           "notatype"]:
    ROWS.append((f"astype {dt}", lambda dt=dt: X().astype(dt), MXNetError, ""))
    ROWS.append((f"zeros dtype {dt}", lambda dt=dt: nd.zeros((2,), dtype=dt), MXNetError, ""))

ROWS += [
    # --- setitem -------------------------------------------------------------------
    ("setitem transposed", lambda: _setitem(X(), slice(None), nd.ones((3, 2))),
     MXNetError, "cannot assign a value of shape (3, 2)"),
    ("setitem numpy transposed", lambda: _setitem(X(), slice(None), np.ones((3, 2))),
     ValueError, "shape (3, 2)"),
    ("setitem too long row", lambda: _setitem(X(), 0, nd.ones((4,))), MXNetError, "(4,)"),
    ("setitem wrong size", lambda: _setitem(X(), slice(None), nd.ones((7,))), MXNetError,
     "(7,)"),
    ("setitem 3-d into 2-d", lambda: _setitem(X(), slice(None), nd.ones((2, 3, 2))),
     MXNetError, "(2, 3, 2)"),
    ("setitem list wrong shape", lambda: _setitem(X(), slice(None), [[1, 2], [3, 4]]),
     MXNetError, "(2, 2)"),
    ("setitem column wrong", lambda: _setitem(X(), (slice(None), 1), nd.ones((3,))),
     MXNetError, "(3,)"),
    ("setitem string value", lambda: _setitem(X(), 0, "abc"), MXNetError, "cannot assign"),
    ("setitem index out of range", lambda: _setitem(X(), 5, 1.0), IndexError, ""),
    ("getitem out of range", lambda: X()[5], IndexError, "out of bounds"),
    ("getitem too many indices", lambda: X()[0, 0, 0], IndexError, ""),
    # --- operators: parameters and shapes, at the call -------------------------------
    ("unknown kwarg", lambda: nd.softmax(nd.ones((2,)), foo=1), MXNetError,
     "unknown parameter 'foo'"),
    ("missing required", lambda: nd.FullyConnected(X(), nd.ones((4, 3)), nd.ones((4,))),
     MXNetError, "num_hidden"),
    ("reshape size", lambda: X().reshape((4,)), MXNetError, "(4,)"),
    ("dot shapes", lambda: nd.dot(X(), X()), MXNetError, "dot"),
    ("concat shapes", lambda: nd.concat(X(), nd.ones((3, 4)), dim=0), MXNetError, "Concat"),
    ("transpose repeated axis", lambda: X().transpose((0, 0)), MXNetError, "repeats"),
    ("sum bad axis", lambda: X().sum(axis=5), MXNetError, "axis"),
    ("slice_axis bad axis", lambda: nd.slice_axis(X(), axis=3, begin=0, end=1), MXNetError,
     "axis"),
    ("cast bad dtype", lambda: nd.cast(X(), dtype="foo"), MXNetError, "dtype"),
    ("broadcast_to", lambda: nd.broadcast_to(X(), shape=(4, 3)), MXNetError, "broadcast"),
    ("split uneven", lambda: nd.split(nd.ones((3, 4)), num_outputs=2, axis=0), MXNetError,
     "divisible"),
    ("elemwise shapes", lambda: nd.elemwise_add(X(), nd.ones((3, 2))), MXNetError, ""),
    ("conv rank", lambda: nd.Convolution(nd.ones((1, 1, 5)), nd.ones((1, 1, 3, 3)),
                                         kernel=(3, 3), num_filter=1, no_bias=True),
     MXNetError, ""),
    ("pooling bad type", lambda: nd.Pooling(nd.ones((1, 1, 4, 4)), kernel=(2, 2),
                                            pool_type="median"), MXNetError, "pool_type"),
    ("activation bad type", lambda: nd.Activation(X(), act_type="bogus"), MXNetError,
     "act_type"),
    ("bad context string", lambda: nd.ones((2,), ctx="gpu(x)"), MXNetError, ""),
    # --- operators: errors while computing, at the sync point ------------------------
    ("take out of range", lambda: nd.take(X(), nd.array([9]), mode="raise").asnumpy(),
     MXNetError, "take"),
    ("normal negative scale", lambda: nd.random.normal(0, -1, (2, 2)).asnumpy(), MXNetError,
     "scale"),
    ("uniform low > high", lambda: nd.random.uniform(2, 1, (2,)).asnumpy(), MXNetError, ""),
    ("potrf not SPD", lambda: nd.linalg.potrf(nd.array(-np.eye(3))).asnumpy(), MXNetError,
     "potrf"),
    ("one_hot negative depth", lambda: nd.one_hot(nd.array([1]), depth=-1).asnumpy(),
     MXNetError, "depth"),
    ("topk k too big", lambda: nd.topk(X(), k=10).asnumpy(), MXNetError, "k=10"),
    # --- serialisation ----------------------------------------------------------------
    ("load missing file", lambda: nd.load("/nonexistent/x.params"), MXNetError,
     "/nonexistent/x.params"),
    ("load not a path", lambda: nd.load(3), MXNetError, "fname"),
    ("save not a path", lambda: nd.save(3, X()), MXNetError, "fname"),
    ("save bad data", lambda: nd.save("/tmp/never.params", 3), MXNetError, "data"),
    ("save dict non-str key", lambda: nd.save("/tmp/never.params", {1: X()}), MXNetError,
     "dict"),
    ("save into missing dir", lambda: nd.save("/nonexistent/dir/x.params", X()), MXNetError,
     "/nonexistent/dir/x.params"),
    ("load_frombuffer garbage", lambda: nd.load_frombuffer(b"garbage!" * 4), MXNetError, ""),
    ("load_frombuffer str", lambda: nd.load_frombuffer("abc"), MXNetError, "bytes"),
    ("load truncated params", lambda: nd.load(_bad_file("trunc.params", _saved_bytes()[:40])),
     MXNetError, "trunc.params"),
    ("load garbage params", lambda: nd.load(_bad_file("junk.params", b"\x00junk" * 20)),
     MXNetError, "junk.params"),
    ("load empty params", lambda: nd.load(_bad_file("empty.params", b"")), MXNetError,
     "empty.params"),
    ("load_parameters garbage", lambda: gluon.nn.Dense(2, in_units=2).load_parameters(
        _bad_file("net.params", b"garbage")), MXNetError, "net.params"),
    ("Trainer.load_states garbage", lambda: _load_states(b"garbage"), MXNetError,
     "t.states"),
    ("Trainer.load_states not states", lambda: _load_states(pickle.dumps(3)), MXNetError,
     "t.states"),
    ("Trainer.load_states missing", lambda: _trainer(optimizer="sgd").load_states(
        "/nonexistent/t.states"), MXNetError, "/nonexistent/t.states"),
    ("sym.load truncated", lambda: mx.sym.load(_bad_file("g-symbol.json", b'{"nodes": [')),
     MXNetError, "g-symbol.json"),
    ("sym.load missing", lambda: mx.sym.load("/nonexistent/g-symbol.json"), MXNetError,
     "/nonexistent/g-symbol.json"),
    ("sym.load binary", lambda: mx.sym.load(_bad_file("b-symbol.json", b"\xff\xfe\x00")),
     MXNetError, "b-symbol.json"),
    # --- symbol JSON --------------------------------------------------------------------
    ("load_json node without op", lambda: mx.sym.load_json(json.dumps(
        {"nodes": [{"name": "x", "inputs": []}], "arg_nodes": [0], "heads": [[0, 0, 0]]})),
     MXNetError, "no 'op'"),
    ("load_json head out of range", lambda: mx.sym.load_json(json.dumps(
        {"nodes": [GOOD_NODE], "arg_nodes": [0], "heads": [[5, 0, 0]]})), MXNetError,
     "bad head"),
    ("load_json negative head", lambda: mx.sym.load_json(json.dumps(
        {"nodes": [GOOD_NODE], "arg_nodes": [0], "heads": [[-1, 0, 0]]})), MXNetError,
     "bad head"),
    ("load_json head not a list", lambda: mx.sym.load_json(json.dumps(
        {"nodes": [GOOD_NODE], "arg_nodes": [0], "heads": [3]})), MXNetError, "bad head"),
    ("load_json node not an object", lambda: mx.sym.load_json(json.dumps(
        {"nodes": [3], "arg_nodes": [0], "heads": [[0, 0, 0]]})), MXNetError,
     "not an object"),
    ("load_json forward reference", lambda: mx.sym.load_json(json.dumps(
        {"nodes": [{"op": "relu", "name": "r", "inputs": [[1, 0, 0]]}, GOOD_NODE],
         "arg_nodes": [1], "heads": [[0, 0, 0]]})), MXNetError, "topological"),
    ("load_json no nodes", lambda: mx.sym.load_json("{}"), MXNetError, "nodes"),
    ("load_json not JSON", lambda: mx.sym.load_json("{nope"), MXNetError, "invalid symbol"),
    ("load_json deeply nested", lambda: mx.sym.load_json(_nested_json(100000)), MXNetError,
     "nested"),
    ("load_json nodes not a list", lambda: mx.sym.load_json(json.dumps(
        {"nodes": 3, "heads": []})), MXNetError, "lists"),
    ("load_json not a str", lambda: mx.sym.load_json(3), TypeError, "string"),
    ("load_json unknown op", lambda: mx.sym.load_json(json.dumps(
        {"nodes": [{"op": "NoSuchOp", "name": "n", "inputs": []}], "arg_nodes": [],
         "heads": [[0, 0, 0]]})), MXNetError, "NoSuchOp"),
    # --- symbols and executors ---------------------------------------------------------
    ("infer_shape conv wrong rank", lambda: mx.sym.Convolution(
        mx.sym.var("x"), kernel=(3, 3), num_filter=2).infer_shape(x=(1, 1, 5)), MXNetError,
     ""),
    ("infer_shape dot mismatch", lambda: mx.sym.dot(mx.sym.var("a"), mx.sym.var("b"))
     .infer_shape(a=(2, 3), b=(4, 5)), MXNetError, "dot"),
    ("infer_shape unknown arg", lambda: mx.sym.relu(mx.sym.var("x")).infer_shape(y=(2,)),
     MXNetError, ""),
    ("bind missing args", lambda: (mx.sym.var("a") + mx.sym.var("b")).bind(
        mx.cpu(), {"a": nd.ones((2,))}), MXNetError, "b"),
    ("simple_bind bad shape", lambda: mx.sym.FullyConnected(
        mx.sym.var("x"), num_hidden=2).simple_bind(mx.cpu(), x=(2, -3)), MXNetError, ""),
    # --- data loading -------------------------------------------------------------------
    ("DataLoader batch_size 0", lambda: _dl(batch_size=0), ValueError, "batch_size"),
    ("DataLoader batch_size -2", lambda: _dl(batch_size=-2), ValueError, "batch_size"),
    ("DataLoader batch_size 2.5", lambda: _dl(batch_size=2.5), ValueError, "batch_size"),
    ("DataLoader batch_size '2'", lambda: _dl(batch_size="2"), ValueError, "batch_size"),
    ("DataLoader batch_size True", lambda: _dl(batch_size=True), ValueError, "batch_size"),
    ("DataLoader last_batch ''", lambda: _dl(batch_size=2, last_batch=""), ValueError,
     "last_batch"),
    ("DataLoader last_batch bogus", lambda: _dl(batch_size=2, last_batch="drop"), ValueError,
     "last_batch"),
    ("DataLoader no batch_size", lambda: _dl(), ValueError, "batch_size"),
    ("BatchSampler batch_size 0", lambda: gluon.data.BatchSampler(
        gluon.data.SequentialSampler(4), 0), MXNetError, "batch_size"),
    ("ArrayDataset length mismatch", lambda: gluon.data.ArrayDataset(
        nd.ones((4, 2)), nd.ones((3,))), Exception, ""),
    # --- kvstore, trainer, optimizer ---------------------------------------------------
    ("kv.create bogus", lambda: mx.kv.create("bogus"), MXNetError, "bogus"),
    ("kv.create empty", lambda: mx.kv.create(""), MXNetError, "unknown KVStore type"),
    ("kv.create not a str", lambda: mx.kv.create(3), TypeError, "string"),
    ("Trainer kvstore bogus", lambda: _trainer(optimizer="sgd", kvstore="bogus_kv"),
     MXNetError, "bogus_kv"),
    ("Trainer bad optimizer", lambda: _trainer(optimizer="bogus_opt"), ValueError,
     "bogus_opt"),
    ("Trainer kvstore int", lambda: _trainer(optimizer="sgd", kvstore=3), TypeError,
     "kvstore"),
    ("optimizer.create bogus", lambda: mx.optimizer.create("nope"), ValueError, "nope"),
    ("kv pull unknown key", lambda: mx.kv.create("local").pull("k", out=nd.ones((2,))),
     MXNetError, ""),
    ("kv init twice", lambda: _kv_twice("init"), MXNetError, "duplicate init"),
    ("kv push wrong shape", lambda: _kv_twice("push"), MXNetError, "shape"),
    # --- more operator parameters and shapes --------------------------------------------
    ("Dropout p > 1", lambda: nd.Dropout(X(), p=2), MXNetError, "'p'"),
    ("split num_outputs 0", lambda: nd.split(nd.ones((4,)), num_outputs=0), MXNetError,
     "num_outputs"),
    ("one_hot float depth", lambda: nd.one_hot(nd.array([1]), depth=2.5), MXNetError,
     "depth"),
    ("Convolution negative kernel", lambda: nd.Convolution(
        nd.ones((1, 1, 4, 4)), nd.ones((1, 1, 3, 3)), kernel=(-3, 3), num_filter=1,
        no_bias=True), MXNetError, "kernel"),
    ("Pooling kernel > input", lambda: nd.Pooling(nd.ones((1, 1, 2, 2)), kernel=(3, 3)),
     MXNetError, "kernel"),
    ("BatchNorm gamma shape", lambda: nd.BatchNorm(X(), *[nd.ones((4,))] * 4), MXNetError,
     "gamma"),
    ("random shape negative", lambda: nd.random.uniform(shape=(-1,)), MXNetError, "shape"),
    ("random.seed str", lambda: mx.random.seed("abc"), MXNetError, "seed"),
    ("copyto shape mismatch", lambda: nd.ones((2,)).copyto(nd.ones((3,))), MXNetError,
     "shape"),
    ("copyto int", lambda: nd.ones((2,)).copyto(3), MXNetError, "copyto"),
    ("slice step 0", lambda: nd.ones((4,))[::0], ValueError, "step"),
    ("load_frombuffer None", lambda: nd.load_frombuffer(None), TypeError, "bytes"),
    ("NDArrayIter batch_size 0", lambda: mx.io.NDArrayIter(nd.ones((4, 2)), batch_size=0),
     MXNetError, "batch_size"),
    ("row_sparse_pull into a dense out", lambda: _kv_with("emb").row_sparse_pull(
        "emb", out=nd.zeros((4, 2)), row_ids=nd.array([0])), MXNetError, "row_sparse"),
    ("NDArrayIter label count", lambda: mx.io.NDArrayIter(nd.ones((4, 2)), nd.ones((3,)),
                                                          batch_size=2), MXNetError,
     "examples"),
    # --- Module -----------------------------------------------------------------------
    ("Module forward extra data", lambda: _module_forward(2), MXNetError, "data_names"),
    ("Module forward no data", lambda: _module_forward(0), MXNetError, ""),
]


@pytest.mark.parametrize("name,call,exc,fragment", ROWS, ids=[r[0] for r in ROWS])
def test_bad_input_is_refused(name, call, exc, fragment):
    with pytest.raises(exc) as info:
        call()
        mx.nd.waitall()
    assert fragment.lower() in str(info.value).lower(), str(info.value)
    mx.nd.waitall()                                   # nothing left pending
    a = np.array([[1, 2], [3, 4]], dtype=np.float32)
    np.testing.assert_array_equal(nd.dot(nd.array(a), nd.array(a) + 1).asnumpy(),
                                  a @ (a + 1))


def test_table_has_at_least_100_rows():
    assert len(ROWS) >= 100


def _kv_with(key):
    kv = mx.kv.create("local")
    kv.init(key, nd.ones((4, 2)))
    return kv
