"""Where the NumPy-compatible front end keeps each builtin ``_np_*``/``_npx_*`` operator:
``_get_builtin_op(name)`` finds the Python function that ``mx.np``/``mx.npx`` expose for
an operator name (MXNet 1.9.1's tests import it from here)."""
import importlib
import inspect

__all__ = []

_NP_OP_SUBMODULE_LIST = ("_random_", "_linalg_")
_NP_EXT_OP_SUBMODULE_LIST = ("_image_",)


def _get_op_submodule_name(op_name, prefix, submodule_names):
    """The submodule an operator name belongs to ('' when none), e.g.
    ``_np__random_uniform`` -> ``_random_``."""
    rest = op_name[len(prefix):]
    for name in submodule_names:
        if rest.startswith(name):
            return name
    return ""


def _get_builtin_op(op_name):
    """The ``mx.np``/``mx.npx`` function of operator ``op_name``, or None."""
    if op_name.startswith("_np_"):
        root, prefix, subs = "mxnet.numpy", "_np_", _NP_OP_SUBMODULE_LIST
    elif op_name.startswith("_npx_"):
        root, prefix, subs = "mxnet.numpy_extension", "_npx_", _NP_EXT_OP_SUBMODULE_LIST
    else:
        return None
    sub = _get_op_submodule_name(op_name, prefix, subs)
    module = root + ("." + sub.strip("_") if sub else "")
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    fn = getattr(mod, op_name[len(prefix) + len(sub):], None)
    if fn is not None and not hasattr(fn, "__signature__"):
        # MXNet's generated operator functions carry __signature__; ours are plain
        # Python functions whose real signature is the same thing.
        fn.__signature__ = inspect.signature(fn)
    return fn
