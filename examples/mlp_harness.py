"""What seed 001's softmax examples (custom_softmax_mlp.py, numpy_softmax.py) share:
the data, the 784-128-64-10 MLP under a Python softmax head, and the ``Module.fit``
run with its command line. Each example brings only its operator."""
import argparse
import logging

import numpy as np

import mxnet as mx


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


def build_mlp(head):
    """The seed's MLP; ``head(fc3)`` adds the softmax loss on its last layer."""
    data = mx.symbol.Variable('data')
    fc1 = mx.symbol.FullyConnected(data=data, name='fc1', num_hidden=128)
    act1 = mx.symbol.Activation(data=fc1, name='relu1', act_type="relu")
    fc2 = mx.symbol.FullyConnected(data=act1, name='fc2', num_hidden=64)
    act2 = mx.symbol.Activation(data=fc2, name='relu2', act_type="relu")
    fc3 = mx.symbol.FullyConnected(data=act2, name='fc3', num_hidden=10)
    return head(fc3)


def train(head, description, argv=None):
    """Parse the command line, train ``build_mlp(head)`` with ``Module.fit`` and return
    its test accuracy."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--num-examples", type=int, default=None,
                        help="train on the first N examples only")
    parser.add_argument("--synthetic", action="store_true", help="random data, no files")
    parser.add_argument("--gpu", action="store_true", help="train on mx.gpu(0)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)

    mnist = load_data(args.num_examples, args.synthetic)
    train_iter = mx.io.NDArrayIter(mnist['train_data'], mnist['train_label'],
                                   args.batch_size, shuffle=True)
    val_iter = mx.io.NDArrayIter(mnist['test_data'], mnist['test_label'], args.batch_size)

    model = mx.mod.Module(symbol=build_mlp(head), context=mx.gpu() if args.gpu else mx.cpu())
    model.fit(train_iter, eval_data=val_iter, optimizer='sgd',
              optimizer_params={'learning_rate': args.lr}, eval_metric='acc',
              initializer=mx.init.Xavier(),
              batch_end_callback=mx.callback.Speedometer(args.batch_size, 100),
              num_epoch=args.epochs)
    acc = mx.metric.Accuracy()
    model.score(val_iter, acc)
    print(acc)
    return acc.get()[1]
