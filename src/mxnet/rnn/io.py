"""Sentence data for the symbolic RNN API: integer encoding and a bucketing iterator."""
import bisect
import logging
import random

import numpy as np

from .. import ndarray
from ..io import DataIter, DataBatch, DataDesc

__all__ = ["encode_sentences", "BucketSentenceIter"]


def encode_sentences(sentences, vocab=None, invalid_label=-1, invalid_key="\n",
                     start_label=0, unknown_token=None):
    """Encode lists of words as lists of integer ids.

    With vocab None a new vocabulary is built ({invalid_key: invalid_label} plus one id
    per new word, counting from start_label and skipping invalid_label). With a given
    vocab, a word outside it is an error unless unknown_token is set, in which case it
    is recorded under unknown_token (MXNet's behaviour). Returns (encoded, vocab).
    """
    idx = start_label
    if vocab is None:
        vocab = {invalid_key: invalid_label}
        new_vocab = True
    else:
        new_vocab = False
    res = []
    for sent in sentences:
        coded = []
        for word in sent:
            if word not in vocab:
                if not (new_vocab or unknown_token):
                    raise AssertionError(f"Unknown token {word}")
                if idx == invalid_label:
                    idx += 1
                if unknown_token:
                    word = unknown_token
                vocab[word] = idx
                idx += 1
            coded.append(vocab[word])
        res.append(coded)
    return res, vocab


class BucketSentenceIter(DataIter):
    """Batches of encoded sentences grouped by length into buckets (padded with
    invalid_label); the label is the sentence shifted left by one step.

    buckets defaults to every length with at least batch_size sentences; sentences
    longer than the largest bucket are discarded. layout 'NT' gives (batch, time)
    arrays, 'TN' (time, batch).
    """

    def __init__(self, sentences, batch_size, buckets=None, invalid_label=-1,
                 data_name="data", label_name="softmax_label", dtype="float32",
                 layout="NT"):
        super().__init__()
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [i for i, n in enumerate(counts) if n >= batch_size]
        buckets = sorted(buckets)
        discarded = 0
        data = [[] for _ in buckets]
        for sent in sentences:
            buck = bisect.bisect_left(buckets, len(sent))
            if buck == len(buckets):
                discarded += 1
                continue
            buff = np.full((buckets[buck],), invalid_label, dtype=dtype)
            buff[:len(sent)] = sent
            data[buck].append(buff)
        self.data = [np.asarray(d, dtype=dtype).reshape(len(d), length)
                     for d, length in zip(data, buckets)]
        if discarded:
            logging.warning("discarded %d sentences longer than the largest bucket.",
                            discarded)
        self.batch_size = batch_size
        self.buckets = buckets
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.nddata = []
        self.ndlabel = []
        self.major_axis = layout.find("N")
        self.layout = layout
        self.default_bucket_key = max(buckets)
        if self.major_axis == 0:
            shape = (batch_size, self.default_bucket_key)
        elif self.major_axis == 1:
            shape = (self.default_bucket_key, batch_size)
        else:
            raise ValueError(f"Invalid layout {layout}: Must by NT (batch major) or TN "
                             f"(time major)")
        self.provide_data = [DataDesc(name=data_name, shape=shape, layout=layout)]
        self.provide_label = [DataDesc(name=label_name, shape=shape, layout=layout)]
        self.idx = []
        for i, buck in enumerate(self.data):
            self.idx.extend((i, j) for j in range(0, len(buck) - batch_size + 1, batch_size))
        self.curr_idx = 0
        self.reset()

    def reset(self):
        """Shuffle the batch order and the sentences inside each bucket."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for buck in self.data:
            np.random.shuffle(buck)
        self.nddata = []
        self.ndlabel = []
        for buck in self.data:
            label = np.empty_like(buck)
            label[:, :-1] = buck[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(ndarray.array(buck, dtype=self.dtype))
            self.ndlabel.append(ndarray.array(label, dtype=self.dtype))

    def next(self):
        """The next DataBatch (bucket_key = its bucket's length)."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[i][j:j + self.batch_size]
        label = self.ndlabel[i][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[DataDesc(name=self.data_name, shape=data.shape,
                                                layout=self.layout)],
                         provide_label=[DataDesc(name=self.label_name, shape=label.shape,
                                                 layout=self.layout)])
