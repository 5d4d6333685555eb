"""Fused recurrent layers (RNN, LSTM, GRU) running on the ``RNN`` operator.

Each layer keeps MXNet's per-gate-matrix parameters (``l0_i2h_weight``,
``r0_h2h_bias``, ...: ``l``/``r`` for the forward/backward direction, then the layer
index) and concatenates them on every call into the operator's flat parameter vector:
all weights (layer by layer, forward then backward direction, i2h then h2h), then all
biases in the same order.
"""
import re

from ... import ndarray, symbol
from ..block import HybridBlock
from . import rnn_cell

__all__ = ["RNN", "LSTM", "GRU"]

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}
# a layer parameter's name: direction (l/r), layer index, matrix and kind
_PARAM_KEY = re.compile(r"(l|r)(\d+)_((?:i2h|h2h|h2r)_(?:weight|bias))\Z")


class _RNNLayer(HybridBlock):
    """Implementation of the recurrent layers (see RNN, LSTM, GRU)."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional,
                 input_size, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, mode, projection_size,
                 h2r_weight_initializer, lstm_state_clip_min, lstm_state_clip_max,
                 lstm_state_clip_nan, dtype, use_sequence_length=False, **kwargs):
        super().__init__(**kwargs)
        assert layout in ("TNC", "NTC"), \
            f"Invalid layout {layout}; must be one of ['TNC' or 'NTC']"
        self._hidden_size = hidden_size
        self._projection_size = projection_size if projection_size else None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self._gates = _GATES[mode]
        self.skip_states = None
        self._inits = {"i2h_weight": i2h_weight_initializer,
                       "h2h_weight": h2h_weight_initializer,
                       "i2h_bias": i2h_bias_initializer, "h2h_bias": h2h_bias_initializer}

        ng, nh = self._gates, hidden_size
        step = self._projection_size or nh
        ni = input_size
        for layer in range(num_layers):
            for d in ["l", "r"][:self._dir]:
                self._register_param(f"{d}{layer}_i2h_weight", (ng * nh, ni),
                                     i2h_weight_initializer, dtype)
                self._register_param(f"{d}{layer}_h2h_weight", (ng * nh, step),
                                     h2h_weight_initializer, dtype)
                self._register_param(f"{d}{layer}_i2h_bias", (ng * nh,),
                                     i2h_bias_initializer, dtype)
                self._register_param(f"{d}{layer}_h2h_bias", (ng * nh,),
                                     h2h_bias_initializer, dtype)
                if self._projection_size:
                    self._register_param(f"{d}{layer}_h2r_weight", (step, nh),
                                         h2r_weight_initializer, dtype)
            ni = step * self._dir

    def _unfuse(self):
        """The same network as a stack of recurrent cells sharing this layer's
        parameters (same names), for checking the fused kernel step by step."""
        if self._projection_size:
            raise NotImplementedError("_unfuse does not support projection layer yet!")
        if self._lstm_state_clip_min is not None or self._lstm_state_clip_max is not None:
            raise NotImplementedError("_unfuse does not support state clipping yet!")
        make = {"rnn_relu": lambda **kw: rnn_cell.RNNCell(self._hidden_size,
                                                          activation="relu", **kw),
                "rnn_tanh": lambda **kw: rnn_cell.RNNCell(self._hidden_size,
                                                          activation="tanh", **kw),
                "lstm": lambda **kw: rnn_cell.LSTMCell(self._hidden_size, **kw),
                "gru": lambda **kw: rnn_cell.GRUCell(self._hidden_size, **kw)}[self._mode]
        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for i in range(self._num_layers):
                kw = {"input_size": ni,
                      "i2h_weight_initializer": self._inits["i2h_weight"],
                      "h2h_weight_initializer": self._inits["h2h_weight"],
                      "i2h_bias_initializer": self._inits["i2h_bias"],
                      "h2h_bias_initializer": self._inits["h2h_bias"]}
                if self._dir == 2:
                    stack.add(rnn_cell.BidirectionalCell(make(prefix=f"l{i}_", **kw),
                                                         make(prefix=f"r{i}_", **kw)))
                else:
                    stack.add(make(prefix=f"l{i}_", **kw))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def _register_param(self, name, shape, init, dtype):
        p = self.params.get(name, shape=shape, init=init, allow_deferred_init=True,
                            dtype=dtype)
        setattr(self, name, p)
        return p

    def _collect_params_with_prefix(self, prefix=""):
        """The keys ``save_parameters``/``load_parameters`` use. As in MXNet 1.x they
        are those of the unfused cell stack, which older MXNet saved: ``l0_i2h_weight``
        is ``_unfused.0.i2h_weight``, and with two directions ``r1_h2h_bias`` is
        ``_unfused.1.r_cell.h2h_bias``; so ``.params`` files move between the two."""
        if prefix:
            prefix += "."
        two_way = self._dir == 2
        ret = {}
        for key, param in self._reg_params.items():
            match = _PARAM_KEY.match(key)
            if match is None:       # a parameter a subclass added: its own name
                ret[prefix + key] = param
                continue
            direction, layer, kind = match.groups()
            cell = f"{direction}_cell." if two_way else ""
            ret[f"{prefix}_unfused.{layer}.{cell}{kind}"] = param
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def __repr__(self):
        s = "{name}({mapping}, {_layout}"
        if self._num_layers != 1:
            s += ", num_layers={_num_layers}"
        if self._dropout != 0:
            s += ", dropout={_dropout}"
        if self._dir == 2:
            s += ", bidirectional"
        s += ")"
        shape = self.l0_i2h_weight.shape
        mapping = f"{shape[1] if shape[1] else None} -> {shape[0] // self._gates}"
        return s.format(name=self.__class__.__name__, mapping=mapping, **self.__dict__)

    def state_info(self, batch_size=0):
        """One state, h; LSTM adds the cell state c."""
        return [self._state_info(batch_size, self._hidden_size)]

    def _state_info(self, batch_size, size):
        return {"shape": (self._num_layers * self._dir, batch_size, size),
                "__layout__": "LNC", "dtype": self._dtype}

    def cast(self, dtype):
        super().cast(dtype)
        self._dtype = dtype

    def infer_shape(self, inputs, *args):
        """Fills in the layer-0 input size from ``inputs`` (channels last in both
        layouts); deeper layers' sizes are known from the hidden size."""
        assert inputs.ndim == 3, \
            "Input data should be rank-3 tensor of dim [sequence length, batch size, " \
            "input size]"
        step = self._projection_size or self._hidden_size
        ni = inputs.shape[2]
        for layer in range(self._num_layers):
            for d in ["l", "r"][:self._dir]:
                getattr(self, f"{d}{layer}_i2h_weight").shape = \
                    (self._gates * self._hidden_size, ni)
            ni = step * self._dir

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """Initial recurrent states: one array per ``state_info`` entry, made by
        ``func(shape=..., **kwargs)`` (zeros by default).

        Parameters
        ----------
        batch_size : int
            Only required for NDArray API. Size of the batch ('N' in layout).
        func : callable, default ``ndarray.zeros``
            Function creating each state (``symbol.zeros`` for symbols,
            ``ndarray.random.uniform``...).
        **kwargs :
            More keyword arguments for ``func`` (``ctx``, ``dtype``...).
        """
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            if info is not None:
                info.update(kwargs)
            else:
                info = kwargs
            states.append(func(name=f"{self.prefix}h0_{i}", **info))
        return states

    def __call__(self, inputs, states=None, sequence_length=None, **kwargs):
        self.skip_states = states is None
        if states is None:
            if isinstance(inputs, ndarray.NDArray):
                batch_size = inputs.shape[self._layout.find("N")]
                states = self.begin_state(batch_size, ctx=inputs.context,
                                          dtype=inputs.dtype)
            else:
                states = self.begin_state(0, func=symbol.zeros)
        if not isinstance(states, (list, tuple)):
            states = [states]
        if self._use_sequence_length:
            return super().__call__(inputs, states, sequence_length, **kwargs)
        return super().__call__(inputs, states, **kwargs)

    def hybrid_forward(self, F, inputs, states, sequence_length=None, **kwargs):
        if F is ndarray:
            batch_size = inputs.shape[self._layout.find("N")]
            for state, info in zip(states, self.state_info(batch_size)):
                if state.shape != info["shape"]:
                    raise ValueError(f"Invalid recurrent state shape. Expecting "
                                     f"{info['shape']}, got {state.shape}.")
        out = self._forward_kernel(F, inputs, states, sequence_length, **kwargs)
        return out[0] if self.skip_states else out

    def _flat_params(self, F, kwargs):
        gates = ["i2h", "h2h"]
        names = []
        for kind in ("weight", "bias"):
            for layer in range(self._num_layers):
                for d in ["l", "r"][:self._dir]:
                    extra = ["h2r"] if kind == "weight" and self._projection_size else []
                    names += [f"{d}{layer}_{g}_{kind}" for g in gates + extra]
        # _rnn_param_concat: the RNN's parameter length flows back to weights whose
        # input size is not known yet (deferred initialisation of a hybridized layer)
        return F._internal._rnn_param_concat(
            *[F.reshape(kwargs[n], shape=(-1,)) for n in names], dim=0, num_args=len(names))

    def _forward_kernel(self, F, inputs, states, sequence_length, **kwargs):
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, dim1=0, dim2=1)
        args = list(states)
        if self._use_sequence_length:
            args.append(sequence_length)
        rnn = F.RNN(inputs, self._flat_params(F, kwargs), *args,
                    use_sequence_length=self._use_sequence_length,
                    state_size=self._hidden_size, projection_size=self._projection_size,
                    num_layers=self._num_layers, bidirectional=self._dir == 2,
                    p=self._dropout, state_outputs=True, mode=self._mode,
                    lstm_state_clip_min=self._lstm_state_clip_min,
                    lstm_state_clip_max=self._lstm_state_clip_max,
                    lstm_state_clip_nan=self._lstm_state_clip_nan)
        if self._mode == "lstm":
            outputs, states = rnn[0], [rnn[1], rnn[2]]
        else:
            outputs, states = rnn[0], [rnn[1]]
        if self._layout == "NTC":
            outputs = F.swapaxes(outputs, dim1=0, dim2=1)
        return outputs, states


