"""The converter tables of ONNX export (MXNet operator -> ONNX nodes) and import (ONNX
op type -> MXNet symbols): a dict of name -> converter, filled by its ``converts``
decorator."""

__all__ = ["ConverterTable"]


class ConverterTable(dict):
    """name -> converter function."""

    def converts(self, *names):
        """Decorator: register the function as the converter of every name."""
        def deco(fn):
            for name in names:
                self[name] = fn
            return fn
        return deco
