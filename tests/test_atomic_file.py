"""atomic_file: content appears at the path only when complete; errors leave the old
file and no temporary."""
import os
import stat

import pytest

import mxnet as mx
from mxnet.atomic_file import AtomicFile, together, write_bytes, write_text


def test_commit_replaces_and_leaves_nothing_else(tmp_path):
    p = tmp_path / "f.bin"
    write_bytes(p, b"old")
    with AtomicFile(p) as f:
        f.write(b"new content")
        assert p.read_bytes() == b"old"            # not visible before commit
    assert p.read_bytes() == b"new content"
    assert os.listdir(tmp_path) == ["f.bin"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o666 & ~umask   # as open() would make


def test_error_keeps_old_file_and_removes_temporary(tmp_path):
    p = tmp_path / "f.txt"
    write_text(p, "old")
    with pytest.raises(ZeroDivisionError):
        with AtomicFile(p, "w") as f:
            f.write("partial")
            1 / 0
    assert p.read_text() == "old"
    assert os.listdir(tmp_path) == ["f.txt"]


def test_together_renames_all_at_the_end_or_none(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_text(a, "a0")
    write_text(b, "b0")
    with together():
        write_text(a, "a1")
        assert a.read_text() == "a0"                # held back until the group ends
        write_text(b, "b1")
    assert (a.read_text(), b.read_text()) == ("a1", "b1")
    with pytest.raises(RuntimeError):
        with together():
            write_text(a, "a2")
            raise RuntimeError("stop")
    assert (a.read_text(), b.read_text()) == ("a1", "b1")
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]


def test_missing_directory_is_an_mxnet_error_naming_the_path(tmp_path):
    with pytest.raises(mx.MXNetError, match="nodir"):
        write_bytes(tmp_path / "nodir" / "x", b"")


def test_checkpoint_writers_leave_only_their_files(tmp_path):
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(3, in_units=2))
    net.initialize()
    net.hybridize()
    net(mx.nd.ones((1, 2)))
    net.export(str(tmp_path / "m"))
    net.save_parameters(str(tmp_path / "p.params"))
    assert sorted(os.listdir(tmp_path)) == ["m-0000.params", "m-symbol.json", "p.params"]
    sb = mx.gluon.SymbolBlock.imports(str(tmp_path / "m-symbol.json"), ["data"],
                                      str(tmp_path / "m-0000.params"))
    x = mx.nd.array([[1.0, 2.0]])
    assert (sb(x) - net(x)).abs().max().asscalar() == 0
