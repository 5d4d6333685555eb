"""The imperative dispatcher's per-call caches (ndarray/dispatch.py) answer as the
operator itself does."""
from mxnet.ndarray import dispatch
from mxnet.operator.registry import get_op


def test_call_meta_cache_tells_params_apart():
    op = get_op("FullyConnected")
    with_bias = op.parse({"num_hidden": 4})
    no_bias = op.parse({"num_hidden": 4, "no_bias": True})
    for _ in range(3):          # cached answers equal the operator's own
        assert dispatch._call_meta(op, with_bias) == (3, 1)
        assert dispatch._call_meta(op, no_bias) == (2, 1)
    split = get_op("SliceChannel")
    for n in (2, 3):
        p = split.parse({"num_outputs": n})
        assert dispatch._call_meta(split, p) == (1, n)
        assert dispatch._call_meta(split, p) == (1, n)
