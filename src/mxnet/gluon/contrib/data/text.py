"""Language-model datasets: WikiText-2 and WikiText-103 (``mx.gluon.contrib.data.text``).

Each sample is a pair of int32 NDArrays of ``seq_len`` token indices: a stretch of the
corpus and the same stretch one token later (the next-word targets), cut regardless of
sentence boundaries. Every non-empty line of the corpus becomes its whitespace-separated
tokens followed by ``<eos>``; the tail that does not fill a whole sample is dropped.

Nothing is downloaded: ``root`` must hold the segment's token file
(``wiki.train.tokens``, ``wiki.valid.tokens`` or ``wiki.test.tokens``), the folder the
archive extracts to, or the archive itself (``wikitext-2-v1.zip`` /
``wikitext-103-v1.zip``); otherwise the constructor raises an MXNetError naming what it
looked for. (MXNet 1.9.1 downloaded the archive.)
"""
import io
import os
import zipfile

import numpy as np

from .... import ndarray as nd
from ....base import MXNetError, data_dir
from ...data import dataset
from ...data._vocabulary import Vocabulary, count_tokens_from_str

__all__ = ["WikiText2", "WikiText103"]

EOS_TOKEN = "<eos>"
_SEGMENT_FILES = {"train": "wiki.train.tokens", "validation": "wiki.valid.tokens",
                  "test": "wiki.test.tokens"}


class _WikiText(dataset.Dataset):
    _archive = None         # the archive's file name
    _folder = None          # the folder it extracts to

    def __init__(self, root, segment, vocab, seq_len):
        if segment not in _SEGMENT_FILES:
            raise MXNetError(f"{type(self).__name__}: segment must be one of "
                             f"{sorted(_SEGMENT_FILES)}, got {segment!r}")
        if int(seq_len) != seq_len or seq_len < 1:
            raise MXNetError(f"{type(self).__name__}: seq_len must be a positive integer, "
                             f"got {seq_len!r}")
        self._root = os.path.expanduser(root)
        self._segment, self._seq_len = segment, int(seq_len)
        self._vocab, self._counter = vocab, None
        content = self._read_segment()
        self._counter = count_tokens_from_str(content)
        if self._vocab is None:
            self._vocab = Vocabulary(counter=self._counter,
                                                reserved_tokens=[EOS_TOKEN])
        tokens = []
        for line in content.splitlines():
            words = line.split()
            if words:
                tokens.extend(words)
                tokens.append(EOS_TOKEN)
        ids = np.asarray(self._vocab.to_indices(tokens), dtype=np.int32)
        usable = (len(ids) - 1) // self._seq_len * self._seq_len
        shape = (-1, self._seq_len)
        self._data = nd.array(ids[:usable], dtype=np.int32).reshape(shape)
        self._label = nd.array(ids[1:usable + 1], dtype=np.int32).reshape(shape)

    @property
    def vocabulary(self):
        """The ``contrib.text.vocab.Vocabulary`` indexing the tokens."""
        return self._vocab

    @property
    def frequencies(self):
        """A ``collections.Counter`` of this segment's tokens."""
        return self._counter

    def __getitem__(self, idx):
        return self._data[idx], self._label[idx]

    def __len__(self):
        return self._label.shape[0]

    def _read_segment(self):
        name = _SEGMENT_FILES[self._segment]
        for path in (os.path.join(self._root, name),
                     os.path.join(self._root, self._folder, name)):
            if os.path.isfile(path):
                with io.open(path, "r", encoding="utf8") as f:
                    return f.read()
        archive = os.path.join(self._root, self._archive)
        if os.path.isfile(archive):
            with zipfile.ZipFile(archive) as zf:
                for member in zf.namelist():
                    if os.path.basename(member) == name:
                        return zf.read(member).decode("utf8")
            raise MXNetError(f"{type(self).__name__}: {archive!r} holds no {name}")
        raise MXNetError(
            f"{type(self).__name__}: dataset files not found in {self._root!r}; expected "
            f"{name} (or {self._folder}/{name}, or the archive {self._archive}). pymxnet "
            "does not download datasets: put the files there (or pass root=)")


_DOC = """{title} word-level language-modelling corpus (Merity et al., 2016).

    Parameters
    ----------
    root : str, default $MXNET_HOME/datasets/{folder}
        Folder holding the token files, their ``{folder}/`` folder or ``{archive}``.
    segment : str, default 'train'
        'train', 'validation' or 'test'.
    vocab : contrib.text.vocab.Vocabulary, default None
        The vocabulary that indexes the tokens; None builds one from this segment
        (with ``<eos>`` reserved).
    seq_len : int, default 35
        Tokens per sample.
    """


class WikiText2(_WikiText):
    _archive, _folder = "wikitext-2-v1.zip", "wikitext-2"
    __doc__ = _DOC.format(title="WikiText-2", folder=_folder, archive=_archive)

    def __init__(self, root=os.path.join(data_dir(), "datasets", "wikitext-2"),
                 segment="train", vocab=None, seq_len=35):
        super().__init__(root, segment, vocab, seq_len)


class WikiText103(_WikiText):
    _archive, _folder = "wikitext-103-v1.zip", "wikitext-103"
    __doc__ = _DOC.format(title="WikiText-103", folder=_folder, archive=_archive)

    def __init__(self, root=os.path.join(data_dir(), "datasets", "wikitext-103"),
                 segment="train", vocab=None, seq_len=35):
        super().__init__(root, segment, vocab, seq_len)
