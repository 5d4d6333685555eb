"""KVStore API semantics on every worker of a dist_sync job (and dist_device_sync,
horovod in the same job); prints 'API OK <rank>' when every check passed. Mismatched
calls across workers must raise the same MXNetError on every worker and leave the
store usable."""
import os
import sys
import tempfile

import numpy as np

import mxnet as mx
from mxnet.base import MXNetError

kv = mx.kv.create("dist_sync")
r, n = kv.rank, kv.num_workers
assert kv.type == "dist_sync" and n == int(sys.argv[1]), (kv.type, n)
assert kv.is_capable(mx.kv.KVStoreBase.OPTIMIZER)
total = n * (n + 1) / 2          # sum over workers of (rank + 1)


def full(v, shape=(2, 3), dtype="float32"):
    return mx.nd.full(shape, v, dtype=dtype)


def pulled(store, key, shape=(2, 3)):
    out = mx.nd.zeros(shape)
    store.pull(key, out=out)
    return out.asnumpy()


def expect_error(fn, *fragments):
    try:
        fn()
    except MXNetError as err:
        text = str(err)
        for frag in fragments:
            assert frag in text, (frag, text)
        return text
    raise AssertionError(f"no MXNetError for {fragments}")


# init: rank 0's value wins
kv.init(3, full(r + 10))
assert (pulled(kv, 3) == 10).all()
# push sums over workers (and over a local list); a push replaces the stored value
kv.push(3, full(r + 1))
assert (pulled(kv, 3) == total).all()
kv.push(3, [full(r + 1), full(1)])
assert (pulled(kv, 3) == total + n).all()
# pushpull, in place and into out; lists of keys; str keys in another store
g = full(r + 1)
kv.pushpull(3, g)
assert (g.asnumpy() == total).all()
o = full(0)
kv.pushpull(3, full(2), out=o)
assert (o.asnumpy() == 2 * n).all() and (pulled(kv, 3) == 2 * n).all()
kv.init([4, 5], [full(0, (4,)), full(0, (1, 2), "float64")])
a, b = full(r, (4,)), full(r, (1, 2), "float64")
kv.pushpull([4, 5], [a, b])
assert (a.asnumpy() == total - n).all() and b.dtype == np.float64
kvs = mx.kv.create("dist_sync")
bo = [mx.nd.zeros((3,)), mx.nd.zeros((3,))]
kvs.broadcast("w", mx.nd.full((3,), r + 5), out=bo)
assert all((x.asnumpy() == 5).all() for x in bo)
# row_sparse_pull refuses a dense out, as MXNet 1.9.1 does
rows = mx.nd.zeros((4,))
try:
    kv.row_sparse_pull(4, out=rows, row_ids=mx.nd.array([1, 3]))
    raise SystemExit("row_sparse_pull accepted a dense out")
except mx.MXNetError:
    pass
kv._barrier()

# the optimizer runs on every worker's copy of the store
kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.5))
w = full(0)
kv.pushpull(3, full(1), out=w)
assert np.allclose(w.asnumpy(), 2 * n - 0.1 * n)
path = os.path.join(tempfile.gettempdir(), f"kvstates_{os.getpid()}")
kv.save_optimizer_states(path)
kv.load_optimizer_states(path)
os.unlink(path)

# MXNet's server command 0 carries a pickled optimizer (protocol 0, as MXNet sends it)
import pickle  # noqa: E402
kv._send_command_to_servers(0, pickle.dumps(mx.optimizer.SGD(learning_rate=1.0), 0))
w = full(0)
kv.pushpull(3, full(1), out=w)
assert np.allclose(w.asnumpy(), 2 * n - 0.1 * n - n), w.asnumpy()
assert kv._barrier_before_exit
kv._set_barrier_before_exit(True)

# dist_device_sync keeps values on the values' context (CPU here)
kvd = mx.kv.create("dist_device_sync")
kvd.init(0, full(r))
kvd.push(0, full(1))
assert (pulled(kvd, 0) == n).all()
# gradient compression: 2-bit quantisation with error feedback before the sum
kvc = mx.kv.create("dist_sync")
kvc.set_gradient_compression({"type": "2bit", "threshold": 0.5})
kvc.init(0, full(0))
kvc.push(0, full(0.7))
assert (pulled(kvc, 0) == 0.5 * n).all()

# mismatches are reported on every worker and leave the stores usable
expect_error(lambda: kv.push(3 if r == 0 else 4, full(1) if r == 0 else full(1, (4,))),
             "workers disagree", "worker 0: store 0 push: key 3",
             "worker 1: store 0 push: key 4")
expect_error(lambda: kv.init(9, full(0, (2, 3) if r == 0 else (3, 2))),
             "workers disagree", "(2, 3)", "(3, 2)")
expect_error(lambda: kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1 * (r + 1))),
             "workers disagree", "learning_rate" if False else "lr=")
expect_error(lambda: kv.pushpull(3, full(1, dtype="float64" if r else "float32")),
             "workers disagree", "float64")
expect_error(lambda: kv.init(3, full(0)), "duplicate init")
kv.push(3, full(1))
kv._barrier()

# horovod: allreduce without a store, no optimizer
hvd = mx.kv.create("horovod")
assert hvd.type == "horovod" and hvd.rank == r and hvd.num_workers == n
assert not hvd.is_capable("optimizer")
v = full(r + 3)
outs = [mx.nd.zeros((2, 3))]
hvd.broadcast("p", v, out=outs)
assert (v.asnumpy() == 3).all() and (outs[0].asnumpy() == 3).all()
g = full(r + 1)
hvd.pushpull("g", g)
assert (g.asnumpy() == total).all()
gl = [full(r + 1), full(1)]
hvd.pushpull(7, gl, out=outs)
assert all((x.asnumpy() == total + n).all() for x in gl + outs)
view = mx.nd.zeros((4, 3))[1:3]
view[:] = r + 1
hvd.pushpull(8, view)
assert (view.asnumpy() == total).all()
print(f"API OK {r}", flush=True)
