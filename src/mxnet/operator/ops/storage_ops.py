"""cast_storage: convert between storage types. pymxnet arrays are all dense
('default'); casting to 'default' copies, and the sparse types raise
NotImplementedError (when the call is parsed) until sparse storage exists."""
from ..params import Enum, Schema
from ..registry import Op, register
from ..out_contract import adopt_out_contract


class _SType(Enum):
    def convert(self, v):
        v = super().convert(v)
        if v in ("csr", "row_sparse"):
            raise NotImplementedError(f"cast_storage: stype '{v}' needs sparse storage, "
                                      "which pymxnet does not implement")
        return v


@register
class CastStorage(Op):
    """Storage conversion; only the dense 'default' storage exists in pymxnet."""
    name = "cast_storage"
    params = Schema(stype=_SType(("csr", "default", "row_sparse")))
    backward_uses = ("out_grad",)

    def forward(self, ctx, p, inputs, aux, out=None):
        return [inputs[0].copy()]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        return [out_grads[0]]


adopt_out_contract(__name__)
