"""mx.library.load: MXNet's path checks, then a clear refusal (no C extension ABI)."""
import pytest

import mxnet as mx


def test_missing_path(tmp_path):
    with pytest.raises(mx.MXNetError, match="does NOT exist"):
        mx.library.load(str(tmp_path / "libmissing.so"))


def test_relative_and_non_library_paths(tmp_path, monkeypatch):
    lib = tmp_path / "libext.so"
    lib.write_bytes(b"\x7fELF")
    text = tmp_path / "notes.txt"
    text.write_text("x")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(mx.MXNetError, match="not an absolute path"):
        mx.library.load("libext.so")
    with pytest.raises(mx.MXNetError, match="NOT a library file"):
        mx.library.load(str(text))
    with pytest.raises(mx.MXNetError, match="C extension ABI"):
        mx.library.load(str(lib))
