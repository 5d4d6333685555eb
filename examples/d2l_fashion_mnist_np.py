"""Softmax regression (from scratch) and LeNet (Gluon) on Fashion-MNIST, written the
way the "Dive into Deep Learning" book's MXNet edition writes them: ``from mxnet
import np, npx; npx.set_np()``, np arrays everywhere, autograd, Gluon in NumPy mode.

    python examples/d2l_fashion_mnist_np.py [--epochs 3] [--batch-size 256] [--limit N]

Data: Debian's ``dataset-fashion-mnist`` under /usr/share/datasets/fashion-mnist.
"""
import argparse
import time

from mxnet import autograd, gluon, init, np, npx
from mxnet.gluon import nn

npx.set_np()


def load_data_fashion_mnist(batch_size, limit=None):
    """The book's loader: ToTensor-transformed datasets in DataLoaders."""
    to_tensor = gluon.data.vision.transforms.ToTensor()
    train = gluon.data.vision.FashionMNIST(train=True)
    test = gluon.data.vision.FashionMNIST(train=False)
    if limit:
        train = gluon.data.SimpleDataset([train[i] for i in range(limit)])
        test = gluon.data.SimpleDataset([test[i] for i in range(limit)])
    return (gluon.data.DataLoader(train.transform_first(to_tensor), batch_size, shuffle=True),
            gluon.data.DataLoader(test.transform_first(to_tensor), batch_size, shuffle=False))


def accuracy(y_hat, y):
    """Number of correct predictions."""
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.astype(y.dtype) == y
    return float(cmp.astype(y.dtype).sum())


def evaluate_accuracy(net, data_iter):
    correct, total = 0.0, 0
    for X, y in data_iter:
        correct += accuracy(net(X), y)
        total += y.size
    return correct / total


# ------------------------------------------------------- softmax regression, from scratch
def softmax(X):
    X_exp = np.exp(X - X.max(axis=1, keepdims=True))
    return X_exp / X_exp.sum(axis=1, keepdims=True)


def cross_entropy(y_hat, y):
    return -np.log(y_hat[np.arange(y_hat.shape[0]), y.astype("int64")] + 1e-12)


def train_softmax_regression(train_iter, test_iter, epochs, lr=0.1):
    num_inputs, num_outputs = 784, 10
    W = np.random.normal(0, 0.01, (num_inputs, num_outputs))
    b = np.zeros(num_outputs)
    W.attach_grad()
    b.attach_grad()

    def net(X):
        return softmax(np.dot(X.reshape((-1, num_inputs)), W) + b)

    for epoch in range(epochs):
        total_loss, correct, n = 0.0, 0.0, 0
        for X, y in train_iter:
            with autograd.record():
                y_hat = net(X)
                loss = cross_entropy(y_hat, y)
            loss.backward()
            for param in (W, b):                 # minibatch SGD
                param[:] = param - lr * param.grad / X.shape[0]
            total_loss += float(loss.sum())
            correct += accuracy(y_hat, y)
            n += y.size
        test_acc = evaluate_accuracy(net, test_iter)
        print(f"softmax regression epoch {epoch + 1}: loss {total_loss / n:.3f}, "
              f"train acc {correct / n:.3f}, test acc {test_acc:.3f}")
    return test_acc


# ------------------------------------------------------------------------ LeNet, Gluon
def lenet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(channels=6, kernel_size=5, padding=2, activation="sigmoid"),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Conv2D(channels=16, kernel_size=5, activation="sigmoid"),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Dense(120, activation="sigmoid"),
            nn.Dense(84, activation="sigmoid"),
            nn.Dense(10))
    return net


def train_lenet(train_iter, test_iter, epochs, lr=0.9, hybridize=True):
    net = lenet()
    net.initialize(init.Xavier())
    if hybridize:
        net.hybridize()
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    for epoch in range(epochs):
        start, total_loss, correct, n = time.time(), 0.0, 0.0, 0
        for X, y in train_iter:
            with autograd.record():
                y_hat = net(X)
                ls = loss(y_hat, y)
            ls.backward()
            trainer.step(X.shape[0])
            total_loss += float(ls.sum())
            correct += accuracy(y_hat, y)
            n += y.size
        test_acc = evaluate_accuracy(net, test_iter)
        print(f"LeNet epoch {epoch + 1}: loss {total_loss / n:.3f}, train acc "
              f"{correct / n:.3f}, test acc {test_acc:.3f}, "
              f"{n / (time.time() - start):.0f} examples/sec")
    return test_acc


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--limit", type=int, default=None,
                        help="use only the first N training and test images")
    parser.add_argument("--no-hybridize", action="store_true")
    args = parser.parse_args(argv)
    train_iter, test_iter = load_data_fashion_mnist(args.batch_size, args.limit)
    softmax_acc = train_softmax_regression(train_iter, test_iter, args.epochs)
    lenet_acc = train_lenet(train_iter, test_iter, args.epochs,
                            hybridize=not args.no_hybridize)
    return softmax_acc, lenet_acc


if __name__ == "__main__":
    main()
