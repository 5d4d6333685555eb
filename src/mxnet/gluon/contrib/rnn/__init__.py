"""mx.gluon.contrib.rnn: convolutional recurrent cells (conv_rnn_cell), LSTMPCell,
VariationalDropoutCell and dynamic_unroll (rnn_cell)."""
from . import conv_rnn_cell, rnn_cell  # noqa: F401
from .conv_rnn_cell import *  # noqa: F401,F403
from .rnn_cell import LSTMPCell, VariationalDropoutCell  # noqa: F401

__all__ = conv_rnn_cell.__all__ + ["LSTMPCell", "VariationalDropoutCell"]
