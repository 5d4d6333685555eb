"""LSTMPCell and VariationalDropoutCell for mx.gluon.contrib.rnn."""
from ...rnn.rnn_cell import (HybridRecurrentCell, ModifierCell, BidirectionalCell,
                             _TENSORS, _format_sequence, _get_begin_state,
                             _mask_sequence_variable_length, _mapping)

__all__ = ["LSTMPCell", "VariationalDropoutCell"]


class LSTMPCell(HybridRecurrentCell):
    r"""LSTM cell whose recurrent state is a projection of the hidden state
    (Sak et al. 2014): :math:`r_t = W_{hr} (o_t * \tanh(c_t))`; gates i, f, c, o as in
    LSTMCell, computed from the input and :math:`r_{t-1}`.

    States are ``[r, c]`` of shapes (batch, projection_size) and (batch, hidden_size);
    the output is r. Weights: i2h (4*hidden, input), h2h (4*hidden, projection),
    h2r (projection, hidden) without bias.
    """

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, h2r_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 input_size=0, prefix=None, params=None):
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
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,),
                                        init=i2h_bias_initializer, allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,),
                                        init=h2h_bias_initializer, allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "lstmp"

    def __repr__(self):
        return (f"{self.__class__.__name__}({_mapping(self.i2h_weight, self._hidden_size)}"
                f" -> {self._projection_size})")

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight,
                       i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        rows = 4 * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias,
                               num_hidden=rows, name=prefix + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias,
                               num_hidden=rows, name=prefix + "h2h")
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + "slice")
        in_gate = F.Activation(gates[0], act_type="sigmoid", name=prefix + "i")
        forget_gate = F.Activation(gates[1], act_type="sigmoid", name=prefix + "f")
        in_transform = F.Activation(gates[2], act_type="tanh", name=prefix + "c")
        out_gate = F.Activation(gates[3], act_type="sigmoid", name=prefix + "o")
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1]),
                                F.elemwise_mul(in_gate, in_transform), name=prefix + "state")
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type="tanh"),
                                name=prefix + "hidden")
        next_r = F.FullyConnected(data=hidden, num_hidden=self._projection_size,
                                  weight=h2r_weight, no_bias=True, name=prefix + "out")
        return next_r, [next_r, next_c]


class VariationalDropoutCell(ModifierCell):
    """Variational dropout (Gal & Ghahramani 2016): the same dropout mask on the inputs,
    on the first state and on the outputs at every step of a sequence; new masks are
    drawn after ``reset()`` (each unroll)."""

    def __init__(self, base_cell, drop_inputs=0., drop_states=0., drop_outputs=0.):
        if isinstance(base_cell, BidirectionalCell):
            raise AssertionError("BidirectionalCell doesn't support variational state "
                                 "dropout. Please add VariationalDropoutCell to the cells "
                                 "underneath instead.")
        super().__init__(base_cell)
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def _alias(self):
        return "vardrop"

    def reset(self):
        super().reset()
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def _initialize_input_masks(self, F, inputs, states):
        if self.drop_states and self.drop_states_mask is None:
            self.drop_states_mask = F.Dropout(F.ones_like(states[0]), p=self.drop_states)
        if self.drop_inputs and self.drop_inputs_mask is None:
            self.drop_inputs_mask = F.Dropout(F.ones_like(inputs), p=self.drop_inputs)

    def _initialize_output_mask(self, F, output):
        if self.drop_outputs and self.drop_outputs_mask is None:
            self.drop_outputs_mask = F.Dropout(F.ones_like(output), p=self.drop_outputs)

    def hybrid_forward(self, F, inputs, states):
        self._initialize_input_masks(F, inputs, states)
        if self.drop_states:
            states = list(states)
            states[0] = states[0] * self.drop_states_mask
        if self.drop_inputs:
            inputs = inputs * self.drop_inputs_mask
        next_output, next_states = self.base_cell(inputs, states)
        self._initialize_output_mask(F, next_output)
        if self.drop_outputs:
            next_output = next_output * self.drop_outputs_mask
        return next_output, next_states

    def __repr__(self):
        return (f"{self.__class__.__name__}(p_out={self.drop_outputs}, "
                f"p_state={self.drop_states}, {self.base_cell!r})")

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        """Unroll with one mask per sequence: inputs and outputs are multiplied by a
        mask broadcast over the time axis (states: see hybrid_forward when stepping)."""
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs,
                                  valid_length=valid_length)
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        if self.drop_inputs:
            first = inputs.slice_axis(axis=axis, begin=0, end=1).squeeze(axis=axis)
            self._initialize_input_masks(F, first, states)
            inputs = F.broadcast_mul(inputs, self.drop_inputs_mask.expand_dims(axis=axis))
        self.base_cell._modified = False
        outputs, states = self.base_cell.unroll(length, inputs, states, layout,
                                                merge_outputs=True,
                                                valid_length=valid_length)
        self.base_cell._modified = True
        if self.drop_outputs:
            first = outputs.slice_axis(axis=axis, begin=0, end=1).squeeze(axis=axis)
            self._initialize_output_mask(F, first)
            outputs = F.broadcast_mul(outputs, self.drop_outputs_mask.expand_dims(axis=axis))
        merge_outputs = isinstance(outputs, _TENSORS) if merge_outputs is None \
            else merge_outputs
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     merge_outputs)
        return outputs, states
