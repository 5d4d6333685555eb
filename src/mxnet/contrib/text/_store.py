"""The local store of pretrained token embedding files.

A pretrained file ``<file>`` of embedding ``<name>`` (``glove``, ``fasttext``) lives
in ``<embedding_root>/<name>/<file>`` (root defaults to ``$MXNET_HOME/embeddings``,
i.e. ``~/.mxnet/embeddings``), where MXNet 1.9.1 kept it, so a store copied from an
MXNet installation works as is. The archive MXNet downloaded the file in may be put
there instead: the file is then extracted from it. Files are checked against the
SHA-1 MXNet published. pymxnet never downloads: a missing file is an MXNetError
naming the path it expects and where MXNet fetched it from.
"""
import gzip
import hashlib
import os
import shutil
import tarfile
import zipfile

from ...atomic_file import AtomicFile
from ...base import MXNetError

__all__ = []


def sha1_of(path):
    """The SHA-1 hex digest of the file at path."""
    digest = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_sha1(path, sha1, what):
    if sha1 is not None and sha1_of(path) != sha1:
        raise MXNetError(f"{what} {path!r} is corrupt or of another version: its SHA-1 "
                         f"differs from {sha1}. Replace it with the file MXNet published")


def _extract(archive, file_name, dest):
    """Write the member of archive whose base name is file_name to dest."""
    def copy(src):
        with AtomicFile(dest, what="extracting") as out:
            shutil.copyfileobj(src, out, 1 << 20)

    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                if os.path.basename(member) == file_name:
                    with zf.open(member) as src:
                        copy(src)
                    return
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tf:
            for member in tf.getmembers():
                if member.isfile() and os.path.basename(member.name) == file_name:
                    copy(tf.extractfile(member))
                    return
    elif archive.endswith(".gz"):
        with gzip.open(archive, "rb") as src:
            copy(src)
        return
    raise MXNetError(f"archive {archive!r} does not hold {file_name}")


def locate(embedding_root, embedding_name, file_name, file_sha1, archive_name,
           archive_sha1, url):
    """The path of pretrained file file_name of embedding embedding_name, extracted
    from its archive (archive_name, in the same folder) when only that is there.

    The SHA-1s (None: unknown) are checked; url is where MXNet downloaded the
    archive (or file) from, named in the error when neither is present.
    """
    folder = os.path.join(os.path.expanduser(embedding_root), embedding_name)
    path = os.path.join(folder, file_name)
    if os.path.isfile(path):
        _check_sha1(path, file_sha1, "Pretrained embedding file")
        return path
    archive = os.path.join(folder, archive_name)
    if archive_name != file_name and os.path.isfile(archive):
        _check_sha1(archive, archive_sha1, "Pretrained embedding archive")
        _extract(archive, file_name, path)
        _check_sha1(path, file_sha1, "Pretrained embedding file")
        return path
    also = f" (or the archive {archive_name} holding it)" if archive_name != file_name \
        else ""
    raise MXNetError(
        f"Pretrained {embedding_name} embedding file {file_name} not found: expected "
        f"{path!r}. pymxnet does not download embeddings; copy {file_name}{also}, as "
        f"published at {url}, into {folder!r} or pass embedding_root=")
