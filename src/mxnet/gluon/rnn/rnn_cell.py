"""Recurrent cells: one time step per call, ``unroll`` for whole sequences.

A cell maps ``(inputs, states) -> (output, new_states)``; ``state_info`` describes the
states and ``begin_state`` makes initial ones. Modifier cells (Dropout, Zoneout,
Residual) wrap a base cell; Sequential and Bidirectional cells combine several.
Everything is written once against ``F`` (``mx.nd`` or ``mx.sym``), so cells work
imperatively, inside hybridized blocks, and on Symbol inputs.
"""
from ... import ndarray, symbol
from ..block import Block, HybridBlock
from ..nn import LeakyReLU

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell",
           "SequentialRNNCell", "HybridSequentialRNNCell", "DropoutCell",
           "ModifierCell", "ZoneoutCell", "ResidualCell", "BidirectionalCell"]

_TENSORS = (symbol.Symbol, ndarray.NDArray)


def _cells_state_info(cells, batch_size):
    return sum([c.state_info(batch_size) for c in cells], [])


def _cells_begin_state(cells, **kwargs):
    return sum([c.begin_state(**kwargs) for c in cells], [])


def _as_list(obj):
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def _get_begin_state(cell, F, begin_state, inputs, batch_size):
    if begin_state is not None:
        return begin_state
    if F is ndarray:
        first = inputs if isinstance(inputs, _TENSORS) else inputs[0]
        return cell.begin_state(func=F.zeros, batch_size=batch_size, ctx=first.context,
                                dtype=first.dtype)
    return cell.begin_state(func=F.zeros, batch_size=batch_size)


def _format_sequence(length, inputs, layout, merge, in_layout=None):
    """Normalises a sequence to a list of steps (``merge=False``), one tensor with time
    on ``layout``'s T axis (``merge=True``) or whatever it is (``None``). Returns
    (inputs, time axis, F, batch size (0 for symbols))."""
    assert inputs is not None, \
        "unroll(inputs=None) has been deprecated. Please create input variables " \
        "outside unroll."
    axis = layout.find("T")
    batch_axis = layout.find("N")
    batch_size = 0
    in_axis = in_layout.find("T") if in_layout is not None else axis
    if isinstance(inputs, symbol.Symbol):
        F = symbol
        if merge is False:
            assert len(inputs.list_outputs()) == 1, \
                "unroll doesn't allow grouped symbol as input. Please convert to list " \
                "with list(inputs) first or let unroll handle splitting."
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length,
                                       squeeze_axis=1))
    elif isinstance(inputs, ndarray.NDArray):
        F = ndarray
        batch_size = inputs.shape[batch_axis]
        if merge is False:
            assert length is None or length == inputs.shape[in_axis], \
                f"unroll: length {length} does not match the input's time axis " \
                f"({inputs.shape[in_axis]} steps in shape {inputs.shape})"
            inputs = _as_list(ndarray.split(inputs, axis=in_axis,
                                            num_outputs=inputs.shape[in_axis],
                                            squeeze_axis=1))
    else:
        assert length is None or len(inputs) == length, \
            f"unroll: length {length} does not match the {len(inputs)} input steps"
        F = symbol if isinstance(inputs[0], symbol.Symbol) else ndarray
        if F is ndarray:
            batch_size = inputs[0].shape[0]   # each step is (batch, features)
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if isinstance(inputs, _TENSORS) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def _mask_sequence_variable_length(F, data, length, valid_length, time_axis, merge):
    assert valid_length is not None
    if not isinstance(data, _TENSORS):
        data = F.stack(*data, axis=time_axis)
    outputs = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True,
                             axis=time_axis)
    if not merge:
        outputs = _as_list(F.split(outputs, num_outputs=length, axis=time_axis,
                                   squeeze_axis=True))
    return outputs


def _reverse_sequences(sequences, unroll_step, valid_length=None):
    """Reverses a list of steps in time; with ``valid_length`` each sequence reverses
    only its valid part (padding stays at the end)."""
    F = symbol if isinstance(sequences[0], symbol.Symbol) else ndarray
    if valid_length is None:
        return list(reversed(sequences))
    rev = F.SequenceReverse(F.stack(*sequences, axis=0), sequence_length=valid_length,
                            use_sequence_length=True)
    parts = F.split(rev, axis=0, num_outputs=unroll_step, squeeze_axis=True)
    if isinstance(parts, symbol.Symbol):
        return list(parts)          # one Symbol per output
    return _as_list(parts)