class RNN(_RNNLayer):
    r"""Applies a multi-layer Elman RNN with `tanh` or `ReLU` non-linearity to an input
    sequence: :math:`h_t = act(W_{ih} x_t + b_{ih} + W_{hh} h_{t-1} + b_{hh})`.

    Parameters
    ----------
    hidden_size : int
        The number of features in the hidden state h.
    num_layers : int, default 1
        Number of recurrent layers.
    activation : {'relu' or 'tanh'}, default 'relu'
        The activation function to use.
    layout : str, default 'TNC'
        The format of input and output tensors. T, N and C stand for sequence length,
        batch size, and feature dimensions respectively.
    dropout : float, default 0
        If non-zero, introduces a dropout layer on the outputs of each RNN layer except
        the last layer.
    bidirectional : bool, default False
        If `True`, becomes a bidirectional RNN.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer
        Initializers for the input and recurrent weight matrices.
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
        Initializers for the biases.
    input_size : int, default 0
        The number of expected features in the input x. If not specified, it will be
        inferred from input.
    dtype : str, default 'float32'
        Type to initialize the parameters and default states to.
    prefix : str or None
        Prefix of this `Block`.
    params : ParameterDict or None
        Shared Parameters for this `Block`.

    Inputs: ``data`` (T, N, C) or (N, T, C); optional ``states``, a list of one array
    (num_layers * directions, N, hidden_size). Outputs: ``out`` (T, N, directions *
    hidden_size) in the input's layout, and the final states when states were given.
    """

    def __init__(self, hidden_size, num_layers=1, activation="relu", layout="TNC",
                 dropout=0, bidirectional=False, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional,
                         input_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, "rnn_" + activation,
                         None, None, None, None, False, dtype, **kwargs)


