"""Pickles of NDArrays, sparse ones included, as MXNet 1.9.1 writes them
(tests/fixtures/mxnet-1.9.1/pickles): MXNet's load here with their values and storage
types, and pymxnet's pickle of the same array is byte for byte MXNet's, so MXNet loads
it (optimizer states, datasets and anything else users pickle)."""
import json
import pickle

import numpy as np
import pytest

import mxnet as mx

from common import fixture_path

with open(fixture_path("pickles", "expected.json")) as _f:
    META = json.load(_f)
EXPECTED = np.load(fixture_path("pickles", "expected.npz"))


def _mxnet_pickle(name):
    with open(fixture_path("pickles", name + ".pkl"), "rb") as f:
        return f.read()


@pytest.mark.parametrize("name", sorted(META["stype"]))
def test_mxnet_pickles_load_with_values_and_storage(name):
    arr = pickle.loads(_mxnet_pickle(name))
    assert arr.stype == META["stype"][name]
    assert arr.dtype == EXPECTED[name].dtype
    np.testing.assert_array_equal(arr.asnumpy(), EXPECTED[name])


@pytest.mark.parametrize("name", sorted(META["stype"]))
def test_pickles_written_here_are_mxnets_bytes(name):
    values = EXPECTED[name]
    arr = mx.nd.array(values, dtype=values.dtype)
    if META["stype"][name] != "default":
        arr = arr.tostype(META["stype"][name])
    state = bytes(arr.__getstate__()["handle"])
    assert state == EXPECTED["state_" + name].tobytes()
    assert pickle.dumps(arr, protocol=4) == _mxnet_pickle(name)
    again = pickle.loads(pickle.dumps(arr))
    assert type(again) is type(arr)
    np.testing.assert_array_equal(again.asnumpy(), values)


def test_pickles_of_earlier_pymxnet_versions_still_load():
    """Before MXNet's form, sparse arrays pickled as a call of _rebuild_sparse."""
    from mxnet.ndarray.sparse import _rebuild_sparse
    a = mx.nd.array(EXPECTED["csr"]).tostype("csr")
    v = a._read_value()

    class Old:
        def __reduce__(self):
            return (_rebuild_sparse, ("csr", v.data, [v.indptr, v.indices], a.shape,
                                      "cpu", 0))
    b = pickle.loads(pickle.dumps(Old()))
    assert b.stype == "csr"
    np.testing.assert_array_equal(b.asnumpy(), EXPECTED["csr"])