class RecurrentCell(Block):
    """Abstract base class for RNN cells.

    Parameters
    ----------
    prefix : str, optional
        Prefix for names of `Block`s (this prefix is also used for names of weights
        if `params` is `None` i.e. if `params` are being created and not reused)
    params : Parameter or None, default None
        Container for weight sharing between cells.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Reset before re-using the cell for another graph."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size=0):
        """shape and layout information of states"""
        raise NotImplementedError()

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """Initial state for this cell.

        Parameters
        ----------
        batch_size : int
            Only required for NDArray API. Size of the batch ('N' in layout).
        func : callable, default ``ndarray.zeros``
            Function for creating initial state (``symbol.zeros``,
            ``ndarray.random.uniform``, ...).
        **kwargs :
            Additional keyword arguments passed to func (``ctx``, ``dtype``...).

        Returns
        -------
        states : list of NDArrays or Symbols
        """
        assert not self._modified, \
            "After applying modifier cells (e.g. ZoneoutCell) the base cell cannot be " \
            "called directly. Call the modifier cell instead."
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            if info is not None:
                info.update(kwargs)
            else:
                info = kwargs
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}",
                               **info))
        return states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        """Unrolls an RNN cell across time steps.

        Parameters
        ----------
        length : int
            Number of steps to unroll.
        inputs : Symbol, list of Symbol, NDArray or list of NDArray
            One tensor with layout ``layout`` (e.g. (batch, length, ...) for 'NTC'), or
            a list of ``length`` tensors of shape (batch, ...).
        begin_state : nested list of Symbol, optional
            Input states created by `begin_state()` or output state of another cell.
            Created from `begin_state()` if `None`.
        layout : str, optional
            `layout` of input symbol. Only used if inputs is a single Symbol.
        merge_outputs : bool, optional
            If `False`, returns outputs as a list of Symbols. If `True`, concatenates
            output across time steps and returns a single symbol with shape (batch_size,
            length, ...) if layout is 'NTC', or (length, batch_size, ...) if layout is
            'TNC'. If `None`, output whatever is faster.
        valid_length : Symbol, NDArray or None
            `valid_length` specifies the length of the sequences in the batch without
            padding; outputs past it are zeros and the states are those of the last
            valid step.

        Returns
        -------
        outputs : list of Symbol or Symbol
        states : list of Symbol
        """
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)
        states = begin_state
        outputs = []
        all_states = []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [F.SequenceLast(F.stack(*ele_list, axis=0),
                                     sequence_length=valid_length,
                                     use_sequence_length=True, axis=0)
                      for ele_list in zip(*all_states)]
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length,
                                                     axis, True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, F, inputs, activation, **kwargs):
        """Get activation function. Convert if is string"""
        if isinstance(activation, str):
            if activation == "tanh":
                return F.tanh(inputs, **kwargs)
            if activation == "sigmoid":
                return F.sigmoid(inputs, **kwargs)
            if activation == "relu":
                return F.relu(inputs, **kwargs)
            if activation == "softsign":
                return F.softsign(inputs, **kwargs)
            return F.Activation(inputs, act_type=activation, **kwargs)
        if isinstance(activation, LeakyReLU):
            return F.LeakyReLU(inputs, act_type="leaky", slope=activation._alpha, **kwargs)
        return activation(inputs, **kwargs)

    def forward(self, inputs, states):
        """Unrolls the recurrent cell for one time step.

        Parameters
        ----------
        inputs : sym.Variable
            Input symbol, 2D, of shape (batch_size * num_units).
        states : list of sym.Variable
            RNN state from previous step or the output of begin_state().

        Returns
        -------
        output : Symbol
            Symbol corresponding to the output from the RNN when unrolling for a single
            time step.
        states : list of Symbol
            The new state of this RNN after this unrolling.
        """
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """HybridRecurrentCell supports hybridize."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


