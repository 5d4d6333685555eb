"""ONNX export of the model-zoo vision nets and an LSTM: export time, model size, and
the largest difference between onnxruntime's outputs and pymxnet's own.

    python3 benchmarks/onnx_export.py        # writes benchmarks/results/onnx_export.md
"""
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
import mxnet as mx  # noqa: E402
import mxnet.onnx  # noqa: E402
from mxnet import gluon  # noqa: E402
from mxnet.gluon.model_zoo import vision  # noqa: E402

NETS = [("resnet50_v1", (1, 3, 224, 224)), ("resnet18_v2", (1, 3, 224, 224)),
        ("mobilenet1.0", (1, 3, 224, 224)), ("mobilenetv2_1.0", (1, 3, 224, 224)),
        ("vgg16", (1, 3, 224, 224)), ("densenet121", (1, 3, 224, 224)),
        ("squeezenet1.0", (1, 3, 224, 224)), ("inceptionv3", (1, 3, 299, 299))]


def _lstm():
    class Model(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.rnn = gluon.rnn.LSTM(256, num_layers=2, input_size=128)
                self.out = gluon.nn.Dense(10, flatten=False)

        def hybrid_forward(self, F, x):
            return self.out(self.rnn(x))
    return Model()


def measure(name, net, shape):
    import onnxruntime as ort
    net.initialize(mx.init.Xavier(magnitude=2))
    net.hybridize()
    x = mx.nd.array(np.random.uniform(-1, 1, shape).astype(np.float32))
    net(x)
    for pname, p in net.collect_params().items():   # non-trivial normalisation statistics
        if pname.endswith("running_var"):
            p.set_data(mx.nd.random.uniform(0.5, 1.5, p.shape))
        elif pname.endswith(("running_mean", "beta")):
            p.set_data(mx.nd.random.uniform(-0.2, 0.2, p.shape))
    expected = net(x).asnumpy()
    with tempfile.TemporaryDirectory() as d:
        prefix = os.path.join(d, "m")
        net.export(prefix)
        t0 = time.perf_counter()
        path = mx.onnx.export_model(prefix + "-symbol.json", prefix + "-0000.params", [shape],
                                    np.float32, os.path.join(d, "m.onnx"))
        seconds = time.perf_counter() - t0
        size = os.path.getsize(path) / 2 ** 20
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = sess.run(None, {sess.get_inputs()[0].name: x.asnumpy()})[0]
    diff = float(np.abs(got - expected).max())
    return f"| {name} | {shape} | {seconds:.2f} | {size:.1f} | {diff:.2e} | " \
           f"{float(np.abs(expected).max()):.2e} |"


def main():
    rows = ["| model | input | export s | ONNX MB | max abs diff (onnxruntime vs pymxnet) "
            "| max abs output |", "|---|---|---|---|---|---|"]
    for name, shape in NETS:
        rows.append(measure(name, vision.get_model(name), shape))
        print(rows[-1], flush=True)
    rows.append(measure("LSTM 2x256 + Dense", _lstm(), (35, 8, 128)))
    print(rows[-1])
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "onnx_export.md")
    with open(out, "w") as f:
        f.write("# ONNX export (pymxnet -> onnxruntime)\n\n" + "\n".join(rows) + "\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
