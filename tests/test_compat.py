import numpy as np

import mxnet  # noqa: F401  (restores the aliases)


def test_legacy_numpy_aliases_exist_for_mxnet_era_code():
    # seed 001: `in_data[1].asnumpy().ravel().astype(np.int)`
    assert np.array([1.7, 2.2]).astype(np.int).tolist() == [1, 2]
    assert np.float is float and np.object is object
