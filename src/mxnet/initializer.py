"""Weight initializers (MXNet 1.9.1's ``mx.initializer`` / ``mx.init``).

An initializer is called as ``init(desc, arr)``: ``desc`` is an ``InitDesc`` (a str
naming the parameter, with its attributes) and ``arr`` the NDArray to fill in place.
Dispatch follows MXNet: an ``__init__`` attribute (a ``dumps()`` string) picks the
initializer for that parameter; otherwise the name's suffix does — ``weight`` ->
``_init_weight`` (what each initializer defines), ``bias``/``beta``/``min`` -> 0,
``gamma``/``max`` -> 1; running statistics (``moving_mean``/``running_mean`` -> 0,
``moving_var``/``running_var`` -> 1, ``moving_inv_var``/``moving_avg`` -> 0) are a
fallback where MXNet would raise. Plain strings take MXNet's deprecated path, which also knows
``moving_mean``/``moving_var``/``moving_inv_var``/``moving_avg`` and ``upsampling``/
``stn_loc`` names.

Random initializers draw from the array's context generator, so ``mx.random.seed``
makes them reproducible.
"""
import json
import logging
import re
import warnings
from math import sqrt

import numpy as np

from . import registry
from .base import MXNetError
from .ndarray import NDArray, load, zeros
from .ndarray.ndarray import from_data
from .resource import get_rng
from .util import is_np_array  # noqa: F401  (as MXNet's module exposes it)

__all__ = ["InitDesc", "Initializer", "register", "create", "alias", "Load", "Mixed",
           "Zero", "One", "Constant", "Uniform", "Normal", "Orthogonal", "Xavier",
           "MSRAPrelu", "Bilinear", "LSTMBias", "FusedRNN"]


