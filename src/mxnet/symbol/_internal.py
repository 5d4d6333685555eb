"""mx.sym._internal: symbolic operator functions generated from the registry."""
from ..operator.registry import all_ops
from .register import make_function


def __getattr__(name):
    """Operators registered after import appear on first use."""
    opdef = all_ops().get(name)
    if opdef is None or name.startswith("__"):
        raise AttributeError(f"module 'mxnet.symbol._internal' has no attribute {name!r}")
    fn = make_function(opdef, name)
    globals()[name] = fn
    return fn
