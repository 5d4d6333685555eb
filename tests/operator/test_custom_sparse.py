"""Python operators with sparse storage: a CustomOpProp's infer_storage_type /
infer_storage_type_backward decide the storage types its callbacks see, imperatively
(mx.nd.Custom on sparse arrays) and in executors (mx.sym.Custom bound to sparse
arguments). References: scipy.sparse / NumPy values computed here."""
import numpy as np
import pytest
import scipy.sparse as sps

import mxnet as mx
from mxnet.base import MXNetError

SEEN = []      # (callback, storage types of its arrays) as the callbacks saw them


class SparseSquare(mx.operator.CustomOp):
    """out = x * x on the stored entries of a csr input (dense input: x * x and
    aux = 1); backward: 2 * x * out_grad with x's sparsity."""

    def forward(self, is_train, req, in_data, out_data, aux):
        SEEN.append(("forward", [a.stype for a in in_data], [a.stype for a in out_data],
                     [a.stype for a in aux]))
        x = in_data[0]
        if x.stype == "csr":
            out = mx.nd.sparse.csr_matrix((x.data * x.data, x.indices, x.indptr),
                                          shape=x.shape)
            self.assign(out_data[0], req[0], out)
        else:
            aux[0][:] = 1
            self.assign(out_data[0], req[0], x * x)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        SEEN.append(("backward", [a.stype for a in out_grad], [a.stype for a in in_data],
                     [a.stype for a in in_grad], [a.stype for a in aux]))
        self.assign(in_grad[0], req[0],
                    2 * mx.nd.sparse.elemwise_mul(in_data[0], out_grad[0]))


@mx.operator.register("test_sparse_square")
class SparseSquareProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["data"]

    def list_auxiliary_states(self):
        return ["aux"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [in_shape[0]]

    def infer_storage_type(self, in_stype):
        if in_stype[0] == "default":
            return ["default"], ["default"], ["default"]
        return ["csr"], ["csr"], ["csr"]

    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype,
                                    aux_stype):
        if in_stype[0] == "default":
            return ["default"], ["default"], ["default"], ["default"], ["default"]
        return ["default"], ["csr"], ["csr"], ["csr"], ["csr"]

    def create_operator(self, ctx, shapes, dtypes):
        return SparseSquare()


def _random_csr(shape, density, seed):
    m = sps.random(*shape, density=density, format="csr", dtype=np.float32,
                   random_state=np.random.RandomState(seed))
    m.data -= 0.5            # negative values too
    return m


@pytest.fixture(autouse=True)
def _clear_seen():
    SEEN.clear()


def test_imperative_csr_input_stays_csr_with_its_gradient():
    ref = _random_csr((5, 7), 0.3, 0)
    x = mx.nd.sparse.csr_matrix(ref)
    aux = mx.nd.sparse.zeros("csr", (5, 7))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, aux, op_type="test_sparse_square")
    head = np.random.RandomState(1).uniform(-1, 1, (5, 7)).astype(np.float32)
    y.backward(mx.nd.array(head))
    assert isinstance(y, mx.nd.sparse.CSRNDArray)
    want = ref.multiply(ref).tocsr()
    np.testing.assert_allclose(y.asnumpy(), want.toarray(), rtol=1e-6)
    np.testing.assert_array_equal(y.indices.asnumpy(), want.indices)
    np.testing.assert_array_equal(y.indptr.asnumpy(), want.indptr)
    assert x.grad.stype == "csr"
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * ref.toarray() * head, rtol=1e-6)
    assert SEEN[0] == ("forward", ["csr"], ["csr"], ["csr"])
    assert SEEN[1] == ("backward", ["default"], ["csr"], ["csr"], ["csr"])


