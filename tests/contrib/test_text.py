"""mx.contrib.text: token counting, Vocabulary indexing and token embeddings read
from small files written here (the expected indices and vectors are worked out by
hand from the corpus and the files)."""
import hashlib
import os
import warnings
import zipfile
from collections import Counter

import numpy as np
import pytest

import mxnet as mx
from mxnet.contrib import text
from mxnet.contrib.text.embedding import (CompositeEmbedding, CustomEmbedding, GloVe,
                                          _TokenEmbedding)
from mxnet.contrib.text.vocab import Vocabulary

# first-seen order (the, sat, cat, ran, dog) differs from the expected index order
CORPUS = "the sat cat\nthe ran cat\nthe dog sat\n"


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf8")
    return str(path)


def test_count_tokens_from_str():
    counts = text.utils.count_tokens_from_str(CORPUS)
    assert counts == Counter({"the": 3, "cat": 2, "sat": 2, "dog": 1, "ran": 1})
    mine = Counter({"the": 1, "The": 5})
    out = text.utils.count_tokens_from_str("The  Cat|the", token_delim=" ", seq_delim=r"\|",
                                           to_lower=True, counter_to_update=mine)
    assert out is mine and mine == Counter({"the": 3, "The": 5, "cat": 1})


def test_vocabulary_orders_by_frequency_then_token():
    vocab = Vocabulary(text.utils.count_tokens_from_str(CORPUS))
    # the:3, then cat/sat (2) in token order, then dog/ran (1)
    assert vocab.idx_to_token == ["<unk>", "the", "cat", "sat", "dog", "ran"]
    assert vocab.token_to_idx == {t: i for i, t in enumerate(vocab.idx_to_token)}
    assert len(vocab) == 6 and vocab.unknown_token == "<unk>"
    assert vocab.reserved_tokens is None
    assert vocab.to_indices("cat") == 2
    assert vocab.to_indices(["dog", "bird", "the"]) == [4, 0, 1]
    assert vocab.to_tokens([5, 0]) == ["ran", "<unk>"] and vocab.to_tokens(3) == "sat"


def test_vocabulary_min_freq_most_freq_count_and_reserved_tokens():
    counts = text.utils.count_tokens_from_str(CORPUS)
    assert Vocabulary(counts, min_freq=2).idx_to_token == ["<unk>", "the", "cat", "sat"]
    assert Vocabulary(counts, most_freq_count=2).idx_to_token == ["<unk>", "the", "cat"]
    vocab = Vocabulary(counts, min_freq=2, unknown_token="?",
                       reserved_tokens=["<pad>", "sat"])
    # reserved tokens come right after the unknown token and are not indexed twice
    assert vocab.idx_to_token == ["?", "<pad>", "sat", "the", "cat"]
    assert vocab.reserved_tokens == ["<pad>", "sat"]
    assert vocab.to_indices("dog") == 0
    # a counter token equal to the unknown token keeps index 0
    assert Vocabulary(counts, unknown_token="the").idx_to_token[:2] == ["the", "cat"]


@pytest.mark.parametrize("kwargs", [dict(min_freq=0), dict(reserved_tokens=["a", "a"]),
                                    dict(reserved_tokens=["<unk>"]),
                                    dict(most_freq_count=-1)])
def test_vocabulary_rejects_bad_arguments(kwargs):
    with pytest.raises(AssertionError) as info:
        Vocabulary(Counter("abc"), **kwargs)
    assert isinstance(info.value, mx.MXNetError)


def test_to_tokens_rejects_invalid_indices():
    vocab = Vocabulary(Counter("ab"))
    for bad in (3, -1, [0, 7]):
        with pytest.raises(ValueError, match="invalid") as info:
            vocab.to_tokens(bad)
        assert isinstance(info.value, mx.MXNetError)


