"""mx.gluon.contrib.rnn: recurrent cells outside MXNet's core set (MXNet 1.9.1 names):
LSTMPCell (LSTM with a projected recurrent state) and VariationalDropoutCell (one
dropout mask per sequence)."""
from .rnn_cell import LSTMPCell, VariationalDropoutCell  # noqa: F401

__all__ = ["LSTMPCell", "VariationalDropoutCell"]
