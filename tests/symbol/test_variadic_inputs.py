"""Variable-input operators called with no inputs in the symbol front end make one
variable per input their count names, as MXNet 1.9.1 does (names checked on it); the
imperative front end still wants the arrays."""
import pytest

import mxnet as mx
from mxnet.base import MXNetError


@pytest.mark.parametrize("make,names", [
    (lambda: mx.sym.Concat(name="concat", num_args=2, dim=1), ["concat_arg0", "concat_arg1"]),
    (lambda: mx.sym.ElementWiseSum(name="ews", num_args=3),
     ["ews_arg0", "ews_arg1", "ews_arg2"]),
    (lambda: mx.sym.UpSampling(scale=2, num_args=1, sample_type="nearest", name="up"),
     ["up_arg0"]),
    (lambda: mx.sym.UpSampling(scale=2, num_args=2, sample_type="bilinear", num_filter=2,
                               name="upb"), ["upb_data", "upb_weight"]),
])
def test_variables_made_for_missing_inputs(make, names):
    sym = make()
    assert sym.list_arguments() == names
    shapes = {n: (1, 2, 3, 3) for n in names if not n.endswith("weight")}
    if "upb_weight" in names:
        shapes["upb_weight"] = (2, 1, 4, 4)
    ex = sym.simple_bind(mx.cpu(), **shapes)      # binds and runs like any symbol
    ex.forward()


def test_imperative_call_needs_its_inputs():
    with pytest.raises(MXNetError, match="num_args=2 means 2 inputs"):
        mx.nd.Concat(num_args=2)
    a = mx.sym.var("a")
    with pytest.raises(MXNetError, match="means 2 inputs"):
        mx.sym.Concat(a, num_args=2)              # some given, some not: an error
