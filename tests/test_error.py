"""mx.error: MXNet 1.9.1's error registry and InternalError."""
import pytest

import mxnet as mx


def test_internal_error_is_an_mxnet_error_and_registered():
    assert issubclass(mx.error.InternalError, mx.base.MXNetError)
    assert mx.error._ERROR_TYPES["InternalError"] is mx.error.InternalError
    with pytest.raises(mx.MXNetError):
        raise mx.error.InternalError("broken invariant")


def test_register_error_forms():
    @mx.error.register_error
    class OwnError(mx.MXNetError):
        pass

    @mx.error.register_error("Renamed")
    class Other(ValueError):
        pass

    class Third(Exception):
        pass

    assert mx.error.register("ThirdName", Third) is Third
    assert mx.error._ERROR_TYPES["OwnError"] is OwnError
    assert mx.error._ERROR_TYPES["Renamed"] is Other
    assert mx.error._ERROR_TYPES["ThirdName"] is Third
    assert mx.error._ERROR_TYPES["ValueError"] is ValueError