class LSTM(_RNNLayer):
    r"""Applies a multi-layer long short-term memory (LSTM) RNN to an input sequence
    (gates i, f, g, o; :math:`c_t = f_t * c_{t-1} + i_t * g_t`,
    :math:`h_t = o_t * \tanh(c_t)`).

    Parameters
    ----------
    hidden_size : int
        The number of features in the hidden state h.
    num_layers : int, default 1
        Number of recurrent layers.
    layout : str, default 'TNC'
        The format of input and output tensors.
    dropout : float, default 0
        Dropout on the outputs of each layer except the last.
    bidirectional : bool, default False
        If `True`, becomes a bidirectional RNN.
    input_size : int, default 0
        The number of expected features in the input x (0: inferred from the input).
    i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
    h2h_bias_initializer : str or Initializer
        Initializers of the parameters (biases default to 'zeros').
    projection_size : int, default None
        The number of features after projection (not supported by pymxnet's RNN
        operator, as by MXNet's CPU kernels).
    h2r_weight_initializer : str or Initializer, default None
        Initializer for the projection weights.
    state_clip_min, state_clip_max : float or None, default None
        Bounds of the LSTM cell state (no clipping when None).
    state_clip_nan : bool, default False
        Whether NaN cell states are clipped too.
    dtype : str, default 'float32'
        Type to initialize the parameters and default states to.

    Inputs: ``data`` and optional ``states`` [h (L*D, N, hidden_size), c (L*D, N,
    hidden_size)]. Outputs: ``out`` and, when states were given, the final states.
    """

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0,
                 bidirectional=False, input_size=0, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", projection_size=None,
                 h2r_weight_initializer=None, state_clip_min=None, state_clip_max=None,
                 state_clip_nan=False, dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional,
                         input_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, "lstm",
                         projection_size, h2r_weight_initializer, state_clip_min,
                         state_clip_max, state_clip_nan, dtype, **kwargs)

    def state_info(self, batch_size=0):
        return [self._state_info(batch_size, self._projection_size or self._hidden_size),
                self._state_info(batch_size, self._hidden_size)]


