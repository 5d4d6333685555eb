"""Seed 004's symbolic programming snippets, runnable: build a graph from variables,
inspect it, infer shapes, bind it to arrays, run forward and backward.

    python examples/symbolic_basics.py
"""
import numpy as np

import mxnet as mx


def main(log=print):
    # A graph of placeholders: nothing is computed yet.
    a = mx.sym.Variable("A")
    b = mx.sym.Variable("B")
    c = (a + b) / 10
    d = c + 1
    log("arguments:", d.list_arguments())          # ['A', 'B']
    log("outputs:", d.list_outputs())              # ['_plusscalar0_output']

    inp_shapes = {"A": (10,), "B": (10,)}
    arg_shapes, out_shapes, aux_shapes = d.infer_shape(**inp_shapes)
    log("arg shapes:", arg_shapes, "out shapes:", out_shapes, "aux shapes:", aux_shapes)

    # Bind the graph to arrays and run it.
    input_arguments = {"A": mx.nd.ones((10,), ctx=mx.cpu()),
                       "B": mx.nd.ones((10,), ctx=mx.cpu())}
    executor = d.bind(ctx=mx.cpu(), args=input_arguments, grad_req="null")
    executor.arg_dict["A"][:] = np.random.rand(10)   # [:] writes into the bound array
    executor.arg_dict["B"][:] = np.random.rand(10)
    executor.forward()
    output_value = executor.outputs[0].asnumpy()
    expected = (executor.arg_dict["A"].asnumpy() + executor.arg_dict["B"].asnumpy()) / 10 + 1
    log("forward:", output_value)

    # Gradients: give the executor arrays to write them into.
    grad_arguments = {"A": mx.nd.ones((10,), ctx=mx.cpu()),
                      "B": mx.nd.ones((10,), ctx=mx.cpu())}
    executor = d.bind(ctx=mx.cpu(), args=input_arguments, args_grad=grad_arguments,
                      grad_req="write")
    executor.arg_dict["A"][:] = np.random.rand(10)
    executor.arg_dict["B"][:] = np.random.rand(10)
    executor.forward(is_train=True)
    # d is not a loss, so backward needs the gradient of its output.
    out_grad = mx.nd.ones((10,), ctx=mx.cpu())
    executor.backward([out_grad])
    grads = [g.asnumpy() for g in executor.grad_arrays]
    log("gradients:", grads)
    log(executor.memory_plan.summary().rstrip())
    return output_value, expected, grads


if __name__ == "__main__":
    main()
