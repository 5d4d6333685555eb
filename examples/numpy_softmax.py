"""Seed 001's NumpyOp route: a softmax loss written as a (deprecated) NumpyOp, whose
forward/backward receive NumPy arrays and write into ``out_data``/``in_grad``; an
instance is called on a symbol to use it. Trained in an MLP with ``Module.fit`` on
Fashion-MNIST (``mx.test_utils.get_mnist()``).

    python examples/numpy_softmax.py [--epochs 10] [--num-examples N] [--synthetic]
"""
import argparse
import logging

import numpy as np

import mxnet as mx


class NumpySoftmax(mx.operator.NumpyOp):
    def __init__(self):
        super(NumpySoftmax, self).__init__(False)

    def list_arguments(self):
        return ['data', 'label']

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shape):
        data_shape = in_shape[0]
        label_shape = (in_shape[0][0],)
        output_shape = in_shape[0]
        return [data_shape, label_shape], [output_shape]

    def forward(self, in_data, out_data):
        x = in_data[0]
        y = out_data[0]
        y[:] = np.exp(x - x.max(axis=1).reshape((x.shape[0], 1)))
        y /= y.sum(axis=1).reshape((x.shape[0], 1))

    def backward(self, out_grad, in_data, out_data, in_grad):
        l = in_data[1]
        l = l.reshape((l.size,)).astype(int)
        y = out_data[0]
        dx = in_grad[0]
        dx[:] = y
        dx[np.arange(l.shape[0]), l] -= 1.0


def load_data(num_examples=None, synthetic=False, seed=0):
    """Fashion-MNIST as ``mx.test_utils.get_mnist()`` returns it (local IDX files, no
    download), cut to num_examples training and num_examples // 5 test examples when
    given; or, with synthetic, random images around ten class centres."""
    if synthetic:
        rng = np.random.RandomState(seed)
        centers = rng.rand(10, 1, 28, 28)

        def make(n):
            y = rng.randint(0, 10, n)
            x = np.clip(centers[y] + 0.2 * rng.randn(n, 1, 28, 28), 0, 1)
            return x.astype(np.float32), y.astype(np.float32)
        n = num_examples or 2000
        (trd, trl), (ted, tel) = make(n), make(max(n // 5, 100))
        return {"train_data": trd, "train_label": trl, "test_data": ted, "test_label": tel}
    mnist = mx.test_utils.get_mnist()
    if num_examples:
        n_test = max(num_examples // 5, 100)
        mnist = {k: v[:num_examples if k.startswith("train") else n_test]
                 for k, v in mnist.items()}
    return mnist


def build_mlp():
    data = mx.symbol.Variable('data')
    fc1 = mx.symbol.FullyConnected(data=data, name='fc1', num_hidden=128)
    act1 = mx.symbol.Activation(data=fc1, name='relu1', act_type="relu")
    fc2 = mx.symbol.FullyConnected(data=act1, name='fc2', num_hidden=64)
    act2 = mx.symbol.Activation(data=fc2, name='relu2', act_type="relu")
    fc3 = mx.symbol.FullyConnected(data=act2, name='fc3', num_hidden=10)
    mysoftmax = NumpySoftmax()
    return mysoftmax(data=fc3, name='softmax')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--num-examples", type=int, default=None)
    parser.add_argument("--synthetic", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)

    mnist = load_data(args.num_examples, args.synthetic)
    train_iter = mx.io.NDArrayIter(mnist['train_data'], mnist['train_label'],
                                   args.batch_size, shuffle=True)
    val_iter = mx.io.NDArrayIter(mnist['test_data'], mnist['test_label'], args.batch_size)
    model = mx.mod.Module(symbol=build_mlp(), context=mx.cpu())
    model.fit(train_iter, eval_data=val_iter, optimizer='sgd',
              optimizer_params={'learning_rate': args.lr}, eval_metric='acc',
              initializer=mx.init.Xavier(),
              batch_end_callback=mx.callback.Speedometer(args.batch_size, 100),
              num_epoch=args.epochs)
    acc = mx.metric.Accuracy()
    model.score(val_iter, acc)
    print(acc)
    return acc.get()[1]


if __name__ == "__main__":
    main()
