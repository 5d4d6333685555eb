"""A short tour of pymxnet's imperative API (seed 004): NDArrays on a context,
asynchronous arithmetic, autograd."""
import mxnet as mx

ctx = mx.cpu()
a = mx.nd.ones((10,), ctx=ctx)
b = mx.nd.ones((10,), ctx=ctx)
c = (a + b) / 10.
d = b + 1
print("c =", c.asnumpy())
print("d =", d.asnumpy())

x = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
x.attach_grad()
with mx.autograd.record():
    y = (x * x).sum()
y.backward()
print("d(sum x^2)/dx =", x.grad.asnumpy().tolist())
