"""row_sparse values in a dist_sync job: init, push (with and without an optimizer),
pushpull and row_sparse_pull, checked on every worker against NumPy sums over the
workers; prints 'SPARSE OK <rank>' when every check passed."""
import numpy as np

import mxnet as mx
from mxnet.base import MXNetError

kv = mx.kv.create("dist_sync")
r, n = kv.rank, kv.num_workers
R, C = 12, 3
assert 2 * n < R
w0 = np.arange(R * C, dtype=np.float32).reshape(R, C)


def rsp(rows, val):
    d = np.zeros((R, C), np.float32)
    d[rows] = val
    return mx.nd.array(d).tostype("row_sparse")


def pull_rows(key, rows):
    out = mx.nd.sparse.zeros("row_sparse", (R, C))
    kv.row_sparse_pull(key, out=out, row_ids=mx.nd.array(rows, dtype="int64"))
    assert out.stype == "row_sparse"
    return out


# init takes rank 0's row_sparse value; row_sparse_pull gathers the asked rows
kv.init("w", mx.nd.array(w0 + r).tostype("row_sparse"))
got = pull_rows("w", [7, 1, 7])
assert got.indices.asnumpy().tolist() == [1, 7], got.indices.asnumpy()
want = np.zeros((R, C), np.float32)
want[[1, 7]] = w0[[1, 7]]
assert np.array_equal(got.asnumpy(), want)

# push without an optimizer: the sum over workers (and a local list) replaces the value
kv.push("w", [rsp([r, r + 1], r + 1), rsp([R - 1], 1)])
want = np.zeros((R, C), np.float32)
for q in range(n):
    want[[q, q + 1]] += q + 1
want[R - 1] += n
assert np.allclose(pull_rows("w", np.arange(R)).asnumpy(), want)

# lazy SGD on the store: a dense weight and a row_sparse weight change only in the rows
# some worker pushed a gradient for
kv.init("e", mx.nd.array(w0))
kv.init("s", mx.nd.array(w0).tostype("row_sparse"))
kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, lazy_update=True))
kv.push("e", rsp([2 * r, R - 1], 1.0))
e = mx.nd.zeros((R, C))
kv.pull("e", out=e)
want = w0.copy()
for q in range(n):
    want[2 * q] -= 0.5
want[R - 1] -= 0.5 * n
assert np.allclose(e.asnumpy(), want), (e.asnumpy(), want)
out = mx.nd.sparse.zeros("row_sparse", (R, C))
kv.pushpull("s", rsp([2 * r + 1], 2.0), out=out)
want = w0.copy()
for q in range(n):
    want[2 * q + 1] -= 1.0
assert np.allclose(pull_rows("s", np.arange(R)).asnumpy(), want)
# as in MXNet 1.9.1, pull/pushpull ignore a row_sparse out (with a warning):
# row_sparse_pull is the way to read a row_sparse value
assert not out.asnumpy().any()

# a key pushed dense by one worker and row_sparse by another: the same error everywhere
try:
    kv.push("e", rsp([0], 1.0) if r == 0 else mx.nd.ones((R, C)))
    raise SystemExit("mixed storage push was accepted")
except MXNetError as err:
    assert "workers disagree" in str(err), str(err)
kv.push("e", rsp([0], 0.0))          # the store is still usable
kv._barrier()
print(f"SPARSE OK {r}", flush=True)