class InitDesc(str):
    """A parameter name for an initializer, carrying its attributes (``attrs``, e.g.
    ``{'__init__': ...}``) and the global initializer (``global_init``)."""

    def __new__(cls, name, attrs=None, global_init=None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


# --- writing into NDArrays ----------------------------------------------------------------

def _fill(arr, value):
    """arr[:] = value, for a number or a device/host array of arr's shape."""
    if isinstance(value, (int, float, np.number)):
        arr[:] = value
        return
    if isinstance(value, np.ndarray) and arr.context.device_typeid == 2:
        arr[:] = value                       # setitem moves host data to the device
        return
    arr[:] = from_data(value.astype(arr.dtype, copy=False), arr.context)


def _rng(arr):
    return get_rng(arr.context)


def _gen_dtype(arr):
    dt = np.dtype(arr.dtype)
    return dt if dt in (np.float32, np.float64) else np.dtype(np.float32)


def _check_sampled(arr):
    """MXNet's initializers draw straight into the array with its random operators,
    which only write floating-point arrays."""
    if np.dtype(arr.dtype).kind in "biu":
        raise MXNetError(f"random initialization needs a float16, float32 or float64 "
                         f"array; got {np.dtype(arr.dtype).name}")


def _uniform(arr, low, high):
    """Samples of U[low, high) with arr's shape, on its device."""
    _check_sampled(arr)
    if low > high:      # Uniform(scale) with scale < 0: MXNet's uniform rejects it
        raise MXNetError(f"uniform: low ({low}) must be less or equal to high ({high})")
    dt = _gen_dtype(arr)
    out = _rng(arr).random(size=arr.shape, dtype=dt)
    out *= dt.type(high - low)
    out += dt.type(low)
    return out


def _normal(arr, loc, scale):
    _check_sampled(arr)
    if not scale > 0:   # Normal(0), Xavier(magnitude=0, 'gaussian'): as MXNet's normal
        raise MXNetError(f"normal: the scale (sigma) must be positive; got {scale}")
    dt = _gen_dtype(arr)
    out = _rng(arr).standard_normal(size=arr.shape, dtype=dt)
    out *= dt.type(scale)
    out += dt.type(loc)
    return out


def _bilinear_kernel(shape):
    """The bilinear upsampling filter MXNet's Bilinear writes, for shape (..., H, W)."""
    f = np.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    x = np.arange(shape[3])
    y = np.arange(shape[2])
    kern = np.outer(1 - np.abs(y / f - c), 1 - np.abs(x / f - c)).astype(np.float32)
    return np.broadcast_to(kern, tuple(shape)).copy()


# --- the base class --------------------------------------------------------------------------

class Initializer:
    """The base class of initializers. Subclasses define ``_init_weight(name, arr)``."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """Log a statistic (by default the root-mean-square) of every array set."""
        self._verbose = verbose
        if print_func is None:
            def rms(x):
                data = x.asnumpy().astype(np.float64)
                return str(float(np.sqrt((data * data).sum()) / sqrt(data.size)))
            print_func = rms
        self._print_func = print_func
        return self

    def _verbose_print(self, desc, init, arr):
        if self._verbose and self._print_func:
            logging.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self):
        """The JSON string ``'["name", {kwargs}]'`` that ``create`` understands."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    # Suffix -> (method, label) of the InitDesc path, checked in this order.
    _SUFFIXES = (("weight", "_init_weight"), ("bias", "_init_bias"),
                 ("gamma", "_init_gamma"), ("beta", "_init_beta"),
                 ("min", "_init_zero"), ("max", "_init_one"),
                 ("weight_quantize", "_init_quantized_weight"),
                 ("bias_quantize", "_init_quantized_bias"))
    # Running statistics. MXNet reaches them through the ``__init__`` attribute its
    # BatchNorm symbol sets (and raises without it); a name-based fallback keeps graphs
    # built without that attribute working.
    _STATS = (("moving_mean", "_init_zero"), ("moving_var", "_init_one"),
              ("moving_inv_var", "_init_zero"), ("moving_avg", "_init_zero"),
              ("running_mean", "_init_zero"), ("running_var", "_init_one"))

    def __call__(self, desc, arr):
        """Initialize arr (an NDArray) for the parameter described by desc."""
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        for suffix, method in self._SUFFIXES + self._STATS:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    # MXNet's deprecated init(str, arr) path: its own suffix table.
    _LEGACY = (("bias", "_init_bias"), ("gamma", "_init_gamma"), ("beta", "_init_beta"),
               ("weight", "_init_weight"), ("moving_mean", "_init_zero"),
               ("moving_var", "_init_one"), ("moving_inv_var", "_init_zero"),
               ("moving_avg", "_init_zero"), ("min", "_init_zero"), ("max", "_init_one"))

    def _legacy_init(self, name, arr):
        warnings.warn("Calling initializer with init(str, NDArray) has been deprecated."
                      "please use init(mx.init.InitDesc(...), NDArray) instead.",
                      DeprecationWarning, stacklevel=3)
        if not isinstance(name, str):
            raise TypeError("name must be string")
        if not isinstance(arr, NDArray):
            raise TypeError("arr must be NDArray")
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.startswith("stn_loc") and name.endswith("weight"):
            self._init_zero(name, arr)
        elif name.startswith("stn_loc") and name.endswith("bias"):
            self._init_loc_bias(name, arr)
        else:
            for suffix, method in self._LEGACY:
                if name.endswith(suffix):
                    getattr(self, method)(name, arr)
                    return
            self._init_default(name, arr)

    def _init_bilinear(self, _, arr):
        _fill(arr, _bilinear_kernel(arr.shape))

    def _init_loc_bias(self, _, arr):
        if arr.shape[0] != 6:
            raise AssertionError("stn_loc bias must have 6 elements")
        _fill(arr, np.array([1.0, 0, 0, 0, 1.0, 0], dtype=np.float32))

    def _init_zero(self, _, arr):
        arr[:] = 0.0

    def _init_one(self, _, arr):
        arr[:] = 1.0

    def _init_bias(self, _, arr):
        arr[:] = 0.0

    def _init_quantized_bias(self, _, arr):
        arr[:] = 0

    def _init_gamma(self, _, arr):
        arr[:] = 1.0

    def _init_beta(self, _, arr):
        arr[:] = 0.0

    def _init_weight(self, name, arr):
        """Fill a weight; what each initializer defines."""
        raise NotImplementedError("Must override it")

    def _init_quantized_weight(self, _, arr):
        values = _rng(arr).integers(-127, 127, size=arr.shape, endpoint=False)
        _fill(arr, values.astype(np.int8))

    def _init_default(self, name, _):
        raise ValueError(
            f"Unknown initialization pattern for {name}. Default initialization is now "
            'limited to "weight", "bias", "gamma" (1.0), and "beta" (0.0).'
            "Please use mx.sym.Variable(init=mx.init.*) to set initialization pattern")

    def __eq__(self, other):
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = object.__hash__


_register = registry.get_register_func(Initializer, "initializer")
alias = registry.get_alias_func(Initializer, "initializer")
create = registry.get_create_func(Initializer, "initializer")


def register(klass):
    """Register an initializer class (so ``create``/``dumps`` strings can name it)."""
    return _register(klass)


# --- composite initializers (not registered, as in MXNet) -------------------------------------

class Load:
    """Initialize from saved parameters (a dict or an ``.params``/``.nd`` file);
    ``arg:``/``aux:`` prefixes are dropped. Names not found go to default_init."""

    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):
            param = load(param)
        if not isinstance(param, dict):
            raise AssertionError("Load needs a dict of name -> NDArray (or a file of one)")
        self.param = {}
        for name, arr in param.items():
            if name.startswith("arg:") or name.startswith("aux:"):
                name = name[4:]
            self.param[name] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        if name in self.param:
            src = self.param[name]
            if tuple(arr.shape) != tuple(src.shape):
                raise AssertionError(
                    f"Parameter {name} cannot be initialized from loading. Shape mismatch, "
                    f"target {arr.shape} vs loaded {src.shape}")
            arr[:] = src
            if self.verbose:
                logging.info("Initialized %s by loading", name)
        else:
            if self.default_init is None:
                raise AssertionError(f"Cannot Initialize {name}. Not found in loaded param "
                                     "and no default Initializer is provided.")
            self.default_init(name, arr)
            if self.verbose:
                logging.info("Initialized %s by default", name)


