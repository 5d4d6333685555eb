"""``mx.sym.npx`` (``mxnet.symbol.numpy_extension``, installed by ``mxnet/__init__``): the neural-network operators of NumPy mode as Symbol builders, the
same registered operators ``mx.npx`` calls (``npx.relu`` -> ``relu``,
``npx.convolution`` -> ``Convolution`` ...)."""
from .. import symbol as _sym
from .._missing import MissingFeatureError
from . import _CONTRIB, _OPERATORS

__all__ = []


def _front(fn, doc):
    def call(*args, **kwargs):
        return fn(*args, **kwargs)
    call.__doc__ = doc
    return call


for _name, (_op, _doc) in _OPERATORS.items():
    _fn = getattr(_sym, _op, None) or getattr(_sym.contrib, _op.replace("contrib_", ""),
                                              None)
    if _fn is not None:
        globals()[_name] = _front(_fn, _doc)
        __all__.append(_name)
for _name, (_op, _doc) in _CONTRIB.items():
    globals()[_name] = _front(getattr(_sym.contrib, _op), _doc)
    __all__.append(_name)


def reshape(a, newshape, reverse=False, order="C"):
    """Reshape with the NumPy extension's codes (-1 infers, -2 copies an axis, -3 drops a
    size-1 axis, -4 copies the rest, -5 merges two axes, -6 splits one)."""
    newshape = (newshape,) if isinstance(newshape, int) else tuple(newshape)
    return _sym._internal._npx_reshape(a, newshape=newshape, reverse=reverse, order=order)


__all__.append("reshape")


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise MissingFeatureError(f"mx.sym.npx.{name} is not implemented in pymxnet yet")
