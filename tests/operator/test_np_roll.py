"""_npi_roll (ops/np_roll.py), behind mx.np.roll and mx.sym.np.roll: against NumPy's
roll, forward and gradient (op-check), and through a hybridized NumPy-mode block."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import np as mnp, npx
from mxnet.base import MXNetError
from mxnet.gluon import HybridBlock
from opcheck import Case, cases_test

CASES = [
    Case("_npi_roll", lambda x: np.roll(x, 3), [[(2, 3, 4)]], kwargs={"shift": (3,)},
         ref_kwargs=False, name="np_roll_flat"),
    Case("_npi_roll", lambda x: np.roll(x, (10, -10), (0, 1)), [[(2, 3, 4)]],
         kwargs={"shift": (10, -10), "axis": (0, 1)}, ref_kwargs=False, name="np_roll_axes"),
    Case("_npi_roll", lambda x: np.roll(x, 2, (0, 2)), [[(2, 3, 4)]],
         kwargs={"shift": (2,), "axis": (0, 2)}, ref_kwargs=False, name="np_roll_one_shift"),
]
test_np_roll_op = cases_test(CASES)


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("shape,shift,axis", [((), (3,), None), ((20,), (-3,), None),
                                              ((2, 3, 0, 1), (0, 1), (-1, 2))])
def test_np_roll_in_a_numpy_mode_block(hybridize, shape, shift, axis):
    class Roll(HybridBlock):
        def hybrid_forward(self, F, x):
            return F.np.roll(x, shift=shift, axis=axis)
    npx.set_np()
    try:
        x = mnp.array(np.random.RandomState(0).rand(*shape))
        blk = Roll()
        if hybridize:
            blk.hybridize()
        x.attach_grad()
        with mx.autograd.record():
            y = blk(x)
        y.backward()
        np.testing.assert_array_equal(y.asnumpy(), np.roll(x.asnumpy(), shift, axis))
        np.testing.assert_array_equal(x.grad.asnumpy(), np.ones(shape))
    finally:
        npx.reset_np()


def test_np_roll_refuses_mismatched_shift_and_axis():
    with pytest.raises(MXNetError):
        mnp.roll(mnp.ones((2, 3)), (1, 2, 3), (0, 1))
    with pytest.raises(MXNetError):
        mnp.roll(mnp.ones((2, 3)), 1, 5)