def _mapping(weight, out_size):
    shape = weight.shape
    return f"{shape[1] if shape[1] else None} -> {out_size}"


class _GatedCell(HybridRecurrentCell):
    """Shared set-up of RNNCell, LSTMCell and GRUCell: i2h/h2h weights and biases
    with ``gates * hidden_size`` rows, and ``states`` states of (batch, hidden_size)."""
    _num_gates = 1
    _num_states = 1

    def __init__(self, hidden_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        rows = self._num_gates * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(rows, input_size),
                                          init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(rows, hidden_size),
                                          init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,),
                                        init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,),
                                        init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}
                for _ in range(self._num_states)]

    def __repr__(self):
        return (f"{self.__class__.__name__}("
                f"{_mapping(self.i2h_weight, self.i2h_weight.shape[0])})")

    def _projections(self, F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        rows = self._num_gates * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias,
                               num_hidden=rows, name=prefix + "i2h")
        h2h = F.FullyConnected(data=h, weight=h2h_weight, bias=h2h_bias,
                               num_hidden=rows, name=prefix + "h2h")
        return prefix, i2h, h2h


class RNNCell(_GatedCell):
    r"""Elman RNN recurrent neural network cell:
    :math:`h_t = act(W_{ih} x_t + b_{ih} + W_{hh} h_{t-1} + b_{hh})`.

    Parameters
    ----------
    hidden_size : int
        Number of units in output symbol
    activation : str or Symbol, default 'tanh'
        Type of activation function.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer
        Initializers for the weight matrices.
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
        Initializers for the biases.
    input_size : int, default 0
        Input size (0: inferred from the first input).
    prefix : str, default ``'rnn_'``
        Prefix for name of `Block`s (and name of weight if params is `None`).
    params : Parameter or None
        Container for weight sharing between cells. Created if `None`.

    Inputs: ``data`` (batch_size, input_size); ``states`` [(batch_size,
    num_hidden)]. Outputs: ``out`` (batch_size, num_hidden) and the new states.
    """
    _num_gates = 1

    def __init__(self, hidden_size, activation="tanh", i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size,
                         prefix, params)
        self._activation = activation

    def _alias(self):
        return "rnn"

    def __repr__(self):
        return (f"{self.__class__.__name__}("
                f"{_mapping(self.i2h_weight, self.i2h_weight.shape[0])}, "
                f"{self._activation})")

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                       h2h_bias):
        prefix, i2h, h2h = self._projections(F, inputs, states[0], i2h_weight,
                                             h2h_weight, i2h_bias, h2h_bias)
        i2h_plus_h2h = F.elemwise_add(i2h, h2h, name=prefix + "plus0")
        output = self._get_activation(F, i2h_plus_h2h, self._activation,
                                      name=prefix + "out")
        return output, [output]


