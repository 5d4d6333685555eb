"""Basic layers (MXNet 1.9.1's ``mx.gluon.nn`` basic layers): containers, Dense,
Dropout, normalisation, Embedding, Flatten, lambdas, concatenation and Identity."""
import warnings

import numpy as np

from ... import ndarray, symbol
from ...base import MXNetError
from ..block import Block, HybridBlock
from ..utils import _indent
from .activations import Activation

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "Embedding", "BatchNorm",
           "BatchNormReLU", "SyncBatchNorm", "InstanceNorm", "LayerNorm", "GroupNorm",
           "Flatten", "Lambda", "HybridLambda", "Concatenate", "HybridConcatenate",
           "Concurrent", "HybridConcurrent", "Identity"]


def _children_repr(block):
    lines = [f"  ({key}): {_indent(repr(child), 2)}"
             for key, child in block._children.items()]
    return "{}(\n{}\n)".format(block.__class__.__name__, "\n".join(lines))


def _sequential_getitem(block, key):
    layers = list(block._children.values())[key]
    if not isinstance(layers, list):
        return layers
    net = type(block)(prefix=block._prefix)
    with net.name_scope():
        net.add(*layers)
    return net


def _run_chain(children, x, args):
    for block in children:
        x = block(x, *args)
        args = []
        if isinstance(x, (tuple, list)):
            args = x[1:]
            x = x[0]
    if args:
        x = tuple([x] + list(args))
    return x


class Sequential(Block):
    """Stack Blocks one after another (``net.add(...)``)."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def add(self, *blocks):
        """Append blocks to the chain."""
        for block in blocks:
            self.register_child(block)

    def forward(self, x, *args):
        return _run_chain(self._children.values(), x, args)

    def __repr__(self):
        return _children_repr(self)

    def __getitem__(self, key):
        return _sequential_getitem(self, key)

    def __len__(self):
        return len(self._children)

    def hybridize(self, active=True, **kwargs):
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(f"All children of this Sequential layer '{self.prefix}' are "
                          "HybridBlocks. Consider using HybridSequential for the best "
                          "performance.", stacklevel=2)
        super().hybridize(active, **kwargs)


class HybridSequential(HybridBlock):
    """Stack HybridBlocks one after another; hybridizes into one graph."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def add(self, *blocks):
        """Append blocks to the chain."""
        for block in blocks:
            self.register_child(block)

    def hybrid_forward(self, F, x, *args):
        return _run_chain(self._children.values(), x, args)

    def __repr__(self):
        return _children_repr(self)

    def __getitem__(self, key):
        return _sequential_getitem(self, key)

    def __len__(self):
        return len(self._children)


class Dense(HybridBlock):
    """A fully connected layer: ``activation(dot(x, weight.T) + bias)``.

    Parameters
    ----------
    units : int
        Output dimension.
    activation : str, optional
        Activation applied to the output (see ``Activation``).
    use_bias : bool, default True
    flatten : bool, default True
        Flatten all input dimensions but the first; else apply to the last axis.
    dtype : str, default 'float32'
    weight_initializer, bias_initializer : Initializer or str
    in_units : int, default 0
        Input dimension; 0 infers it at the first forward pass.
    """

    def __init__(self, units, activation=None, use_bias=True, flatten=True,
                 dtype="float32", weight_initializer=None, bias_initializer="zeros",
                 in_units=0, **kwargs):
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get("weight", shape=(units, in_units),
                                          init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get("bias", shape=(units,), init=bias_initializer,
                                            dtype=dtype, allow_deferred_init=True)
            else:
                self.bias = None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + "_")
            else:
                self.act = None

    def hybrid_forward(self, F, x, weight, bias=None):
        if bias is None:
            out = F.FullyConnected(x, weight, no_bias=True, num_hidden=self._units,
                                   flatten=self._flatten, name="fwd")
        else:
            out = F.FullyConnected(x, weight, bias, no_bias=False, num_hidden=self._units,
                                   flatten=self._flatten, name="fwd")
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self):
        shape = self.weight.shape
        layout = f"{shape[1] if shape[1] else None} -> {shape[0]}"
        return f"{self.__class__.__name__}({layout}, {self.act if self.act else 'linear'})"


