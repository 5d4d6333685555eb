"""LSTMPCell (an LSTM whose recurrent state is a projection of its hidden state),
VariationalDropoutCell (one dropout mask per sequence) and dynamic_unroll."""
from ...rnn.rnn_cell import HybridRecurrentCell, ModifierCell, _mapping
from .... import ndarray, symbol

__all__ = ["LSTMPCell", "VariationalDropoutCell", "dynamic_unroll"]


class LSTMPCell(HybridRecurrentCell):
    """LSTM with a projected recurrent state (Sak et al. 2014): the cell keeps c
    (batch, hidden_size) and r = h2r_weight . (o * tanh(c)), (batch, projection_size);
    r is both the output and the state fed back. States [r, c]."""

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, h2r_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._projection_size = projection_size
        rows = 4 * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(rows, input_size),
                                          init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(rows, projection_size),
                                          init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2r_weight = self.params.get("h2r_weight", shape=(projection_size, hidden_size),
                                          init=h2r_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "lstmp"

    def __repr__(self):
        return (f"{type(self).__name__}({_mapping(self.i2h_weight, self._hidden_size)}, "
                f"projection {self._projection_size})")

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight,
                       i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        rows = 4 * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias,
                               num_hidden=rows, name=prefix + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias,
                               num_hidden=rows, name=prefix + "h2h")
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + "slice")
        in_gate, forget_gate = F.sigmoid(gates[0]), F.sigmoid(gates[1])
        in_transform, out_gate = F.tanh(gates[2]), F.sigmoid(gates[3])
        next_c = forget_gate * states[1] + in_gate * in_transform
        hidden = out_gate * F.tanh(next_c)
        next_r = F.FullyConnected(data=hidden, weight=h2r_weight, no_bias=True,
                                  num_hidden=self._projection_size, name=prefix + "out")
        return next_r, [next_r, next_c]


class VariationalDropoutCell(ModifierCell):
    """Variational dropout (Gal & Ghahramani 2016) around ``base_cell``: one dropout
    mask per sequence (drawn at the first step after ``reset()``, which ``unroll``
    calls) for the inputs, the first state and the outputs. Masks apply in training
    only, as Dropout does."""

    def __init__(self, base_cell, drop_inputs=0.0, drop_states=0.0, drop_outputs=0.0):
        if drop_states and type(base_cell).__name__ == "BidirectionalCell":
            raise ValueError("VariationalDropoutCell: drop_states does not apply to a "
                             "BidirectionalCell; wrap the cells underneath instead")
        super().__init__(base_cell)
        self.drop_inputs, self.drop_states, self.drop_outputs = \
            drop_inputs, drop_states, drop_outputs
        self._masks = {}

    def _alias(self):
        return "vardrop"

    def reset(self):
        super().reset()
        self._masks = {}

    def _mask(self, F, key, p, like):
        if key not in self._masks:
            self._masks[key] = F.Dropout(F.ones_like(like), p=p)
        return self._masks[key]

    def hybrid_forward(self, F, inputs, states):
        if self.drop_inputs:
            inputs = inputs * self._mask(F, "inputs", self.drop_inputs, inputs)
        if self.drop_states:
            states = list(states)
            states[0] = states[0] * self._mask(F, "states", self.drop_states, states[0])
        output, states = self.base_cell(inputs, states)
        if self.drop_outputs:
            output = output * self._mask(F, "outputs", self.drop_outputs, output)
        return output, states

    def __repr__(self):
        return (f"{type(self).__name__}(p_in={self.drop_inputs}, p_state="
                f"{self.drop_states}, p_out={self.drop_outputs}, {self.base_cell!r})")


def dynamic_unroll(cell, inputs, begin_state, drop_inputs=0, drop_outputs=0, layout="TNC",
                   valid_length=None):
    """Run ``cell`` over every step of ``inputs`` (one tensor, time on ``layout``'s T
    axis). Returns (outputs in ``layout``, final states). With ``valid_length`` (one
    length per batch element) outputs past a sequence's end are zero and its states
    are those of its last valid step. ``drop_inputs`` / ``drop_outputs`` apply one
    dropout mask per sequence. NDArray inputs are unrolled step by step; Symbol inputs
    (hybridized blocks) need ``F.contrib.foreach``."""
    F = ndarray if isinstance(inputs, ndarray.NDArray) else symbol
    axis = layout.find("T")
    if axis < 0:
        raise ValueError(f"dynamic_unroll: layout {layout!r} has no time axis 'T'")
    if axis != 0:
        axes = list(range(len(layout)))
        axes[0], axes[axis] = axes[axis], axes[0]
        inputs = F.transpose(inputs, axes=axes)
    if drop_inputs:
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(0,))
    states = list(begin_state)

    def step(x, carried):
        t, states = carried[0], carried[1:]
        out, new = cell(x, states)
        if valid_length is not None:
            live = F.broadcast_lesser(t, valid_length)     # (batch,): step still valid
            new = [_blend(F, live, n, s) for n, s in zip(new, states)]
            out = _blend(F, live, out, F.zeros_like(out))
        return out, [t + 1] + list(new)

    start = [F.zeros((1,))] if F is symbol else [ndarray.zeros((1,), ctx=inputs.context)]
    if F is ndarray:
        carried = start + states
        outs = []
        for x in inputs:
            o, carried = step(x, carried)
            outs.append(o)
        outputs = ndarray.stack(*outs, axis=0)
    else:
        foreach = getattr(getattr(F, "contrib", None), "foreach", None)
        if foreach is None:
            raise NotImplementedError("dynamic_unroll on symbols needs mx.sym.contrib.foreach, "
                                      "which this build does not have")
        outputs, carried = foreach(step, inputs, start + states)
    states = list(carried[1:])
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(0,))
    if axis != 0:
        outputs = F.transpose(outputs, axes=axes)
    return outputs, states


def _blend(F, live, new, old):
    """new where ``live`` (one flag per batch row), else old."""
    flat_new, flat_old = F.reshape(new, shape=(0, -1)), F.reshape(old, shape=(0, -1))
    mask = F.broadcast_like(F.reshape(live, shape=(-1, 1)), flat_new)
    return F.reshape_like(mask * flat_new + (1 - mask) * flat_old, new)
