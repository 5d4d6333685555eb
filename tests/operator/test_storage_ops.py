"""cast_storage: dense-to-dense copies; the sparse storage types are not implemented."""
import numpy as np
import pytest

import mxnet as mx
from opcheck import Case, check


def test_cast_storage_default():
    x = np.random.RandomState(2).normal(size=(2, 3))
    check(Case("cast_storage", lambda a: a, kwargs={"stype": "default"}, ref_kwargs=False,
               inputs=[x]))


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_cast_storage_sparse_not_implemented(stype):
    with pytest.raises(NotImplementedError, match="cast_storage"):
        mx.nd.cast_storage(mx.nd.ones((2, 2)), stype=stype)
