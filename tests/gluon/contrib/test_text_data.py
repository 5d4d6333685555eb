"""gluon.contrib.data.text: WikiText datasets read from local files (a small corpus
in WikiText's layout), checked against the corpus tokenised independently here."""
import collections
import os
import zipfile

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.gluon.contrib.data.text import WikiText2, WikiText103

TRAIN = " = Title = \n\n the cat sat on the mat . \n the dog sat . \n\n a cat ran \n"
VALID = " the bird sat on a dog . \n\n"


def tokens(content):
    out = []
    for line in content.split("\n"):
        words = line.split()
        if words:
            out += words + ["<eos>"]
    return out


@pytest.fixture
def corpus(tmp_path):
    (tmp_path / "wiki.train.tokens").write_text(TRAIN, encoding="utf8")
    (tmp_path / "wiki.valid.tokens").write_text(VALID, encoding="utf8")
    return str(tmp_path)


@pytest.mark.parametrize("seq_len", [1, 4, 5])
def test_samples_are_the_corpus_and_its_next_words(corpus, seq_len):
    ds = WikiText2(root=corpus, segment="train", seq_len=seq_len)
    words = tokens(TRAIN)
    vocab = ds.vocabulary
    n = (len(words) - 1) // seq_len
    assert len(ds) == n
    for i in range(n):
        data, label = ds[i]
        assert data.dtype == np.int32 and data.shape == (seq_len,)
        span = words[i * seq_len:(i + 1) * seq_len + 1]
        assert vocab.to_tokens(data.asnumpy().tolist()) == span[:-1]
        assert vocab.to_tokens(label.asnumpy().tolist()) == span[1:]


def test_vocabulary_and_frequencies(corpus):
    train = WikiText2(root=corpus, segment="train")
    counts = collections.Counter(TRAIN.split())
    assert train.frequencies == counts
    # the unknown token, <eos> reserved, then every word
    assert len(train.vocabulary) == len(counts) + 2
    assert train.vocabulary.idx_to_token[:2] == ["<unk>", "<eos>"]
    valid = WikiText2(root=corpus, segment="validation", vocab=train.vocabulary,
                      seq_len=2)
    assert valid.vocabulary is train.vocabulary
    assert valid.frequencies == collections.Counter(VALID.split())
    data = np.concatenate([valid[i][0].asnumpy() for i in range(len(valid))])
    # 'bird' is not in the training vocabulary: index 0, the unknown token
    want = [train.vocabulary.token_to_idx.get(w, 0) for w in tokens(VALID)]
    np.testing.assert_array_equal(data, want[:len(data)])


def test_archive_and_extracted_folder_layouts(tmp_path):
    folder = tmp_path / "unzipped" / "wikitext-103"
    folder.mkdir(parents=True)
    (folder / "wiki.test.tokens").write_text(TRAIN, encoding="utf8")
    from_folder = WikiText103(root=str(tmp_path / "unzipped"), segment="test", seq_len=3)
    with zipfile.ZipFile(tmp_path / "wikitext-103-v1.zip", "w") as zf:
        zf.writestr("wikitext-103/wiki.test.tokens", TRAIN)
    from_zip = WikiText103(root=str(tmp_path), segment="test", seq_len=3)
    assert len(from_zip) == len(from_folder) > 0
    for i in range(len(from_zip)):
        np.testing.assert_array_equal(from_zip[i][1].asnumpy(), from_folder[i][1].asnumpy())


def test_missing_files_and_bad_arguments(tmp_path, corpus):
    with pytest.raises(MXNetError, match="wiki.test.tokens.*does not download"):
        WikiText2(root=str(tmp_path / "nowhere"), segment="test")
    with pytest.raises(MXNetError, match="segment"):
        WikiText2(root=corpus, segment="valid")
    with pytest.raises(MXNetError, match="seq_len"):
        WikiText2(root=corpus, seq_len=0)


def test_reachable_as_mxnet_names_it():
    from mxnet.gluon import contrib
    assert contrib.data.text.WikiText2 is WikiText2
    assert os.path.basename(WikiText2.__init__.__defaults__[0]) == "wikitext-2"
