"""mx.gluon.utils: splitting batches, global-norm clipping, SHA-1 checks, download,
shape_is_known, hook handles."""
import hashlib
import os
import pathlib
import warnings

import numpy as np
import pytest

import mxnet as mx
from mxnet import gluon
from mxnet.base import MXNetError
from mxnet.gluon.utils import (HookHandle, check_sha1, clip_global_norm, download,
                               shape_is_known, split_and_load, split_data)
from mxnet.test_utils import assert_almost_equal


def test_split_data_even_and_uneven():
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    # MXNet 1.9.1: the first size % n slices get one extra row
    parts = split_data(mx.nd.array(x), 3, even_split=False)
    assert [p.asnumpy().tolist() for p in parts] == [x[:2].tolist(), x[2:4].tolist(),
                                                     x[4:].tolist()]
    with pytest.raises(ValueError, match="cannot be evenly split into 3 slices"):
        split_data(mx.nd.array(x), 3)
    parts = split_data(mx.nd.array(np.arange(14.).reshape(2, 7)), 3, batch_axis=1,
                       even_split=False)
    assert [p.shape for p in parts] == [(2, 3), (2, 2), (2, 2)]
    assert_almost_equal(parts[1].asnumpy(), np.arange(14.).reshape(2, 7)[:, 3:5])


def test_split_and_load_contexts():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    data = np.random.rand(4, 3).astype(np.float32)
    parts = split_and_load(data, ctxs)          # numpy input is converted
    assert [p.context for p in parts] == ctxs
    assert_almost_equal(np.concatenate([p.asnumpy() for p in parts]), data)
    single = split_and_load(mx.nd.array(data), [mx.cpu(1)])
    assert len(single) == 1 and single[0].context == mx.cpu(1)


def test_clip_global_norm_against_numpy():
    a = [np.array([3., 4.], np.float32), np.array([[12.]], np.float32)]
    arrays = [mx.nd.array(v) for v in a]
    norm = clip_global_norm(arrays, 1.0)
    total = np.sqrt(sum((v ** 2).sum() for v in a))
    assert isinstance(norm, (float, np.floating)) and abs(norm - total) < 1e-5
    for got, ref in zip(arrays, a):
        assert_almost_equal(got.asnumpy(), ref / (total + 1e-8), rtol=1e-5)
    # below the limit: unchanged; check_isfinite=False returns an NDArray
    small = [mx.nd.array([0.1, 0.2])]
    ret = clip_global_norm(small, 10.0, check_isfinite=False)
    assert isinstance(ret, mx.nd.NDArray)
    assert_almost_equal(small[0].asnumpy(), np.array([0.1, 0.2], np.float32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clip_global_norm([mx.nd.array([np.inf])], 1.0)
    assert any("nan or inf is detected" in str(w.message) for w in caught)


def test_check_sha1_and_download_from_file_url(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"pymxnet" * 100)
    sha1 = hashlib.sha1(src.read_bytes()).hexdigest()
    assert check_sha1(str(src), sha1) and not check_sha1(str(src), "0" * 40)
    dst = tmp_path / "out"
    dst.mkdir()
    fname = download(pathlib.Path(src).as_uri(), path=str(dst), sha1_hash=sha1)
    assert fname == os.path.join(str(dst), "src.bin")
    assert open(fname, "rb").read() == src.read_bytes()
    # an existing file with the right hash is kept without downloading
    assert download("http://127.0.0.1:9/src.bin", path=fname, sha1_hash=sha1) == fname
    with pytest.raises(UserWarning, match="content hash does not match"):
        download(pathlib.Path(src).as_uri(), path=str(tmp_path / "bad.bin"),
                 sha1_hash="0" * 40)
    assert not (tmp_path / "bad.bin").exists()


def test_download_offline_is_a_clear_error(tmp_path):
    with pytest.raises(MXNetError, match="download of http://127.0.0.1:9/x.params failed"):
        download("http://127.0.0.1:9/x.params", path=str(tmp_path), retries=0)


def test_shape_is_known():
    assert shape_is_known((2, 3))
    assert not shape_is_known((2, 0))
    assert not shape_is_known(None)
    assert not shape_is_known(())          # legacy shape semantics, as MXNet 1.9.1
    with pytest.raises(AssertionError):
        shape_is_known((2, -3))


def test_hook_handle_detach_and_context():
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    seen = []
    handle = net.register_forward_hook(lambda blk, inp, out: seen.append(out.shape))
    assert isinstance(handle, HookHandle)
    net(mx.nd.ones((1, 3)))
    handle.detach()
    net(mx.nd.ones((1, 3)))
    assert seen == [(1, 2)]
    with net.register_forward_pre_hook(lambda blk, inp: seen.append("pre")):
        net(mx.nd.ones((1, 3)))
    net(mx.nd.ones((1, 3)))
    assert seen == [(1, 2), "pre"]


def test_replace_file_moves_over_the_target(tmp_path):
    src, dst = tmp_path / "new.txt", tmp_path / "old.txt"
    src.write_text("new")
    dst.write_text("old")
    mx.gluon.utils.replace_file(str(src), str(dst))
    assert dst.read_text() == "new" and not src.exists()


def test_clip_global_norm_row_sparse():
    """row_sparse arrays count with their stored values and are scaled in place."""
    a = np.zeros((4, 3), np.float32)
    a[[0, 2]] = 1.0
    x1 = mx.nd.array(a).tostype("row_sparse")
    x2 = mx.nd.ones((2, 2))
    norm = gluon.utils.clip_global_norm([x1, x2], 1.0)
    want = np.sqrt(6 + 4)
    assert abs(norm - want) < 1e-5
    assert x1.stype == "row_sparse"
    np.testing.assert_allclose(x1.asnumpy(), a / want, rtol=1e-5)
    np.testing.assert_allclose(x2.asnumpy(), np.ones((2, 2)) / want, rtol=1e-5)


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_clip_global_norm_of_sparse_arrays(stype):
    a, b = np.ones((3, 3)), np.ones((4, 4))
    xs = [mx.nd.array(a).tostype(stype), mx.nd.array(b).tostype(stype)]
    norm = clip_global_norm(xs, 1.0)
    total = np.sqrt((a ** 2).sum() + (b ** 2).sum())
    assert abs(norm - total) < 1e-5
    assert_almost_equal(xs[0].asnumpy(), a / total)
    assert_almost_equal(xs[1].asnumpy(), b / total)


def test_repo_url_helpers(monkeypatch):
    # values from MXNet 1.9.1's mxnet.gluon.utils._get_repo_url/_get_repo_file_url
    # (GluonNLP and GluonCV import both to build their file URLs)
    from mxnet.gluon.utils import _get_repo_file_url, _get_repo_url
    monkeypatch.delenv("MXNET_GLUON_REPO", raising=False)
    assert _get_repo_url() == "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"
    assert _get_repo_file_url("gluon/dataset", "a.zip") == (
        "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/dataset/a.zip")
    monkeypatch.setenv("MXNET_GLUON_REPO", "http://mirror.local/repo")
    assert _get_repo_url() == "http://mirror.local/repo/"
    assert _get_repo_file_url("ns", "f.txt") == "http://mirror.local/repo/ns/f.txt"
    monkeypatch.setenv("MXNET_GLUON_REPO", "http://mirror.local/")
    assert _get_repo_url() == "http://mirror.local/"
