"""Checkpoints (``mx.model.save_checkpoint`` and friends): ``prefix-symbol.json`` (the
symbol's JSON) plus ``prefix-%04d.params`` (an NDArray dict file with keys
``arg:<name>`` for learnable arguments and ``aux:<name>`` for auxiliary states),
byte-compatible with MXNet 1.x. Below ``mx.model``, ``mx.mod`` and ``mx.callback``,
which all write or read them.
"""
import logging

from . import ndarray as nd
from . import symbol as sym
from .atomic_file import together
from .base import MXNetError
from .context import cpu

__all__ = ["save_checkpoint", "load_checkpoint", "load_params"]


def _params_dict(arg_params, aux_params):
    """What a ``.params`` file holds: ``arg:``/``aux:`` keys, arrays on the CPU."""
    save_dict = {f"arg:{k}": v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({f"aux:{k}": v.as_in_context(cpu()) for k, v in aux_params.items()})
    return save_dict


def _split_params(save_dict, fname, strict=False):
    """(arg_params, aux_params) from a loaded ``.params`` dict; a key of another kind
    is skipped, or a ValueError when ``strict`` (as Module.load_params)."""
    arg_params, aux_params = {}, {}
    for key, value in save_dict.items():
        kind, _, name = key.partition(":")
        if kind == "arg":
            arg_params[name] = value
        elif kind == "aux":
            aux_params[name] = value
        elif strict:
            raise ValueError("Invalid param file " + fname)
    return arg_params, aux_params


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write ``prefix-symbol.json`` (unless symbol is None) and
    ``prefix-%04d.params`` (``arg:``/``aux:`` keys, arrays copied to the CPU)."""
    with together():          # the files replace the old ones together
        if symbol is not None:
            symbol.save(f"{prefix}-symbol.json", remove_amp_cast=remove_amp_cast)
        param_name = "%s-%04d.params" % (prefix, epoch)
        nd.save(param_name, _params_dict(arg_params, aux_params))
    logging.info('Saved checkpoint to "%s"', param_name)


def load_params(prefix, epoch):
    """(arg_params, aux_params) read from ``prefix-%04d.params``."""
    fname = "%s-%04d.params" % (prefix, epoch)
    save_dict = nd.load(fname)
    if not save_dict:
        logging.warning("Params file '%s' is empty", fname)
        return {}, {}
    if not isinstance(save_dict, dict):
        raise MXNetError(f"load_params: {fname} holds a list of arrays; a checkpoint "
                         "holds a dict with arg:/aux: keys")
    return _split_params(save_dict, fname)


def load_checkpoint(prefix, epoch):
    """(symbol, arg_params, aux_params) from ``prefix-symbol.json`` and
    ``prefix-%04d.params``."""
    symbol = sym.load(f"{prefix}-symbol.json")
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
