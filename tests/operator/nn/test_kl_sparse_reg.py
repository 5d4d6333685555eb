"""IdentityAttachKLSparseReg: identity forward, moving average of activations in
training, KL sparseness term added to the gradient."""
import numpy as np

import mxnet as mx


def test_kl_sparse_reg_executor():
    x = np.array([[0.2, 0.4], [0.6, 0.5]])
    s = mx.sym.IdentityAttachKLSparseReg(mx.sym.var("x"), name="kl", sparseness_target=0.1,
                                         penalty=0.001, momentum=0.9)
    assert s.list_auxiliary_states() == ["kl_moving_avg"]
    avg0 = np.array([0.3, 0.6])
    ex = s.bind(mx.cpu(), {"x": mx.nd.array(x)}, args_grad={"x": mx.nd.zeros((2, 2))},
                aux_states={"kl_moving_avg": mx.nd.array(avg0)})
    ex.forward(is_train=True)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), x, rtol=1e-6)
    ex.backward(mx.nd.ones((2, 2)))
    avg = 0.9 * avg0 + 0.1 * x.mean(axis=0)
    np.testing.assert_allclose(ex.aux_dict["kl_moving_avg"].asnumpy(), avg, rtol=1e-6)
    reg = 0.001 * (-0.1 / avg + 0.9 / (1 - avg))
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), 1 + np.broadcast_to(reg, (2, 2)),
                               rtol=1e-6)
