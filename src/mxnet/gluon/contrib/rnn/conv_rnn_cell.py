"""Convolutional recurrent cells: Conv{1,2,3}D{RNN,LSTM,GRU}Cell. The gates are
convolutions over feature maps instead of dense products; gate order along the weight
rows as in gluon.rnn (LSTM i, f, c, o; GRU r, z, n). Channel-first layouts only (NCW,
NCHW, NCDHW)."""
from ...rnn.rnn_cell import HybridRecurrentCell

__all__ = ["Conv1DRNNCell", "Conv2DRNNCell", "Conv3DRNNCell",
           "Conv1DLSTMCell", "Conv2DLSTMCell", "Conv3DLSTMCell",
           "Conv1DGRUCell", "Conv2DGRUCell", "Conv3DGRUCell"]

_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _tuple(v, dims, name):
    t = (v,) * dims if isinstance(v, int) else tuple(v)
    if len(t) != dims:
        raise ValueError(f"{name} must be an int or {dims} ints, got {v!r}")
    return t


class _BaseConvRNNCell(HybridRecurrentCell):
    """Shared set-up of the convolutional cells: i2h/h2h convolution weights with
    ``gates * hidden_channels`` filters; states of shape (batch, hidden_channels,
    *spatial), spatial being the i2h convolution's output size. The h2h convolution
    keeps the spatial size (its padding is dilate * (kernel - 1) / 2, so its kernel
    must be odd)."""
    _num_gates = 1
    _num_states = 1

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad,
                 i2h_dilate, h2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, dims, conv_layout, activation,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        if conv_layout != _LAYOUTS[dims]:
            raise NotImplementedError(f"{type(self).__name__}: conv_layout {conv_layout!r} "
                                      f"is not implemented in pymxnet (use "
                                      f"{_LAYOUTS[dims]!r})")
        self._hidden_channels = hidden_channels
        self._input_shape = tuple(input_shape)
        self._conv_layout = conv_layout
        self._activation = activation
        self._dims = dims
        self._i2h_kernel = _tuple(i2h_kernel, dims, "i2h_kernel")
        self._h2h_kernel = _tuple(h2h_kernel, dims, "h2h_kernel")
        self._i2h_pad = _tuple(i2h_pad, dims, "i2h_pad")
        self._i2h_dilate = _tuple(i2h_dilate, dims, "i2h_dilate")
        self._h2h_dilate = _tuple(h2h_dilate, dims, "h2h_dilate")
        if any(k % 2 == 0 for k in self._h2h_kernel):
            raise ValueError(f"{type(self).__name__}: h2h_kernel must be odd, got "
                             f"{self._h2h_kernel}")
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(self._h2h_dilate,
                                                              self._h2h_kernel))
        in_c = self._input_shape[0]
        self._state_spatial = tuple(
            s + 2 * p - d * (k - 1) for s, p, d, k in
            zip(self._input_shape[1:], self._i2h_pad, self._i2h_dilate, self._i2h_kernel))
        if len(self._input_shape) != dims + 1 or any(s <= 0 for s in self._state_spatial):
            raise ValueError(f"{type(self).__name__}: input_shape {self._input_shape} does "
                             f"not fit i2h_kernel {self._i2h_kernel} with pad {self._i2h_pad}")
        rows = self._num_gates * hidden_channels
        self.i2h_weight = self.params.get("i2h_weight", shape=(rows, in_c) + self._i2h_kernel,
                                          init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight",
                                          shape=(rows, hidden_channels) + self._h2h_kernel,
                                          init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        shape = (batch_size, self._hidden_channels) + self._state_spatial
        return [{"shape": shape, "__layout__": self._conv_layout}
                for _ in range(self._num_states)]

    def __repr__(self):
        return (f"{type(self).__name__}({self._input_shape} -> {self._hidden_channels}, "
                f"i2h_kernel={self._i2h_kernel}, h2h_kernel={self._h2h_kernel})")

    def _convs(self, F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        rows = self._num_gates * self._hidden_channels
        i2h = F.Convolution(data=inputs, weight=i2h_weight, bias=i2h_bias,
                            kernel=self._i2h_kernel, pad=self._i2h_pad,
                            dilate=self._i2h_dilate, num_filter=rows, name=prefix + "i2h")
        h2h = F.Convolution(data=h, weight=h2h_weight, bias=h2h_bias,
                            kernel=self._h2h_kernel, pad=self._h2h_pad,
                            dilate=self._h2h_dilate, num_filter=rows, name=prefix + "h2h")
        return prefix, i2h, h2h


class _ConvRNNCell(_BaseConvRNNCell):
    def _alias(self):
        return "conv_rnn"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                       h2h_bias):
        prefix, i2h, h2h = self._convs(F, inputs, states[0], i2h_weight, h2h_weight,
                                       i2h_bias, h2h_bias)
        out = self._get_activation(F, i2h + h2h, self._activation, name=prefix + "out")
        return out, [out]


class _ConvLSTMCell(_BaseConvRNNCell):
    _num_gates = 4
    _num_states = 2

    def _alias(self):
        return "conv_lstm"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                       h2h_bias):
        prefix, i2h, h2h = self._convs(F, inputs, states[0], i2h_weight, h2h_weight,
                                       i2h_bias, h2h_bias)
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, axis=1, name=prefix + "slice")
        in_gate = F.sigmoid(gates[0])
        forget_gate = F.sigmoid(gates[1])
        in_transform = self._get_activation(F, gates[2], self._activation)
        out_gate = F.sigmoid(gates[3])
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform,
                                name=prefix + "state")
        next_h = F.elemwise_mul(out_gate, self._get_activation(F, next_c, self._activation),
                                name=prefix + "out")
        return next_h, [next_h, next_c]