def test_custom_embedding_reads_the_file(tmp_path):
    path = _write(tmp_path / "vec.txt", ["cat\t0.5\t-1", "dog\t2\t3.25", "Bird\t1\t1"])
    embed = CustomEmbedding(path, elem_delim="\t")
    assert embed.idx_to_token == ["<unk>", "cat", "dog", "Bird"]
    assert embed.vec_len == 2 and len(embed) == 4
    np.testing.assert_array_equal(embed.idx_to_vec.asnumpy(),
                                  [[0, 0], [0.5, -1], [2, 3.25], [1, 1]])
    np.testing.assert_array_equal(embed.get_vecs_by_tokens("dog").asnumpy(), [2, 3.25])
    np.testing.assert_array_equal(embed.get_vecs_by_tokens(["cat", "emu"]).asnumpy(),
                                  [[0.5, -1], [0, 0]])
    # 'CAT' is unknown unless its lower-cased form is tried
    np.testing.assert_array_equal(embed.get_vecs_by_tokens(["CAT"]).asnumpy(), [[0, 0]])
    np.testing.assert_array_equal(
        embed.get_vecs_by_tokens(["CAT", "Bird"], lower_case_backup=True).asnumpy(),
        [[0.5, -1], [1, 1]])


def test_custom_embedding_unknown_vector(tmp_path):
    path = _write(tmp_path / "vec.txt", ["cat 1 2", "<oov> 7 8", "dog 3 4"])
    embed = CustomEmbedding(path, init_unknown_vec=mx.nd.ones)
    np.testing.assert_array_equal(embed.get_vecs_by_tokens("zebra").asnumpy(), [1, 1])
    assert embed.token_to_idx["<oov>"] == 2           # an ordinary token here
    # the file's vector of the unknown token wins over init_unknown_vec
    embed = CustomEmbedding(path, init_unknown_vec=mx.nd.ones, unknown_token="<oov>")
    assert embed.idx_to_token == ["<oov>", "cat", "dog"]
    np.testing.assert_array_equal(embed.get_vecs_by_tokens("zebra").asnumpy(), [7, 8])


