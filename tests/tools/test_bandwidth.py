"""mxnet.tools.bandwidth: push/pull rounds give the right sums and a table per size."""
import argparse

import pytest

import mxnet as mx
from mxnet.tools import bandwidth


def test_parse_size():
    assert [bandwidth.parse_size(s) for s in ("4096", "64KB", "1mb", "0.5GB")] == \
        [4096, 64000, 1000000, 500000000]
    for bad in ("", "1TB", "x", "2"):
        with pytest.raises(argparse.ArgumentTypeError):
            bandwidth.parse_size(bad)


@pytest.mark.parametrize("kvtype,ncpu", [("local", 3), ("device", 2), ("device", 1)])
def test_measure_checks_the_merged_value(kvtype, ncpu):
    kv = mx.kv.create(kvtype)
    ctxs = [mx.cpu(i) for i in range(ncpu)]
    assert bandwidth.measure(kv, ctxs, 4000, rounds=2) > 0


def test_wrong_merge_is_caught(monkeypatch):
    kv = mx.kv.create("local")
    real_pull = kv.pull

    def bad_pull(key, out=None, **kw):
        real_pull(key, out=out, **kw)
        for o in out if isinstance(out, list) else [out]:
            o[:] = o * 0.5
    monkeypatch.setattr(kv, "pull", bad_pull)
    with pytest.raises(AssertionError):
        bandwidth.measure(kv, [mx.cpu(0), mx.cpu(1)], 400, rounds=1)


def test_command_line_table(capsys):
    assert bandwidth.main(["--kv-store", "local", "--cpus", "2", "--sizes", "4KB", "16KB",
                           "--num-batches", "2", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("kvstore local, 1 worker(s), devices per worker: cpu(0),cpu(1)")
    assert lines[1] == "size (MB),time (ms),algbw (GB/s),busbw (GB/s)"
    sizes = [float(row.split(",")[0]) for row in lines[2:]]
    assert sizes == [0.004, 0.016]
    assert all(float(row.split(",")[2]) > 0 for row in lines[2:])
