"""Parameter schemas (operator/params.py): the parse cache must tell value types apart."""
import mxnet as mx
from mxnet.operator.params import Any, Float, Int, Schema


def test_cache_keeps_raw_types_apart():
    schema = Schema(scalar=Float(), n=Int(0))
    a = schema.parse("op", {"scalar": 10})
    b = schema.parse("op", {"scalar": 10.0})
    assert a == b == {"scalar": 10.0, "n": 0}
    assert type(a.given["scalar"]) is int and type(b.given["scalar"]) is float
    # Hits return the entry parsed from a value of the same type.
    assert schema.parse("op", {"scalar": 10}) is a
    assert schema.parse("op", {"scalar": 10.0}) is b


def test_cache_bool_and_int_differ_for_any_field():
    schema = Schema(value=Any(None))
    assert schema.parse("op", {"value": 1})["value"] is not True
    assert schema.parse("op", {"value": True})["value"] is True
    assert type(schema.parse("op", {"value": 1})["value"]) is int


def test_unhashable_values_parse_without_cache():
    schema = Schema(shape=Any(None))
    assert schema.parse("op", {"shape": [2, 3]})["shape"] == [2, 3]


def test_symbol_json_keeps_the_given_type():
    x = mx.sym.var("x")
    assert (x + 10.0).list_attr()["scalar"] == "10.0"
    assert (x + 10).list_attr()["scalar"] == "10"


def test_hash_is_kept_until_the_values_change():
    """Kernels key per-geometry caches by the parameters at every call: the hash is
    computed once, and every way of changing the values gives the new values' hash."""
    from mxnet.operator.params import Params
    p = Params(kernel=(3, 3), stride=(1, 1), num_filter=8)
    h = hash(p)
    assert hash(p) == h and hash(Params(dict(p))) == h
    changes = [lambda q: setattr(q, "kernel", (5, 5)),
               lambda q: q.__setitem__("num_filter", 4),
               lambda q: q.update(stride=(2, 2)),
               lambda q: q.pop("stride"),
               lambda q: q.setdefault("pad", (1, 1)),
               lambda q: q.__delitem__("kernel"),
               lambda q: q.popitem(),
               lambda q: q.__ior__({"dilate": (2, 2)}),
               lambda q: q.clear()]
    for change in changes:
        before = dict(p)
        change(p)
        assert dict(p) != before
        assert hash(p) == hash(Params(dict(p)))
