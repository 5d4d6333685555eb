"""mx.gluon.contrib.rnn: MXNet 1.9.1's convolutional recurrent cells, LSTMPCell and
VariationalDropoutCell. Not implemented in pymxnet yet: constructing one raises
NotImplementedError naming it (never a cell that computes something else)."""

__all__ = ["Conv1DRNNCell", "Conv2DRNNCell", "Conv3DRNNCell",
           "Conv1DLSTMCell", "Conv2DLSTMCell", "Conv3DLSTMCell",
           "Conv1DGRUCell", "Conv2DGRUCell", "Conv3DGRUCell",
           "LSTMPCell", "VariationalDropoutCell"]


def _missing(name):
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"mx.gluon.contrib.rnn.{name} is not implemented in "
                                  "pymxnet")
    return type(name, (), {"__init__": __init__,
                           "__doc__": f"{name}: not implemented in pymxnet (raises "
                                      "NotImplementedError)."})


for _name in __all__:
    globals()[_name] = _missing(_name)