class Mixed:
    """Pick the initializer of the first regex pattern that matches the name."""

    def __init__(self, patterns, initializers):
        if len(patterns) != len(initializers):
            raise AssertionError("patterns and initializers must have the same length")
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name, arr):
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise ValueError(f"Parameter name {name} did not match any pattern. Consider add a "
                         '".*" pattern at the and with default Initializer.')


# --- the initializers --------------------------------------------------------------------------

@register
@alias("zeros")
class Zero(Initializer):
    """Fill weights with 0."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        arr[:] = 0


@register
@alias("ones")
class One(Initializer):
    """Fill weights with 1."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        arr[:] = 1


@register
class Constant(Initializer):
    """Fill weights with a value (a number or an array broadcast to the shape)."""

    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, _, arr):
        value = self.value
        if isinstance(value, NDArray):
            arr[:] = value
        elif np.isscalar(value):
            arr[:] = value
        else:
            _fill(arr, np.broadcast_to(np.asarray(value, dtype=arr.dtype), arr.shape))

    def dumps(self):
        value = self._kwargs["value"]
        if not np.isscalar(value):
            self._kwargs["value"] = value.tolist() if isinstance(value, np.ndarray) \
                else value.asnumpy().tolist()
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])


@register
class Uniform(Initializer):
    """Weights from U(-scale, scale).

    Parameters
    ----------
    scale : float, default 0.07
    """

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        _fill(arr, _uniform(arr, -self.scale, self.scale))


@register
class Normal(Initializer):
    """Weights from N(0, sigma**2).

    Parameters
    ----------
    sigma : float, default 0.01
    """

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        _fill(arr, _normal(arr, 0.0, self.sigma))


@register
class Orthogonal(Initializer):
    """A scaled orthogonal matrix (Saxe et al., 2013): the weight, flattened to
    (shape[0], rest), has orthonormal rows or columns times ``scale``.

    Parameters
    ----------
    scale : float, default 1.414
    rand_type : {'uniform', 'normal'}, default 'uniform'
    """

    def __init__(self, scale=1.414, rand_type="uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _, arr):
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        gen = np.random.default_rng(int(_rng(arr).integers(0, 2 ** 63 - 1)))
        if self.rand_type == "uniform":
            tmp = gen.uniform(-1.0, 1.0, size=(nout, nin))
        elif self.rand_type == "normal":
            tmp = gen.normal(0.0, 1.0, size=(nout, nin))
        else:
            raise ValueError(f"Unknown rand_type {self.rand_type!r} (uniform or normal)")
        u, _, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        _fill(arr, (self.scale * res.reshape(arr.shape)).astype(np.float32))


@register
class Xavier(Initializer):
    """Xavier/Glorot initialization: U(-s, s) (``rnd_type='uniform'``) or N(0, s**2)
    (``'gaussian'``) with ``s = sqrt(magnitude / factor)``, factor = fan_in
    (``factor_type='in'``), fan_out (``'out'``) or their mean (``'avg'``), where for a
    weight of shape (out, in, k...) fan_in = in * prod(k), fan_out = out * prod(k).

    Parameters
    ----------
    rnd_type : {'uniform', 'gaussian'}, default 'uniform'
    factor_type : {'avg', 'in', 'out'}, default 'avg'
    magnitude : float, default 3
    """

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _scale(self, name, shape):
        if len(shape) < 2:
            raise ValueError(f"Xavier initializer cannot be applied to vector {name}. It "
                             "requires at least 2D.")
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        factors = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}
        if self.factor_type not in factors:
            raise ValueError("Incorrect factor type")
        return np.sqrt(self.magnitude / factors[self.factor_type])

    def _init_weight(self, name, arr):
        scale = self._scale(name, arr.shape)
        if self.rnd_type == "uniform":
            _fill(arr, _uniform(arr, -scale, scale))
        elif self.rnd_type == "gaussian":
            _fill(arr, _normal(arr, 0.0, scale))
        else:
            raise ValueError("Unknown random type")