class GRU(_RNNLayer):
    r"""Applies a multi-layer gated recurrent unit (GRU) RNN to an input sequence
    (gates r, z, n with :math:`n_t = \tanh(W_{in} x_t + b_{in} + r_t * (W_{hn}
    h_{t-1} + b_{hn}))` and :math:`h_t = (1 - z_t) * n_t + z_t * h_{t-1}`).

    Parameters
    ----------
    hidden_size : int
        The number of features in the hidden state h.
    num_layers : int, default 1
        Number of recurrent layers.
    layout : str, default 'TNC'
        The format of input and output tensors.
    dropout : float, default 0
        Dropout on the outputs of each layer except the last.
    bidirectional : bool, default False
        If True, becomes a bidirectional RNN.
    input_size : int, default 0
        The number of expected features in the input x (0: inferred).
    i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
    h2h_bias_initializer : str or Initializer
        Initializers of the parameters (biases default to 'zeros').
    dtype : str, default 'float32'
        Type to initialize the parameters and default states to.

    Inputs: ``data`` and optional ``states`` [h (L*D, N, hidden_size)]. Outputs:
    ``out`` and, when states were given, the final states.
    """

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0,
                 bidirectional=False, input_size=0, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional,
                         input_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, "gru", None, None,
                         None, None, False, dtype, **kwargs)
