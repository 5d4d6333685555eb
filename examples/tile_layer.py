"""Seed 001's TileLayer: a (deprecated) NumpyOp that tiles its input along a new last
axis, used as written in the seed: build the symbol, infer its shapes, and bind it in
a Module with ``inputs_need_grad=True``.

    python examples/tile_layer.py
"""
import mxnet as mx
import numpy as np
class TileLayer(mx.operator.NumpyOp):
    def __init__(self, tiles, axis):
        super(TileLayer, self).__init__(False)
        # tiles may be a list or a number
        self.tiles = tiles
        self.axis = axis
    def list_arguments(self):
        return ['input']

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shape):
        data_shape = in_shape[0]
        output_shape = in_shape[0] + [self.tiles]
        return [data_shape], [output_shape]

    def forward(self, in_data, out_data):
        x = in_data[0]
        y = out_data[0]
        y = np.tile(x, reps=self.tiles)

    def backward(self, out_grad, in_data, out_data, in_grad):
        bottom_diff = in_grad[0]
        top_diff = np.sum(out_grad[0], axis=self.axis)
        bottom_diff = top_diff

if __name__ == '__main__':
    import logging
    from collections import namedtuple
    Batch = namedtuple('Batch', ['input'])
    logging.basicConfig(level=logging.INFO)
    a = mx.sym.Variable('data')
    custie = TileLayer(tiles=10, axis=2)
    tiles_a = custie(input=a, name='tileop')
    arg_shapes, out_shape, aux_shape = tiles_a.infer_shape(data=(2, 3))
    logging.info('arg_shape:{} , out_shape:{} , aux_shape:{} , output_blob:{}'.format(arg_shapes, out_shape, aux_shape, tiles_a.list_outputs()))
    exe = mx.module.Module(symbol=tiles_a, logger=logging)
    exe.bind(data_shapes=[('data', (1, 10, 10))], inputs_need_grad=True)
    # exe.init_params()
    # exe.init_optimizer()
    # data1 = [mx.nd.ones((1, 10, 10))]
    # exe.forward(Batch(data1))

    # print exe.get_outputs()[0].asnumpy().shape
    # top_grads =np.random.random(size=(1, 10, 10, 10))
    # exe.backward(out_grads=top_grads)
    # print exe.get_input_grads()[0].asnumpy()