class _ConvGRUCell(_BaseConvRNNCell):
    _num_gates = 3

    def _alias(self):
        return "conv_gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                       h2h_bias):
        prefix, i2h, h2h = self._convs(F, inputs, states[0], i2h_weight, h2h_weight,
                                       i2h_bias, h2h_bias)
        i_r, i_z, i_n = F.SliceChannel(i2h, num_outputs=3, axis=1, name=prefix + "i2h_slice")
        h_r, h_z, h_n = F.SliceChannel(h2h, num_outputs=3, axis=1, name=prefix + "h2h_slice")
        reset = F.sigmoid(i_r + h_r)
        update = F.sigmoid(i_z + h_z)
        new = self._get_activation(F, i_n + reset * h_n, self._activation)
        next_h = F.elemwise_add((1 - update) * new, update * states[0], name=prefix + "out")
        return next_h, [next_h]


def _conv_cell(base, dims, doc):
    zero, one = (0,) * dims, (1,) * dims

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel,
                 i2h_pad=zero, i2h_dilate=one, h2h_dilate=one,
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 conv_layout=_LAYOUTS[dims], activation="tanh", prefix=None, params=None):
        base.__init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad,
                      i2h_dilate, h2h_dilate, i2h_weight_initializer,
                      h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                      dims, conv_layout, activation, prefix, params)
    name = f"Conv{dims}D{base.__name__[5:-4]}Cell"
    return type(name, (base,), {"__init__": __init__, "__doc__": doc,
                                "__module__": __name__})


for _d in (1, 2, 3):
    _lay = _LAYOUTS[_d]
    globals()[f"Conv{_d}DRNNCell"] = _conv_cell(
        _ConvRNNCell, _d, f"{_d}-D convolutional RNN cell: h' = act(conv(x) + conv(h)) on "
                          f"{_lay} feature maps.")
    globals()[f"Conv{_d}DLSTMCell"] = _conv_cell(
        _ConvLSTMCell, _d, f"{_d}-D convolutional LSTM cell (Shi et al. 2015) on {_lay} "
                           "feature maps; states [h, c].")
    globals()[f"Conv{_d}DGRUCell"] = _conv_cell(
        _ConvGRUCell, _d, f"{_d}-D convolutional GRU cell on {_lay} feature maps.")


del _d, _lay