def test_executor_casts_dense_values_to_the_props_storage_types():
    ref = _random_csr((4, 6), 0.5, 2)
    data = mx.sym.Variable("data", stype="csr")
    sym = mx.sym.Custom(data=data, aux=mx.sym.Variable("aux"), op_type="test_sparse_square")
    proj = np.random.RandomState(3).uniform(-1, 1, (4, 6)).astype(np.float32)
    loss = mx.sym.make_loss(sym * mx.sym.Variable("proj"))
    x = mx.nd.sparse.csr_matrix(ref)
    grad = mx.nd.sparse.zeros("csr", (4, 6))
    ex = loss.bind(mx.cpu(), args={"data": x, "proj": mx.nd.array(proj)},
                   args_grad={"data": grad}, grad_req={"data": "write", "proj": "null"},
                   aux_states={"aux": mx.nd.sparse.zeros("csr", (4, 6))})
    ex.forward(is_train=True)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), ref.toarray() ** 2 * proj,
                               rtol=1e-6)
    ex.backward()
    np.testing.assert_allclose(grad.asnumpy(), 2 * ref.toarray() * proj, rtol=1e-6)
    assert grad.stype == "csr"
    assert SEEN[0] == ("forward", ["csr"], ["csr"], ["csr"])
    assert SEEN[-1][0] == "backward" and SEEN[-1][2:] == (["csr"], ["csr"], ["csr"])


def test_dense_bind_of_the_same_symbol_sees_dense_arrays():
    data = mx.sym.Variable("data")
    sym = mx.sym.Custom(data=data, aux=mx.sym.Variable("aux"), op_type="test_sparse_square")
    ref = _random_csr((3, 4), 0.5, 4)
    sparse_ex = sym.bind(mx.cpu(), args={"data": mx.nd.sparse.csr_matrix(ref)},
                         aux_states={"aux": mx.nd.sparse.zeros("csr", (3, 4))},
                         grad_req="null")
    sparse_ex.forward()
    x = np.random.RandomState(5).uniform(-1, 1, (3, 4)).astype(np.float32)
    aux = mx.nd.zeros((3, 4))
    dense_ex = sym.bind(mx.cpu(), args={"data": mx.nd.array(x)}, aux_states={"aux": aux},
                        grad_req="null")
    dense_ex.forward()
    np.testing.assert_allclose(dense_ex.outputs[0].asnumpy(), x * x, rtol=1e-6)
    assert [s[1] for s in SEEN] == [["csr"], ["default"]]
    np.testing.assert_array_equal(aux.asnumpy(), np.ones((3, 4)))


class Identity(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0])


@mx.operator.register("test_sparse_default_prop")
class DefaultStorageProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return Identity()


def test_default_prop_refuses_sparse_inputs():
    x = mx.nd.sparse.csr_matrix(_random_csr((3, 3), 0.5, 6))
    with pytest.raises(MXNetError, match="infer_storage_type"):
        mx.nd.Custom(x, op_type="test_sparse_default_prop")
    prop = mx.operator.CustomOpProp()
    with pytest.raises(MXNetError, match="igrad_stype"):
        prop.infer_storage_type_backward(["default"], ["default"], ["default"], ["csr"], [])
    assert prop.infer_storage_type_backward(["default"], ["default"], ["default"],
                                            ["default"], ["default"]) == \
        (["default"], ["default"], ["default"], ["default"], ["default"])


class Double(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * 2)


@mx.operator.register("test_sparse_double_rows")
class DoubleRowsProp(mx.operator.CustomOpProp):
    def infer_storage_type(self, in_stype):
        return ["row_sparse"], ["row_sparse"], []

    def create_operator(self, ctx, shapes, dtypes):
        return Double()


def test_imperative_row_sparse_output():
    rows = np.zeros((6, 2), np.float32)
    rows[[1, 4]] = [[1, 2], [3, 4]]
    x = mx.nd.array(rows).tostype("row_sparse")
    y = mx.nd.Custom(x, op_type="test_sparse_double_rows")
    assert y.stype == "row_sparse"
    np.testing.assert_array_equal(y.asnumpy(), 2 * rows)
    np.testing.assert_array_equal(y.indices.asnumpy(), [1, 4])


@mx.operator.register("test_sparse_bad_stype")
class BadStorageProp(mx.operator.CustomOpProp):
    def infer_storage_type(self, in_stype):
        return in_stype, ["coo"], []

    def create_operator(self, ctx, shapes, dtypes):
        return Identity()


def test_unknown_storage_type_from_a_prop_is_an_error():
    x = mx.nd.sparse.csr_matrix(_random_csr((3, 3), 0.5, 7))
    with pytest.raises(MXNetError, match="'coo'"):
        mx.nd.Custom(x, op_type="test_sparse_bad_stype")