class Dropout(HybridBlock):
    """Randomly zero elements with probability ``rate`` during training (scaling the
    others by 1/(1-rate)); ``axes`` shares the mask along those axes."""

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd", cudnn_off=False)
        return F.identity(x)

    def __repr__(self):
        return f"{self.__class__.__name__}(p = {self._rate}, axes={self._axes})"


class _NormBase(HybridBlock):
    """Shared by the normalisation layers: their gamma and beta, and their repr (the
    options, then in_channels)."""
    _show_channels = True
    _unknown_channels = 0

    def _add_gamma_beta(self, size, scale, center, gamma_initializer, beta_initializer,
                        fixed=False):
        """gamma (learnt when ``scale``) and beta (learnt when ``center``), of shape
        (size,). ``fixed``: one not learnt cannot be made learnable later (BatchNorm's
        parameters are not differentiable then)."""
        for name, learnt, init in (("gamma", scale, gamma_initializer),
                                   ("beta", center, beta_initializer)):
            extra = {"differentiable": learnt} if fixed else {}
            setattr(self, name, self.params.get(name, grad_req="write" if learnt else "null",
                                                shape=(size,), init=init,
                                                allow_deferred_init=True, **extra))

    def __repr__(self):
        content = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        if self._show_channels:
            channels = self.gamma.shape[0]
            content += f", in_channels={channels if channels else self._unknown_channels}"
        return f"{self.__class__.__name__}({content})"


class BatchNorm(_NormBase):
    """Batch normalisation over axis ``axis`` (the channels).

    Training normalises with the batch statistics and updates ``running_mean`` /
    ``running_var`` (momentum ``momentum``); inference uses the running statistics.
    ``scale=False`` fixes gamma to 1, ``center=False`` beta to 0.
    """
    _unknown_channels = None

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones",
                 in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum,
                        "fix_gamma": not scale, "use_global_stats": use_global_stats}
        self._axis = axis
        if in_channels != 0:
            self.in_channels = in_channels
        self._add_gamma_beta(in_channels, scale, center, gamma_initializer, beta_initializer,
                             fixed=True)
        self.running_mean = self.params.get("running_mean", grad_req="null",
                                            shape=(in_channels,),
                                            init=running_mean_initializer,
                                            allow_deferred_init=True, differentiable=False)
        self.running_var = self.params.get("running_var", grad_req="null",
                                           shape=(in_channels,),
                                           init=running_variance_initializer,
                                           allow_deferred_init=True, differentiable=False)

    def cast(self, dtype):
        if np.dtype(dtype).name == "float16":
            dtype = "float32"
        super().cast(dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd",
                           **self._kwargs)


class BatchNormReLU(BatchNorm):
    """BatchNorm followed by ReLU (MXNet fuses them; here they run one after the
    other)."""

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        out = F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd",
                          **self._kwargs)
        return F.relu(out)


class SyncBatchNorm(BatchNorm):
    """Cross-device batch normalisation. pymxnet runs one process, so the statistics
    are those of the local batch, as with ``num_devices=1``: the layer computes what
    BatchNorm computes over axis 1."""

    def __init__(self, in_channels=0, num_devices=None, momentum=0.9, epsilon=1e-5,
                 center=True, scale=True, use_global_stats=False, beta_initializer="zeros",
                 gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", **kwargs):
        super().__init__(1, momentum, epsilon, center, scale, use_global_stats,
                         beta_initializer, gamma_initializer, running_mean_initializer,
                         running_variance_initializer, in_channels, **kwargs)
        if num_devices is None:
            warnings.warn("Caution using SyncBatchNorm: if not using all the GPUs, please "
                          "mannually set num_devices", UserWarning)
            num_devices = 1
        if num_devices != 1:
            raise MXNetError(f"SyncBatchNorm: num_devices={num_devices} needs a "
                             "multi-device synchronised batch norm, which pymxnet (one "
                             "process, no cross-device reduction) does not implement; use "
                             "num_devices=1")
        self._bn_kwargs = dict(self._kwargs)
        self._kwargs = {"eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats, "ndev": num_devices,
                        "key": self.prefix}

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd",
                           **self._bn_kwargs)


