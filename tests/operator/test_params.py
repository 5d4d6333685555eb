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