def test_custom_embedding_skips_header_and_duplicates(tmp_path):
    path = _write(tmp_path / "vec.txt", ["2 2", "cat 1 2", "", "cat 5 5", "dog 3 4"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        embed = CustomEmbedding(path)
    assert len(caught) == 2
    assert embed.idx_to_token == ["<unk>", "cat", "dog"]
    np.testing.assert_array_equal(embed.idx_to_vec.asnumpy(), [[0, 0], [1, 2], [3, 4]])


def test_custom_embedding_reserved_tokens_get_rows(tmp_path):
    path = _write(tmp_path / "vec.txt", ["cat 1 2", "<pad> 9 9", "dog 3 4"])
    embed = CustomEmbedding(path, init_unknown_vec=mx.nd.ones,
                            reserved_tokens=["<pad>", "<eos>"])
    assert embed.idx_to_token == ["<unk>", "<pad>", "<eos>", "cat", "dog"]
    np.testing.assert_array_equal(embed.idx_to_vec.asnumpy(),
                                  [[1, 1], [9, 9], [1, 1], [1, 2], [3, 4]])


@pytest.mark.parametrize("lines,error", [
    (["cat 1 2", "dog"], AssertionError),            # no vector
    (["cat 1 2", "dog 1 2 3"], AssertionError),      # another length
    (["cat 1 x"], ValueError),                       # not a number
])
def test_custom_embedding_rejects_bad_files(tmp_path, lines, error):
    path = _write(tmp_path / "vec.txt", lines)
    with pytest.raises(error, match="vec.txt:") as info:
        CustomEmbedding(path)
    assert isinstance(info.value, mx.MXNetError)


def test_custom_embedding_missing_file(tmp_path):
    with pytest.raises(ValueError, match="no embedding file") as info:
        CustomEmbedding(str(tmp_path / "absent.txt"))
    assert isinstance(info.value, mx.MXNetError)


def test_embedding_indexed_by_a_vocabulary(tmp_path):
    path = _write(tmp_path / "vec.txt", ["cat 1 2", "dog 3 4", "the 5 6"])
    vocab = Vocabulary(text.utils.count_tokens_from_str(CORPUS), reserved_tokens=["<pad>"])
    embed = CustomEmbedding(path, init_unknown_vec=mx.nd.ones, vocabulary=vocab)
    assert embed.idx_to_token == ["<unk>", "<pad>", "the", "cat", "sat", "dog", "ran"]
    assert embed.reserved_tokens == ["<pad>"]
    np.testing.assert_array_equal(embed.idx_to_vec.asnumpy(),
                                  [[1, 1], [1, 1], [5, 6], [1, 2], [1, 1], [3, 4], [1, 1]])


def test_composite_embedding_concatenates(tmp_path):
    first = CustomEmbedding(_write(tmp_path / "a.txt", ["cat 1 2", "dog 3 4"]),
                            init_unknown_vec=mx.nd.ones)
    second = CustomEmbedding(_write(tmp_path / "b.txt", ["dog 9 9 9", "ran 8 8 8"]))
    vocab = Vocabulary(Counter(["dog", "dog", "cat", "ran"]))
    composite = CompositeEmbedding(vocab, [first, second])
    assert composite.idx_to_token == ["<unk>", "dog", "cat", "ran"]
    assert composite.vec_len == 5
    np.testing.assert_array_equal(composite.idx_to_vec.asnumpy(),
                                  [[1, 1, 0, 0, 0], [3, 4, 9, 9, 9], [1, 2, 0, 0, 0],
                                   [1, 1, 8, 8, 8]])
    with pytest.raises(AssertionError):
        CompositeEmbedding(vocab, ["not an embedding"])


def test_update_token_vectors(tmp_path):
    embed = CustomEmbedding(_write(tmp_path / "vec.txt", ["cat 1 2", "dog 3 4"]))
    embed.update_token_vectors(["dog", "<unk>"], mx.nd.array([[7, 7], [-1, -1]]))
    embed.update_token_vectors("cat", mx.nd.array([5, 6]))
    np.testing.assert_array_equal(embed.idx_to_vec.asnumpy(), [[-1, -1], [5, 6], [7, 7]])
    with pytest.raises(ValueError, match="not indexed"):
        embed.update_token_vectors("emu", mx.nd.array([0, 0]))
    with pytest.raises(AssertionError, match="shape"):
        embed.update_token_vectors(["cat", "dog"], mx.nd.array([[1, 2, 3], [4, 5, 6]]))


def test_pretrained_file_from_the_local_store(tmp_path):
    content = b"cat 1 2\ndog 3 4\n"
    folder = tmp_path / "_tiny"          # <root>/<lower-cased class name>/
    folder.mkdir()
    with zipfile.ZipFile(folder / "tiny.zip", "w") as zf:
        zf.writestr("tiny/tiny.vec", content)

    class _Tiny(_TokenEmbedding):
        """One pretrained file, published in an archive (not registered)."""
        pretrained_file_name_sha1 = {"tiny.vec": hashlib.sha1(content).hexdigest()}
        pretrained_archive_name_sha1 = {
            "tiny.zip": hashlib.sha1((folder / "tiny.zip").read_bytes()).hexdigest()}

        @classmethod
        def _get_download_file_name(cls, pretrained_file_name):
            return "tiny.zip"

    # only the archive is there: the file is extracted next to it
    path = _Tiny._get_pretrained_file(str(tmp_path), "tiny.vec")
    assert path == str(folder / "tiny.vec") and (folder / "tiny.vec").read_bytes() == content
    np.testing.assert_array_equal(CustomEmbedding(path).idx_to_vec.asnumpy(),
                                  [[0, 0], [1, 2], [3, 4]])
    # a file that is not the published one is refused
    (folder / "tiny.vec").write_bytes(b"cat 0 0\n")
    with pytest.raises(mx.MXNetError, match="SHA-1"):
        _Tiny._get_pretrained_file(str(tmp_path), "tiny.vec")
    with pytest.raises(KeyError, match="pretrained file"):
        _Tiny._get_pretrained_file(str(tmp_path), "other.vec")


def test_pretrained_glove_is_not_downloaded(tmp_path):
    with pytest.raises(mx.MXNetError) as info:
        text.embedding.create("glove", pretrained_file_name="glove.6B.50d.txt",
                              embedding_root=str(tmp_path))
    msg = str(info.value)
    assert os.path.join(str(tmp_path), "glove", "glove.6B.50d.txt") in msg
    assert "does not download" in msg and "glove.6B.zip" in msg
    assert not os.listdir(tmp_path)
    with pytest.raises(KeyError, match="glove.6B.51d.txt"):
        GloVe("glove.6B.51d.txt", embedding_root=str(tmp_path))


def test_registry():
    names = text.embedding.get_pretrained_file_names()
    assert {"glove", "fasttext"} <= set(names)
    assert "glove.840B.300d.txt" in names["glove"] and len(names["glove"]) == 10
    assert "wiki.simple.vec" in text.embedding.get_pretrained_file_names("fasttext")
    with pytest.raises(KeyError):
        text.embedding.get_pretrained_file_names("word2vec")
    with pytest.raises(AssertionError, match="registered"):
        text.embedding.create("word2vec")