class InstanceNorm(_NormBase):
    """Instance normalisation: normalise each sample and channel over the remaining
    axes (``scale`` defaults to False, as in MXNet)."""

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False,
                 beta_initializer="zeros", gamma_initializer="ones", in_channels=0,
                 **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self._add_gamma_beta(in_channels, scale, center, gamma_initializer, beta_initializer)

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon)
        x = x.swapaxes(1, self._axis)
        return F.InstanceNorm(x, gamma, beta, name="fwd",
                              eps=self._epsilon).swapaxes(1, self._axis)


class LayerNorm(_NormBase):
    """Layer normalisation over axis ``axis`` (default the last)."""

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", in_channels=0,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        self._add_gamma_beta(in_channels, scale, center, gamma_initializer, beta_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)


class GroupNorm(_NormBase):
    """Group normalisation: channels (axis 1) split into ``num_groups`` groups, each
    normalised over its channels and the spatial axes; gamma/beta have one value per
    group, as in MXNet 1.9.1."""
    _show_channels = False

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", prefix=None,
                 params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center,
                        "scale": scale}
        self._num_groups = num_groups
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        self._add_gamma_beta(num_groups, scale, center, gamma_initializer, beta_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.GroupNorm(data, gamma=gamma, beta=beta, num_groups=self._num_groups,
                           eps=self._epsilon)


class Embedding(HybridBlock):
    """Map integer indices to rows of a ``(input_dim, output_dim)`` weight."""

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None,
                 sparse_grad=False, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": sparse_grad}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype,
                                      allow_deferred_init=True,
                                      grad_stype="row_sparse" if sparse_grad else "default")

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self):
        k = self._kwargs
        return f"{self.__class__.__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"


class Flatten(HybridBlock):
    """Reshape ``(N, ...)`` to ``(N, -1)``."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.Flatten(x)

    def __repr__(self):
        return self.__class__.__name__


def _function_name(function):
    return function if isinstance(function, str) else function.__name__


class Lambda(Block):
    """Wrap a function (or the name of an ``mx.nd`` function) as a Block."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(ndarray, function):
                raise AssertionError(f"Function name {function} is not found in ndarray.")
            self._func_impl = getattr(ndarray, function)
        elif callable(function):
            self._func_impl = function
        else:
            raise ValueError(f"Unrecognized function in lambda: {function} of type "
                             f"{type(function)}")
        self._func_name = _function_name(function)

    def forward(self, *args):
        return self._func_impl(*args)

    def __repr__(self):
        return f"{self.__class__.__name__}({self._func_name})"


class HybridLambda(HybridBlock):
    """Wrap a function ``f(F, *args)`` (or the name of a function present in both
    ``mx.nd`` and ``mx.sym``) as a HybridBlock."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not (hasattr(ndarray, function) and hasattr(symbol, function)):
                raise AssertionError(f"Function name {function} is not found in "
                                     "symbol/ndarray.")
            name = function
            self._func = lambda F, *args: getattr(F, name)(*args)
        elif callable(function):
            self._func = function
        else:
            raise ValueError(f"Unrecognized function in lambda: {function} of type "
                             f"{type(function)}")
        self._func_name = _function_name(function)

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self):
        return f"{self.__class__.__name__}({self._func_name})"


class Concatenate(Sequential):
    """Run every child on the same input and concatenate their outputs along ``axis``
    (MXNet 1.9.1 calls it ``gluon.contrib.nn.Concurrent``)."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return ndarray.concat(*[block(x) for block in self._children.values()],
                              dim=self.axis)


class HybridConcatenate(HybridSequential):
    """Hybridizable Concatenate (MXNet 1.9.1's ``gluon.contrib.nn.HybridConcurrent``)."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        return F.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class Concurrent(Concatenate):
    """MXNet 1.9.1's name (``gluon.contrib.nn.Concurrent``) for Concatenate."""


class HybridConcurrent(HybridConcatenate):
    """MXNet 1.9.1's name (``gluon.contrib.nn.HybridConcurrent``) for
    HybridConcatenate."""


class Identity(HybridBlock):
    """Return the input unchanged (useful as a branch of HybridConcatenate)."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x):
        return x
