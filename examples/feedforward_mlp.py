"""Seed 004's FeedForward program: a 784-128-10 MLP trained with the legacy
``mx.model.FeedForward`` estimator on NumPy arrays, validated on the test set.

The seed reads MNIST through skdata; here the data is Fashion-MNIST from
``mx.test_utils.get_mnist()`` (flattened to 784-vectors in [0, 1]), and the context
is ``mx.cpu()`` instead of ``mx.gpu(0)``.

    python examples/feedforward_mlp.py [--epochs 10] [--lr 0.001] [--limit N]
"""
import argparse
import logging

import mxnet as mx


def build_net():
    data = mx.sym.Variable("data")            # FeedForward wants these two names
    label = mx.sym.Variable("softmax_label")
    # let MXNet create the weights: their names (layer1_weight, ...) pick the
    # initialisation
    l1 = mx.sym.FullyConnected(data=data, num_hidden=128, name="layer1")
    a1 = mx.sym.Activation(data=l1, act_type="relu", name="act1")
    l2 = mx.sym.FullyConnected(data=a1, num_hidden=10, name="layer2")
    return mx.sym.SoftmaxOutput(data=l2, label=label)


class MetricRecorder:
    """Batch-end callback keeping each batch's metric values (resets the local sums,
    as Speedometer does, so every entry covers one batch)."""

    def __init__(self):
        self.history = []

    def __call__(self, param):
        self.history.append(dict(param.eval_metric.get_name_value()))
        param.eval_metric.reset_local()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.001)
    parser.add_argument("--batch-size", type=int, default=128,
                        help="FeedForward's numpy_batch_size")
    parser.add_argument("--limit", type=int, default=None, help="training samples to use")
    parser.add_argument("--test-limit", type=int, default=None, help="test samples to use")
    parser.add_argument("--track-loss", action="store_true",
                        help="also evaluate cross-entropy and record it per batch")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    logger = logging.getLogger(__name__)

    mnist = mx.test_utils.get_mnist()
    train_x = mnist["train_data"][:args.limit].reshape(-1, 784)
    train_y = mnist["train_label"][:args.limit]
    test_x = mnist["test_data"][:args.test_limit].reshape(-1, 784)
    test_y = mnist["test_label"][:args.test_limit]

    cost_classification = build_net()
    model = mx.model.FeedForward(symbol=cost_classification, num_epoch=args.epochs,
                                 ctx=mx.cpu(), learning_rate=args.lr,
                                 numpy_batch_size=args.batch_size)
    recorder = MetricRecorder()
    model.fit(X=train_x, y=train_y, eval_data=(test_x, test_y),
              eval_metric=["acc", "ce"] if args.track_loss else "acc", logger=logger,
              batch_end_callback=recorder if args.track_loss else None)
    accuracy = model.score(mx.io.NDArrayIter(test_x, test_y, args.batch_size))
    print("Test accuracy", accuracy)
    return {"test_accuracy": accuracy, "history": recorder.history}


if __name__ == "__main__":
    main()
