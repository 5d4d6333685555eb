"""Seed 000's program: a LeNet-like network with a YOLO-v2 style "reorg" layer,
trained with ``Module.fit`` on Fashion-MNIST, then ``predict`` and ``score``.

The seed writes the reorg layer as an ``NDArrayOp`` whose kernels are CUDA code
compiled with ``mx.rtc`` and runs on ``mx.gpu()``. Here the same layer is a Python
custom operator (``mx.operator.CustomOp``/``CustomOpProp``) computing in NumPy, and
the program runs on ``mx.cpu()``.

reorg (stride 2) turns (N, C, H, W) into (N, 4C, H/2, W/2): output channel 4c+q
holds the pixels of input channel c at row parity q // 2 and column parity q % 2.

    python examples/module_lenet_custom_op.py [--epochs 10] [--limit N] [--batch-size 100]
                                              [--init uniform|xavier]
"""
import argparse
import logging

import numpy as np

import mxnet as mx


class Reorg(mx.operator.CustomOp):
    """Space-to-depth by stride: a reshape/transpose, so backward is its inverse."""

    def __init__(self, stride):
        super().__init__()
        self.stride = stride

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        n, c, h, w = x.shape
        s = self.stride
        y = x.reshape(n, c, h // s, s, w // s, s).transpose(0, 1, 3, 5, 2, 4)
        self.assign(out_data[0], req[0], mx.nd.array(y.reshape(n, c * s * s, h // s, w // s)))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        dy = out_grad[0].asnumpy()
        n, c4, hs, ws = dy.shape
        s = self.stride
        dx = dy.reshape(n, c4 // (s * s), s, s, hs, ws).transpose(0, 1, 4, 2, 5, 3)
        self.assign(in_grad[0], req[0], mx.nd.array(dx.reshape(n, c4 // (s * s), hs * s,
                                                               ws * s)))


@mx.operator.register("reorg")
class ReorgProp(mx.operator.CustomOpProp):
    def __init__(self, stride=2):
        super().__init__(need_top_grad=True)
        self.stride = int(stride)          # custom-op keywords arrive as strings

    def list_arguments(self):
        return ["data"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        n, c, h, w = in_shape[0]
        s = self.stride
        return [in_shape[0]], [(n, c * s * s, h // s, w // s)], []

    def create_operator(self, ctx, shapes, dtypes):
        return Reorg(self.stride)


def build_net():
    data = mx.sym.var("data")
    conv1 = mx.sym.Convolution(data=data, kernel=(5, 5), num_filter=20)
    tanh1 = mx.sym.Activation(data=conv1, act_type="tanh")
    reg = mx.sym.Custom(data=tanh1, op_type="reorg", stride=2, name="reorg")
    conv2 = mx.sym.Convolution(data=reg, kernel=(5, 5), num_filter=20)
    tanh2 = mx.sym.Activation(data=conv2, act_type="tanh")          # 20x8x8
    conv3 = mx.sym.Convolution(data=tanh2, kernel=(5, 5), num_filter=50)
    tanh3 = mx.sym.Activation(data=conv3, act_type="tanh")
    flatten = mx.sym.flatten(data=tanh3)
    fc1 = mx.sym.FullyConnected(data=flatten, num_hidden=500)
    tanh4 = mx.sym.Activation(data=fc1, act_type="tanh")
    fc2 = mx.sym.FullyConnected(data=tanh4, num_hidden=10)
    return mx.sym.SoftmaxOutput(data=fc2, name="softmax")


class BatchLoss:
    """Batch-end callback recording the cross-entropy of each training batch."""

    def __init__(self):
        self.losses = []

    def __call__(self, param):
        mod, batch = param.locals["self"], param.locals["data_batch"]
        prob = mod.get_outputs()[0].asnumpy()
        label = batch.label[0].asnumpy().astype(int)
        picked = prob[np.arange(len(label)), label]
        self.losses.append(float(-np.log(np.maximum(picked, 1e-12)).mean()))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--limit", type=int, default=None, help="training samples to use")
    parser.add_argument("--test-limit", type=int, default=None, help="test samples to use")
    parser.add_argument("--init", choices=["uniform", "xavier"], default="uniform",
                        help="uniform: Module.fit's default Uniform(0.01), as in the seed")
    parser.add_argument("--gpu", action="store_true", help="train on mx.gpu(0), as the seed")
    parser.add_argument("--synthetic", action="store_true",
                        help="random images around ten class centres instead of MNIST files")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)

    if args.synthetic:
        from mlp_harness import load_data
        mnist = load_data(args.limit, synthetic=True)
    else:
        mnist = mx.test_utils.get_mnist()
    train_x, train_y = mnist["train_data"][:args.limit], mnist["train_label"][:args.limit]
    test_x, test_y = mnist["test_data"][:args.test_limit], mnist["test_label"][:args.test_limit]
    batch_size = args.batch_size
    train_iter = mx.io.NDArrayIter(train_x, train_y, batch_size, shuffle=True)
    val_iter = mx.io.NDArrayIter(test_x, test_y, batch_size)

    mynet = build_net()
    print(mynet.infer_shape(data=(batch_size, 1, 28, 28)))
    model = mx.mod.Module(symbol=mynet, context=mx.gpu() if args.gpu else mx.cpu())
    batch_loss = BatchLoss()
    model.fit(train_iter, eval_data=val_iter, optimizer="sgd",
              optimizer_params={"learning_rate": args.lr}, eval_metric="acc",
              batch_end_callback=[mx.callback.Speedometer(batch_size, 100), batch_loss],
              num_epoch=args.epochs,
              initializer=mx.init.Xavier() if args.init == "xavier" else mx.init.Uniform(0.01))

    test_iter = mx.io.NDArrayIter(test_x, None, batch_size)
    prob = model.predict(test_iter)
    test_iter = mx.io.NDArrayIter(test_x, test_y, batch_size)
    acc = mx.metric.Accuracy()
    model.score(test_iter, acc)
    print(acc)
    return {"prob": prob.asnumpy(), "test_accuracy": acc.get()[1],
            "batch_losses": batch_loss.losses}


if __name__ == "__main__":
    main()