class LSTMCell(_GatedCell):
    r"""Long-Short Term Memory (LSTM) network cell (gates i, f, g, o in that order
    along the weight rows): :math:`c_t = f_t * c_{t-1} + i_t * g_t`,
    :math:`h_t = o_t * act(c_t)`.

    Parameters
    ----------
    hidden_size : int
        Number of units in output symbol.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer
        Initializers for the weight matrices.
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
        Initializers for the biases.
    input_size : int, default 0
        Input size (0: inferred from the first input).
    prefix : str, default ``'lstm_'``
        Prefix for name of `Block`s (and name of weight if params is `None`).
    params : Parameter or None, default None
        Container for weight sharing between cells. Created if `None`.
    activation : str, default 'tanh'
        Activation type for the cell candidate and output.
    recurrent_activation : str, default 'sigmoid'
        Activation type for the gates.

    Inputs: ``data`` (batch_size, input_size); ``states`` [h, c], each
    (batch_size, num_hidden). Outputs: ``out`` (batch_size, num_hidden) and [h, c].
    """
    _num_gates = 4
    _num_states = 2

    def __init__(self, hidden_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None,
                 activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size,
                         prefix, params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def _alias(self):
        return "lstm"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                       h2h_bias):
        prefix, i2h, h2h = self._projections(F, inputs, states[0], i2h_weight,
                                             h2h_weight, i2h_bias, h2h_bias)
        gates = F.elemwise_add(i2h, h2h, name=prefix + "plus0")
        sliced = F.SliceChannel(gates, num_outputs=4, name=prefix + "slice")
        act, rec = self._activation, self._recurrent_activation
        in_gate = self._get_activation(F, sliced[0], rec, name=prefix + "i")
        forget_gate = self._get_activation(F, sliced[1], rec, name=prefix + "f")
        in_transform = self._get_activation(F, sliced[2], act, name=prefix + "c")
        out_gate = self._get_activation(F, sliced[3], rec, name=prefix + "o")
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=prefix + "mul0"),
                                F.elemwise_mul(in_gate, in_transform, name=prefix + "mul1"),
                                name=prefix + "state")
        next_h = F.elemwise_mul(out_gate, self._get_activation(F, next_c, act,
                                                               name=prefix + "activation0"),
                                name=prefix + "out")
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    r"""Gated Rectified Unit (GRU) network cell (gates r, z, n along the weight rows):
    :math:`n_t = \tanh(W_{in} x_t + b_{in} + r_t * (W_{hn} h_{t-1} + b_{hn}))`,
    :math:`h_t = (1 - z_t) * n_t + z_t * h_{t-1}`.

    Parameters
    ----------
    hidden_size : int
        Number of units in output symbol.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer
        Initializers for the weight matrices.
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
        Initializers for the biases.
    input_size : int, default 0
        Input size (0: inferred from the first input).
    prefix : str, default ``'gru_'``
        prefix for name of `Block`s (and name of weight if params is `None`).
    params : Parameter or None, default None
        Container for weight sharing between cells. Created if `None`.

    Inputs: ``data`` (batch_size, input_size); ``states`` [(batch_size,
    num_hidden)]. Outputs: ``out`` (batch_size, num_hidden) and the new states.
    """
    _num_gates = 3

    def _alias(self):
        return "gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                       h2h_bias):
        prev_h = states[0]
        prefix, i2h, h2h = self._projections(F, inputs, prev_h, i2h_weight, h2h_weight,
                                             i2h_bias, h2h_bias)
        i2h_r, i2h_z, i2h = F.SliceChannel(i2h, num_outputs=3, name=prefix + "i2h_slice")
        h2h_r, h2h_z, h2h = F.SliceChannel(h2h, num_outputs=3, name=prefix + "h2h_slice")
        reset_gate = F.Activation(F.elemwise_add(i2h_r, h2h_r, name=prefix + "plus0"),
                                  act_type="sigmoid", name=prefix + "r_act")
        update_gate = F.Activation(F.elemwise_add(i2h_z, h2h_z, name=prefix + "plus1"),
                                   act_type="sigmoid", name=prefix + "z_act")
        next_h_tmp = F.Activation(
            F.elemwise_add(i2h, F.elemwise_mul(reset_gate, h2h, name=prefix + "mul0"),
                           name=prefix + "plus2"),
            act_type="tanh", name=prefix + "h_act")
        ones = F.ones_like(update_gate, name=prefix + "ones_like0")
        next_h = F.elemwise_add(
            F.elemwise_mul(F.elemwise_sub(ones, update_gate, name=prefix + "minus0"),
                           next_h_tmp, name=prefix + "mul1"),
            F.elemwise_mul(update_gate, prev_h, name=prefix + "mul20"),
            name=prefix + "out")
        return next_h, [next_h]


