"""Dtype rules of operators that MXNet 1.9.1 implements for some types only:
``check_dtype(opname, dtype, allowed)`` raises MXNetError naming the operator, the
dtype and the allowed ones."""
import numpy as np

from ..base import MXNetError

__all__ = ["F16_32_64", "F32_64", "F32", "check_dtype"]

F16_32_64 = ("float16", "float32", "float64")
F32_64 = ("float32", "float64")
F32 = ("float32",)


def check_dtype(opname, dtype, allowed):
    """Raise unless ``dtype`` (None = not known yet, accepted) is one of ``allowed``."""
    if dtype is None:
        return
    name = np.dtype(dtype).name
    if name not in allowed:
        raise MXNetError(f"{opname}: {name} inputs are not supported (supported: "
                         f"{', '.join(allowed)})")


def restrict_dtypes(allowed, inputs=(0,)):
    """Class decorator for an Op: its ``inputs`` (argument indices, or "all") must have
    one of the ``allowed`` dtypes, checked in type inference and before every forward."""
    def picked(seq):
        return seq if inputs == "all" else [seq[i] for i in inputs if i < len(seq)]

    def wrap(cls):
        infer_type, forward = cls.infer_type, cls.forward

        def checked_infer_type(self, p, in_types):
            for t in picked(in_types):
                check_dtype(self.name, t, allowed)
            return infer_type(self, p, in_types)

        def checked_forward(self, ctx, p, args, aux, *rest, **kw):
            for a in picked(args):
                check_dtype(self.name, a.dtype, allowed)
            return forward(self, ctx, p, args, aux, *rest, **kw)

        cls.infer_type, cls.forward = checked_infer_type, checked_forward
        return cls
    return wrap
