"""mx.nd.save / mx.nd.load (filled in by the serialization module)."""
from ..base import MXNetError


def save(fname, data):
    raise MXNetError("mx.nd.save is not implemented yet")


def load(fname):
    raise MXNetError("mx.nd.load is not implemented yet")


def load_frombuffer(buf):
    raise MXNetError("mx.nd.load_frombuffer is not implemented yet")
