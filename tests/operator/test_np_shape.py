"""The NumPy-mode shape operators (operator/ops/np_shape.py) through opcheck: forward
against NumPy's reshape to the shape MXNet 1.9.1 gives, gradients by finite
differences, imperative and symbolic."""
import pytest

import opcheck

CASES = [
    opcheck.Case("_npx_reshape", lambda x: x.reshape(2, 12), [[(2, 3, 4)]],
                 {"newshape": (-2, -1)}, ref_kwargs=False, dtypes=opcheck.F32_64),
    opcheck.Case("_npx_reshape", lambda x: x.reshape(3, 2, 2), [[(6, 1, 2)]],
                 {"newshape": (-6, 3, -1, -3, -2)}, ref_kwargs=False, dtypes=opcheck.F32_64),
    opcheck.Case("_npx_reshape", lambda x: x.reshape(2, 3, 2, 2), [[(2, 3, 4)]],
                 {"newshape": (-2, -2, -6, 2, -1), "reverse": False}, ref_kwargs=False,
                 dtypes=opcheck.F32_64),
    opcheck.Case("_npx_reshape", lambda x: x.reshape(4, 2, 3), [[(4, 6)]],
                 {"newshape": (-4, -1, 3, -6), "reverse": True}, ref_kwargs=False,
                 dtypes=opcheck.F32_64),
]


@pytest.mark.parametrize("case, shapes, dtype, ctx", opcheck.params(CASES))
def test_np_shape_ops(case, shapes, dtype, ctx):
    opcheck.check(case, shapes, dtype, ctx)
