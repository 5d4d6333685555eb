import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from fixed seeds (NumPy's and mx.random's) so failures replay."""
    import mxnet as mx
    np.random.seed(0)
    mx.random.seed(0)
    yield
