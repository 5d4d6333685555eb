"""Placeholder modules for parts of MXNet 1.9.1 pymxnet does not have yet.

``import mxnet.numpy`` (and the others named here) succeeds, so code that only imports
them keeps working, but every attribute access raises :class:`MissingFeatureError`, a
NotImplementedError (also an AttributeError, so ``hasattr`` answers False) that names
what is missing. Nothing here returns a value in place of the real feature.
"""

__all__ = ["MissingFeatureError", "missing_module_getattr"]


class MissingFeatureError(NotImplementedError, AttributeError):
    """A part of MXNet 1.9.1 that pymxnet does not implement yet."""


def missing_module_getattr(module_name, what):
    """A module ``__getattr__`` raising MissingFeatureError for every public name."""
    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise MissingFeatureError(f"{module_name}.{name}: {what} is not implemented in "
                                  f"pymxnet yet")
    return __getattr__
