"""mx.rnn: MXNet's legacy symbolic RNN API.

Cells that build ``mx.sym`` graphs step by step (:mod:`.rnn_cell`), bucketing sentence
iterators (:mod:`.io`) and checkpoints that store fused weights unpacked per gate
(:mod:`.rnn`). Gluon's ``mx.gluon.rnn`` is the imperative counterpart.
"""
from .rnn_cell import (RNNParams, BaseRNNCell, RNNCell, LSTMCell, GRUCell,  # noqa: F401
                       FusedRNNCell, SequentialRNNCell, DropoutCell, ModifierCell,
                       ZoneoutCell, ResidualCell, BidirectionalCell, BaseConvRNNCell,
                       ConvRNNCell, ConvLSTMCell, ConvGRUCell)
from .io import encode_sentences, BucketSentenceIter  # noqa: F401
from .rnn import save_rnn_checkpoint, load_rnn_checkpoint, do_rnn_checkpoint  # noqa: F401
from .rnn import rnn_unroll, save_checkpoint, load_checkpoint  # noqa: F401
from . import io, rnn_cell, rnn  # noqa: F401