class _SequentialCellMixin:
    """Stacking logic shared by SequentialRNNCell and HybridSequentialRNNCell."""

    def __repr__(self):
        mods = "\n".join(f"({i}): {_indent(repr(m), 2)}"
                         for i, m in self._children.items())
        return f"{self.__class__.__name__}(\n{mods}\n)"

    def add(self, cell):
        """Appends a cell into the stack.

        Parameters
        ----------
        cell : RecurrentCell
            The cell to add.
        """
        self.register_child(cell)

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        assert not self._modified, \
            "After applying modifier cells (e.g. ZoneoutCell) the base cell cannot be " \
            "called directly. Call the modifier cell instead."
        return _cells_begin_state(self._children.values(), **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, batch_size = _format_sequence(length, inputs, layout, None)
        num_cells = len(self._children)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)
        p = 0
        next_states = []
        for i, cell in enumerate(self._children.values()):
            n = len(cell.state_info())
            states = begin_state[p:p + n]
            p += n
            inputs, states = cell.unroll(
                length, inputs=inputs, begin_state=states, layout=layout,
                merge_outputs=None if i < num_cells - 1 else merge_outputs,
                valid_length=valid_length)
            next_states.extend(states)
        return inputs, next_states

    def _step(self, inputs, states):
        next_states = []
        p = 0
        for cell in self._children.values():
            assert not isinstance(cell, BidirectionalCell), \
                "BidirectionalCell cannot be stepped; use unroll"
            n = len(cell.state_info())
            state = states[p:p + n]
            p += n
            inputs, state = cell(inputs, state)
            next_states.append(state)
        return inputs, sum(next_states, [])

    def __getitem__(self, i):
        return self._children[str(i)]

    def __len__(self):
        return len(self._children)


class SequentialRNNCell(_SequentialCellMixin, RecurrentCell):
    """Sequentially stacking multiple RNN cells."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def __call__(self, inputs, states):
        self._counter += 1
        return self._step(inputs, states)

    def hybrid_forward(self, *args, **kwargs):
        raise NotImplementedError


class HybridSequentialRNNCell(_SequentialCellMixin, HybridRecurrentCell):
    """Sequentially stacking multiple HybridRNN cells."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def __call__(self, inputs, states):
        # as in MXNet the stack steps its cells in Python (each one hybridized on its
        # own after hybridize()), so a step returns the tuple (output, states) even
        # when hybridized, not the cached graph's list
        self._counter += 1
        return self._step(inputs, states)

    def hybrid_forward(self, F, inputs, states):
        return self._step(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Applies dropout on input (no state).

    Parameters
    ----------
    rate : float
        Percentage of elements to drop out, which is 1 - percentage to retain.
    axes : tuple of int, default ()
        The axes on which dropout mask is shared. If empty, regular dropout is applied.
    """

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super().__init__(prefix, params)
        assert isinstance(rate, (int, float)), "rate must be a number"
        self._rate = rate
        self._axes = axes

    def __repr__(self):
        return f"{self.__class__.__name__}(rate={self._rate}, axes={self._axes})"

    def state_info(self, batch_size=0):
        return []

    def _alias(self):
        return "dropout"

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes,
                               name=f"t{self._counter}_fwd")
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, _TENSORS):
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=valid_length)


class ModifierCell(HybridRecurrentCell):
    """Base class for modifier cells. A modifier cell takes a base cell, apply
    modifications on it (e.g. Zoneout), and returns a new cell; the base cell's
    parameters are the modifier's."""

    def __init__(self, base_cell):
        assert not base_cell._modified, \
            f"Cell {base_cell.name} is already modified. One cell cannot be modified twice"
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=ndarray.zeros, **kwargs):
        assert not self._modified, \
            "After applying modifier cells (e.g. DropoutCell) the base cell cannot be " \
            "called directly. Call the modifier cell instead."
        self.base_cell._modified = False
        begin = self.base_cell.begin_state(func=func, **kwargs)
        self.base_cell._modified = True
        return begin

    def hybrid_forward(self, F, inputs, states):
        raise NotImplementedError

    def __repr__(self):
        return f"{self.__class__.__name__}({self.base_cell!r})"