@register
class MSRAPrelu(Xavier):
    """He/MSRA initialization for PReLU nets: Gaussian Xavier with magnitude
    ``2 / (1 + slope**2)``.

    Parameters
    ----------
    factor_type : {'avg', 'in', 'out'}, default 'avg'
    slope : float, default 0.25
    """

    def __init__(self, factor_type="avg", slope=0.25):
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """Bilinear upsampling filters for a (N, C, H, W) deconvolution weight."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        _fill(arr, _bilinear_kernel(arr.shape))


@register
class LSTMBias(Initializer):
    """LSTM biases: 0 except the forget gate's (the second quarter), set to
    forget_bias. Applies through a parameter's ``init`` (``__init__`` attribute).

    Parameters
    ----------
    forget_bias : float, default 1.0
    """

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        num_hidden = int(arr.shape[0] / 4)
        values = np.zeros(arr.shape, dtype=np.float32)
        values[num_hidden:2 * num_hidden] = self.forget_bias
        _fill(arr, values)


_RNN_GATES = {"rnn_relu": [""], "rnn_tanh": [""], "lstm": ["_i", "_f", "_c", "_o"],
              "gru": ["_r", "_z", "_o"]}


def _fused_rnn_slices(size, num_hidden, num_layers, mode, bidirectional):
    """(name, offset, shape) of every piece of a fused RNN parameter vector, in the
    cuDNN order MXNet uses: all weights (per layer, direction: i2h gates, h2h gates),
    then all biases in the same order."""
    if mode not in _RNN_GATES:
        raise ValueError(f"Unknown RNN mode {mode!r}; expected one of {sorted(_RNN_GATES)}")
    gates = _RNN_GATES[mode]
    dirs = ["l", "r"] if bidirectional else ["l"]
    b, m, h = len(dirs), len(gates), num_hidden
    num_input = size // b // h // m - (num_layers - 1) * (h + b * h + 2) - h - 2
    pieces, p = [], 0
    for layer in range(num_layers):
        in_size = num_input if layer == 0 else b * h
        for d in dirs:
            for group, cols in (("i2h", in_size), ("h2h", h)):
                for g in gates:
                    pieces.append((f"{d}{layer}_{group}{g}_weight", p, (h, cols)))
                    p += h * cols
    for layer in range(num_layers):
        for d in dirs:
            for group in ("i2h", "h2h"):
                for g in gates:
                    pieces.append((f"{d}{layer}_{group}{g}_bias", p, (h,)))
                    p += h
    if p != size:
        raise AssertionError("Invalid parameters size for FusedRNNCell")
    return pieces


@register
class FusedRNN(Initializer):
    """Initialize the single parameter vector of a fused RNN layer piece by piece with
    ``init`` (or the global initializer when None); LSTM forget-gate biases get
    forget_bias.

    Parameters
    ----------
    init : Initializer or str (a ``dumps()`` string) or None
    num_hidden : int
    num_layers : int
    mode : {'rnn_relu', 'rnn_tanh', 'lstm', 'gru'}
    bidirectional : bool, default False
    forget_bias : float, default 1.0
    """

    def __init__(self, init, num_hidden, num_layers, mode, bidirectional=False,
                 forget_bias=1.0):
        if isinstance(init, str):
            init = create(init)
        super().__init__(init=init.dumps() if init is not None else None,
                         num_hidden=num_hidden, num_layers=num_layers, mode=mode,
                         bidirectional=bidirectional, forget_bias=forget_bias)
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _init_weight(self, desc, arr):
        flat = np.empty(arr.size, dtype=np.float32)
        for name, off, shape in _fused_rnn_slices(arr.size, self._num_hidden,
                                                  self._num_layers, self._mode,
                                                  self._bidirectional):
            piece = zeros(shape, arr.context, arr.dtype)
            sub = InitDesc(name, global_init=getattr(desc, "global_init", None))
            if self._mode == "lstm" and name.endswith("_f_bias"):
                piece[:] = self._forget_bias
            elif self._init is None:
                desc.global_init(sub, piece)
            else:
                self._init(sub, piece)
            flat[off:off + piece.size] = piece.asnumpy().ravel()
        _fill(arr, flat.reshape(arr.shape))
