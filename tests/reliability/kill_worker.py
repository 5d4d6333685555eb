"""Helper process for test_kill_safety: imports mxnet once, then on request builds a
writer's objects, writes a reference copy, or forks a child that rewrites the "new"
checkpoint in a loop until the test SIGKILLs it.

Protocol (one line per request on stdin, one reply line on stdout):
  ref WRITER VERSION DIR   -> "ok SECONDS"   (write VERSION's files into DIR, timed)
  trial WRITER DIR         -> "pid PID"      (a child loops writing "new" into DIR)
  reap PID                 -> "ok"           (wait for the killed child)
"""
import os
import sys

import numpy as np

import mxnet as mx
from mxnet import gluon, nd

# ~16 MB of float32 parameters per checkpoint: big enough that a write takes a while.
IN, HIDDEN = 2000, 2000


def _net(seed):
    mx.random.seed(seed)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(HIDDEN, in_units=IN), gluon.nn.Dense(4, in_units=HIDDEN))
    net.initialize(mx.init.Uniform(1.0 + seed))
    return net


def _trained(seed):
    net = _net(seed)
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01},
                            kvstore=None)
    with mx.autograd.record():
        loss = net(nd.ones((2, IN)) * seed).sum()
    loss.backward()
    trainer.step(2)
    return net, trainer


def _module(seed):
    data = mx.sym.var("data")
    out = mx.sym.FullyConnected(data, num_hidden=HIDDEN, name="fc1")
    out = mx.sym.FullyConnected(out, num_hidden=4 + seed, name="fc2")
    mod = mx.mod.Module(mx.sym.make_loss(mx.sym.sum(out)), data_names=["data"],
                        label_names=None)
    mod.bind(data_shapes=[("data", (2, IN))])
    mx.random.seed(seed)
    mod.init_params(mx.init.Uniform(1.0 + seed))
    mod.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.01})
    mod.forward_backward(mx.io.DataBatch([nd.ones((2, IN)) * seed]))
    mod.update()
    return mod


def _big_symbol(seed):
    out = mx.sym.var("data")
    for i in range(1500):
        out = mx.sym.FullyConnected(out, num_hidden=4 + seed + i % 7, name=f"fc{i}")
    return out


def _records(seed):
    rs = np.random.RandomState(seed)
    return [rs.bytes(20000) for _ in range(1000 + seed)]


BUILD = {
    "nd.save": lambda s: {f"w{i}": nd.array(np.random.RandomState(s + i).rand(1000, 1000))
                          for i in range(4)},
    "Block.save_parameters": _net,
    "HybridBlock.export": lambda s: _exported(s),
    "Trainer.save_states": lambda s: _trained(s)[1],
    "Module.save_checkpoint": _module,
    "Module.save_params": _module,
    "Module.save_optimizer_states": _module,
    "model.save_checkpoint": lambda s: (_module(s).symbol, *_module(s).get_params()),
    "Symbol.save": _big_symbol,
    "recordio": _records,
}


def _exported(seed):
    net = _net(seed)
    net.hybridize()
    net(nd.ones((1, IN)))
    return net


def _write_recordio(records, d):
    w = mx.recordio.MXIndexedRecordIO(os.path.join(d, "data.idx"),
                                      os.path.join(d, "data.rec"), "w")
    for i, r in enumerate(records):
        w.write_idx(i, r)
    w.close()


WRITE = {
    "nd.save": lambda o, d: nd.save(os.path.join(d, "arrays.nd"), o),
    "Block.save_parameters": lambda o, d: o.save_parameters(os.path.join(d, "net.params")),
    "HybridBlock.export": lambda o, d: o.export(os.path.join(d, "net")),
    "Trainer.save_states": lambda o, d: o.save_states(os.path.join(d, "trainer.states")),
    "Module.save_checkpoint": lambda o, d: o.save_checkpoint(
        os.path.join(d, "mod"), 1, save_optimizer_states=True),
    "Module.save_params": lambda o, d: o.save_params(os.path.join(d, "mod.params")),
    "Module.save_optimizer_states": lambda o, d: o.save_optimizer_states(
        os.path.join(d, "mod.states")),
    "model.save_checkpoint": lambda o, d: mx.model.save_checkpoint(
        os.path.join(d, "model"), 3, *o),
    "Symbol.save": lambda o, d: o.save(os.path.join(d, "graph-symbol.json")),
    "recordio": _write_recordio,
}

_built = {}


def _objects(writer, version):
    key = (writer, version)
    if key not in _built:
        if _built and next(iter(_built))[0] != writer:
            _built.clear()                       # one writer's objects at a time
        _built[key] = BUILD[writer](1 if version == "old" else 2)
    return _built[key]


def main():
    import time
    for line in sys.stdin:
        cmd = line.split()
        if cmd[0] == "ref":
            writer, version, d = cmd[1:]
            obj = _objects(writer, version)
            t0 = time.perf_counter()
            WRITE[writer](obj, d)
            reply = f"ok {time.perf_counter() - t0:.4f}"
        elif cmd[0] == "trial":
            writer, d = cmd[1:]
            obj = _objects(writer, "new")
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                try:
                    while True:
                        WRITE[writer](obj, d)
                finally:
                    os._exit(1)
            reply = f"pid {pid}"
        elif cmd[0] == "reap":
            os.waitpid(int(cmd[1]), 0)
            reply = "ok"
        else:
            reply = f"error unknown request {cmd[0]!r}"
        print(reply, flush=True)


if __name__ == "__main__":
    main()