class ZoneoutCell(ModifierCell):
    """Applies Zoneout on base cell: each output and state unit keeps its previous
    value with probability ``zoneout_outputs`` / ``zoneout_states`` (in training)."""

    def __init__(self, base_cell, zoneout_outputs=0.0, zoneout_states=0.0):
        assert not isinstance(base_cell, BidirectionalCell), \
            "BidirectionalCell doesn't support zoneout since it doesn't support step. " \
            "Please add ZoneoutCell to the cells underneath instead."
        assert not isinstance(base_cell, SequentialRNNCell) or \
            not getattr(base_cell, "_bidirectional", False), \
            "Bidirectional SequentialRNNCell doesn't support zoneout. Please add " \
            "ZoneoutCell to the cells underneath instead."
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self._prev_output = None

    def __repr__(self):
        return (f"{self.__class__.__name__}(p_out={self.zoneout_outputs}, "
                f"p_state={self.zoneout_states}, {self.base_cell!r})")

    def _alias(self):
        return "zoneout"

    def reset(self):
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        cell, p_outputs, p_states = self.base_cell, self.zoneout_outputs, self.zoneout_states
        next_output, next_states = cell(inputs, states)

        def mask(p, like):
            return F.Dropout(F.ones_like(like), p=p)

        prev_output = self._prev_output
        if prev_output is None:
            prev_output = F.zeros_like(next_output)
        output = F.where(mask(p_outputs, next_output), next_output, prev_output) \
            if p_outputs != 0.0 else next_output
        states = [F.where(mask(p_states, new_s), new_s, old_s)
                  for new_s, old_s in zip(next_states, states)] \
            if p_states != 0.0 else next_states
        self._prev_output = output
        return output, states


class ResidualCell(ModifierCell):
    """Adds residual connection as described in Wu et al, 2016
    (https://arxiv.org/abs/1609.08144): the output is the base cell's output plus the
    input."""

    def __init__(self, base_cell):
        super().__init__(base_cell)

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = F.elemwise_add(output, inputs, name=f"t{self._counter}_fwd")
        return output, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        self.base_cell._modified = False
        outputs, states = self.base_cell.unroll(length, inputs=inputs,
                                                begin_state=begin_state, layout=layout,
                                                merge_outputs=merge_outputs,
                                                valid_length=valid_length)
        self.base_cell._modified = True
        merge_outputs = isinstance(outputs, _TENSORS) if merge_outputs is None \
            else merge_outputs
        inputs, axis, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:
            inputs = _mask_sequence_variable_length(F, inputs, length, valid_length, axis,
                                                    merge_outputs)
        if merge_outputs:
            outputs = F.elemwise_add(outputs, inputs)
        else:
            outputs = [F.elemwise_add(i, j) for i, j in zip(outputs, inputs)]
        return outputs, states


class BidirectionalCell(HybridRecurrentCell):
    """Bidirectional RNN cell: ``l_cell`` reads the sequence forward, ``r_cell``
    backward, and their outputs are concatenated on the feature axis.

    Parameters
    ----------
    l_cell : RecurrentCell
        Cell for forward unrolling
    r_cell : RecurrentCell
        Cell for backward unrolling
    """

    def __init__(self, l_cell, r_cell, output_prefix="bi_"):
        super().__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    def __repr__(self):
        return (f"{self.__class__.__name__}(forward={self._children['l_cell']!r}, "
                f"backward={self._children['r_cell']!r})")

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        assert not self._modified, \
            "After applying modifier cells (e.g. DropoutCell) the base cell cannot be " \
            "called directly. Call the modifier cell instead."
        return _cells_begin_state(self._children.values(), **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        reversed_inputs = _reverse_sequences(inputs, length, valid_length)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)
        states = begin_state
        l_cell, r_cell = self._children.values()
        n_l = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs,
                                            begin_state=states[:n_l], layout=layout,
                                            merge_outputs=merge_outputs,
                                            valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs,
                                            begin_state=states[n_l:], layout=layout,
                                            merge_outputs=False, valid_length=valid_length)
        reversed_r_outputs = _reverse_sequences(r_outputs, length, valid_length)
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, _TENSORS)
        l_outputs, _, _, _ = _format_sequence(None, l_outputs, layout, merge_outputs)
        reversed_r_outputs, _, _, _ = _format_sequence(None, reversed_r_outputs, layout,
                                                       merge_outputs)
        if merge_outputs:
            outputs = F.concat(l_outputs, reversed_r_outputs, dim=2,
                               name=f"{self._output_prefix}out")
        else:
            outputs = [F.concat(l_o, r_o, dim=1, name=f"{self._output_prefix}t{i}")
                       for i, (l_o, r_o) in enumerate(zip(l_outputs, reversed_r_outputs))]
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length,
                                                     axis, merge_outputs)
        states = l_states + r_states
        return outputs, states


def _indent(text, spaces):
    lines = text.split("\n")
    return "\n".join([lines[0]] + [" " * spaces + line for line in lines[1:]])
