"""Text token embeddings (MXNet 1.9.1's ``mx.contrib.text.embedding``).

A token embedding is a :class:`~mxnet.contrib.text.vocab.Vocabulary` whose every
index also has a vector: row ``i`` of ``idx_to_vec`` embeds ``idx_to_token[i]``, and
row 0 is the unknown token's vector, returned for every token not indexed.
Embeddings are read from text files of lines ``token<delim>v1<delim>v2...``:
pretrained ones (:class:`GloVe`, :class:`FastText`, from the local store, see
``_store``) or any such file (:class:`CustomEmbedding`). A
:class:`CompositeEmbedding` concatenates several embeddings' vectors over one
vocabulary.

Pretrained embedding classes register by lower-cased class name (``register``) and
are created by name (``create('glove', pretrained_file_name=...)``).
"""
import logging
import os
import warnings

import numpy as np

from ... import ndarray as nd
from ... import registry
from ...base import InvalidArgument, MXNetError, data_dir
from . import _constants as C
from . import _store
from ._errors import TextAssertionError, TextKeyError
from .vocab import Vocabulary

__all__ = ["register", "create", "get_pretrained_file_names", "GloVe", "FastText",
           "CustomEmbedding", "CompositeEmbedding"]


def register(embedding_cls):
    """Registers a new token embedding class (a subclass of ``_TokenEmbedding``) under
    its lower-cased class name, so that ``create(name)`` and
    ``get_pretrained_file_names(name)`` know it.

    Returns the class, so it can decorate the class definition.

    Examples
    --------
    >>> from mxnet.contrib.text import embedding
    >>> @embedding.register
    ... class Tiny(embedding._TokenEmbedding):
    ...     pretrained_file_name_sha1 = {}
    >>> type(embedding.create('tiny')).__name__
    'Tiny'
    """
    return registry.get_register_func(_TokenEmbedding, "token embedding")(embedding_cls)


def create(embedding_name, **kwargs):
    """Creates an instance of a registered token embedding.

    Parameters
    ----------
    embedding_name : str
        The registered name (case-insensitive), e.g. ``'glove'`` or ``'fasttext'``.
    **kwargs
        The embedding class's arguments (e.g. ``pretrained_file_name``).

    Returns
    -------
    An instance of the embedding class.
    """
    if not isinstance(embedding_name, str):
        raise TextAssertionError(f"embedding_name must be a str, got "
                                 f"{type(embedding_name).__name__}")
    names = registry.get_registry(_TokenEmbedding)
    if embedding_name.lower() not in names:
        raise TextAssertionError(
            f"no token embedding named {embedding_name.lower()!r} is registered "
            f"(register it with mxnet.contrib.text.embedding.register); registered: "
            f"{', '.join(sorted(names))}")
    return registry.get_create_func(_TokenEmbedding, "token embedding")(embedding_name,
                                                                        **kwargs)


def get_pretrained_file_names(embedding_name=None):
    """The pretrained file names of the token embeddings.

    Parameters
    ----------
    embedding_name : str or None, default None
        A registered embedding name (e.g. ``'glove'``); None for all of them.

    Returns
    -------
    list of str or dict
        The file names (each a valid ``pretrained_file_name`` of that embedding), or
        for None a dict from every registered embedding name to its list.
    """
    names = registry.get_registry(_TokenEmbedding)
    if embedding_name is None:
        return {name: list(getattr(cls, "pretrained_file_name_sha1", {}))
                for name, cls in names.items()}
    if embedding_name not in names:
        raise TextKeyError(f"no token embedding named {embedding_name!r} is registered; "
                           f"registered: {', '.join(sorted(names))}")
    return list(getattr(names[embedding_name], "pretrained_file_name_sha1", {}))


def _as_vector(vec, vec_len, what):
    """vec (NDArray, NumPy array or list) as a float32 NumPy vector of vec_len."""
    arr = vec.asnumpy() if isinstance(vec, nd.NDArray) else np.asarray(vec)
    arr = arr.astype(np.float32).reshape(-1)
    if arr.shape != (vec_len,):
        raise TextAssertionError(f"{what} has {arr.size} elements; the embedding vectors "
                                 f"have {vec_len}")
    return arr


class _TokenEmbedding(Vocabulary):
    """The base class of token embeddings: a Vocabulary with a vector per index.

    Subclasses read their vectors with ``_load_embedding`` (and, given a
    vocabulary, re-index them with ``_build_embedding_for_vocabulary``). Pretrained
    ones set the class attribute ``pretrained_file_name_sha1`` (file name -> SHA-1)
    and, when the files were published in archives, ``pretrained_archive_name_sha1``.

    Parameters
    ----------
    **kwargs
        Vocabulary arguments: ``unknown_token`` (default '<unk>') and
        ``reserved_tokens``.

    Properties
    ----------
    token_to_idx, idx_to_token, unknown_token, reserved_tokens
        As for Vocabulary.
    vec_len : int
        The length of the embedding vectors.
    idx_to_vec : NDArray
        The vectors, shape ``(len(self), vec_len)``.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._vec_len = 0
        self._idx_to_vec = None

    # ---------------------------------------------------------- pretrained files
    @classmethod
    def _get_download_file_name(cls, pretrained_file_name):
        """The name under which MXNet published pretrained_file_name (its archive,
        for embeddings published in archives)."""
        return pretrained_file_name

    @classmethod
    def _get_pretrained_file_url(cls, pretrained_file_name):
        """Where MXNet 1.9.1 downloaded pretrained_file_name from (for messages)."""
        repo_url = os.environ.get("MXNET_GLUON_REPO", C.APACHE_REPO_URL)
        if not repo_url.endswith("/"):
            repo_url += "/"
        return (f"{repo_url}gluon/embeddings/{cls.__name__.lower()}/"
                f"{cls._get_download_file_name(pretrained_file_name)}")

    @classmethod
    def _get_pretrained_file(cls, embedding_root, pretrained_file_name):
        """The local path of pretrained_file_name, checked against its SHA-1: in
        ``<embedding_root>/<embedding name>/``, extracted from its archive there if
        need be. pymxnet does not download: a missing file is an MXNetError."""
        cls._check_pretrained_file_names(pretrained_file_name)
        file_sha1 = cls.pretrained_file_name_sha1[pretrained_file_name]
        archive_name = cls._get_download_file_name(pretrained_file_name)
        archives = getattr(cls, "pretrained_archive_name_sha1", {})
        return _store.locate(embedding_root, cls.__name__.lower(), pretrained_file_name,
                             file_sha1, archive_name, archives.get(archive_name),
                             cls._get_pretrained_file_url(pretrained_file_name))

    @classmethod
    def _check_pretrained_file_names(cls, pretrained_file_name):
        """Raise a KeyError (an MXNetError) unless pretrained_file_name is one of
        this embedding's pretrained files."""
        known = getattr(cls, "pretrained_file_name_sha1", {})
        if pretrained_file_name not in known:
            name = cls.__name__.lower()
            raise TextKeyError(f"{pretrained_file_name!r} is not a pretrained file of "
                               f"token embedding {name}; its pretrained files are: "
                               f"{', '.join(known)}")

    # ------------------------------------------------------------------ loading
    def _load_embedding(self, pretrained_file_path, elem_delim, init_unknown_vec,
                        encoding="utf8"):
        """Index the tokens of an embedding file and read their vectors.

        Each line is ``token<elem_delim>v1<elem_delim>v2...``. A line with a single
        value is taken for a header (fastText files start with one) and skipped, as
        is a second vector of the same token (both with a warning). The unknown
        token's vector comes from the file when the file has it, else from
        ``init_unknown_vec(shape=vec_len)``; reserved tokens not in the file get the
        unknown token's vector.
        """
        path = os.path.expanduser(pretrained_file_path)
        if not os.path.isfile(path):
            raise InvalidArgument(f"`pretrained_file_path`: no embedding file at "
                                  f"{path!r}")
        logging.info("Loading pre-trained token embedding vectors from %s", path)
        vec_len = None
        rows = []                       # vectors of the tokens appended to the index
        special = {token: None for token in self._idx_to_token}   # token -> vector
        seen = set()
        with open(path, "r", encoding=encoding) as f:
            for line_num, line in enumerate(f, 1):
                line = line.rstrip()
                if not line:
                    continue
                elems = line.split(elem_delim)
                if len(elems) < 2:
                    raise TextAssertionError(
                        f"{path}:{line_num}: expected a token and its vector separated "
                        f"by {elem_delim!r}, got {line[:60]!r}.")
                token = elems[0]
                try:
                    vec = [float(x) for x in elems[1:]]
                except ValueError:
                    raise InvalidArgument(
                        f"{path}:{line_num}: the vector of token {token!r} holds a "
                        f"non-number.") from None
                if token in seen:
                    warnings.warn(f"{path}:{line_num}: token {token!r} already has a "
                                  f"vector (from an earlier line); this one is skipped.")
                    continue
                if len(vec) == 1:
                    warnings.warn(f"{path}:{line_num}: {line[:60]!r} has a single value, "
                                  f"taken for a header line and skipped.")
                    continue
                if vec_len is None:
                    vec_len = len(vec)
                elif len(vec) != vec_len:
                    raise TextAssertionError(
                        f"{path}:{line_num}: the vector of token {token!r} has "
                        f"{len(vec)} values, the vectors before it {vec_len}.")
                seen.add(token)
                if token in special:
                    special[token] = vec
                else:
                    self._token_to_idx[token] = len(self._idx_to_token)
                    self._idx_to_token.append(token)
                    rows.append(vec)
        if vec_len is None:
            raise MXNetError(f"the pre-trained token embedding file {path!r} holds no "
                             f"embedding vectors")
        loaded_unknown = special[self._unknown_token]
        if loaded_unknown is None:
            unknown = _as_vector(init_unknown_vec(shape=vec_len), vec_len,
                                 "init_unknown_vec(shape=vec_len)")
        else:
            unknown = np.asarray(loaded_unknown, dtype=np.float32)
        matrix = np.empty((len(self._idx_to_token), vec_len), dtype=np.float32)
        num_special = len(special)
        for idx in range(num_special):
            vec = special[self._idx_to_token[idx]]
            matrix[idx] = unknown if vec is None else vec
        if rows:
            matrix[num_special:] = np.asarray(rows, dtype=np.float32)
        self._vec_len = vec_len
        self._idx_to_vec = nd.array(matrix)

    def _index_tokens_from_vocabulary(self, vocabulary):
        """Take over vocabulary's indexing (copies of its tables)."""
        self._token_to_idx = dict(vocabulary.token_to_idx)
        self._idx_to_token = list(vocabulary.idx_to_token)
        self._unknown_token = vocabulary.unknown_token
        self._reserved_tokens = None if vocabulary.reserved_tokens is None \
            else list(vocabulary.reserved_tokens)

    def _set_idx_to_vec_by_embeddings(self, token_embeddings, vocab_len,
                                      vocab_idx_to_token):
        """idx_to_vec for the vocabulary indexing vocab_idx_to_token: each row is the
        concatenation of the embeddings' vectors of that token; row 0 (the unknown
        token) the concatenation of their unknown vectors."""
        widths = [embed.vec_len for embed in token_embeddings]
        matrix = np.zeros((vocab_len, sum(widths)), dtype=np.float32)
        col = 0
        for embed, width in zip(token_embeddings, widths):
            matrix[C.UNKNOWN_IDX, col:col + width] = \
                embed.idx_to_vec[C.UNKNOWN_IDX].asnumpy()
            if vocab_len > 1:
                matrix[1:, col:col + width] = \
                    embed.get_vecs_by_tokens(list(vocab_idx_to_token[1:])).asnumpy()
            col += width
        self._vec_len = matrix.shape[1]
        self._idx_to_vec = nd.array(matrix)

    def _build_embedding_for_vocabulary(self, vocabulary):
        """Re-index this embedding by vocabulary: its tokens, in its order, with this
        embedding's vectors (the unknown vector for tokens it lacks)."""
        if vocabulary is None:
            return
        if not isinstance(vocabulary, Vocabulary):
            raise TextAssertionError(f"The argument `vocabulary` must be an instance of "
                                     f"mxnet.contrib.text.vocab.Vocabulary, got "
                                     f"{type(vocabulary).__name__}.")
        self._set_idx_to_vec_by_embeddings([self], len(vocabulary),
                                           vocabulary.idx_to_token)
        self._index_tokens_from_vocabulary(vocabulary)

    # --------------------------------------------------------------- the API
    @property
    def vec_len(self):
        """The length of the embedding vectors."""
        return self._vec_len

    @property
    def idx_to_vec(self):
        """NDArray of shape (len(self), vec_len): row i embeds idx_to_token[i]."""
        return self._idx_to_vec

    def get_vecs_by_tokens(self, tokens, lower_case_backup=False):
        """Look up the embedding vectors of tokens.

        Parameters
        ----------
        tokens : str or list of strs
            A token or a list of tokens.
        lower_case_backup : bool, default False
            When a token is not indexed, try its lower-cased form before falling
            back to the unknown vector.

        Returns
        -------
        NDArray
            Shape (vec_len,) for one token, (len(tokens), vec_len) for a list.
        """
        if self._idx_to_vec is None:
            raise MXNetError("the embedding vectors have not been loaded")
        single = not isinstance(tokens, list)
        lookup = self._token_to_idx
        indices = []
        for token in [tokens] if single else tokens:
            idx = lookup.get(token)
            if idx is None and lower_case_backup and isinstance(token, str):
                idx = lookup.get(token.lower())
            indices.append(C.UNKNOWN_IDX if idx is None else idx)
        if not indices:
            return nd.zeros((0, self._vec_len))
        vecs = nd.take(self._idx_to_vec, nd.array(indices, dtype="int64"))
        return vecs[0] if single else vecs

    def update_token_vectors(self, tokens, new_vectors):
        """Replace the embedding vectors of indexed tokens.

        Parameters
        ----------
        tokens : str or list of strs
            Indexed tokens (the unknown token included: give it explicitly to update
            the unknown vector).
        new_vectors : NDArray
            The vectors: shape (len(tokens), vec_len), or (vec_len,) for one token.
        """
        if self._idx_to_vec is None:
            raise TextAssertionError("the embedding vectors (`idx_to_vec`) have not "
                                     "been loaded")
        if not isinstance(tokens, list) or len(tokens) == 1:
            if not isinstance(new_vectors, nd.NDArray) or new_vectors.ndim not in (1, 2):
                raise TextAssertionError("for a single token, `new_vectors` must be an "
                                         "NDArray of 1 or 2 dimensions")
            if not isinstance(tokens, list):
                tokens = [tokens]
            if new_vectors.ndim == 1:
                new_vectors = new_vectors.expand_dims(0)
        elif not isinstance(new_vectors, nd.NDArray) or new_vectors.ndim != 2:
            raise TextAssertionError("for several tokens, `new_vectors` must be a 2-D "
                                     "NDArray (one row per token)")
        if tuple(new_vectors.shape) != (len(tokens), self._vec_len):
            raise TextAssertionError(
                f"`new_vectors` must have one row per token and vec_len "
                f"({self._vec_len}) columns: expected shape "
                f"{(len(tokens), self._vec_len)}, got {tuple(new_vectors.shape)}.")
        indices = []
        for token in tokens:
            if token not in self._token_to_idx:
                raise InvalidArgument(
                    f"Token {token!r} is not indexed, so it has no vector of its own "
                    f"(updating it would change the shared unknown vector). To update the "
                    f"unknown vector, pass the unknown token "
                    f"{self._idx_to_token[C.UNKNOWN_IDX]!r} itself.")
            indices.append(self._token_to_idx[token])
        self._idx_to_vec[indices] = new_vectors.astype(self._idx_to_vec.dtype)


@register
class GloVe(_TokenEmbedding):
    """The GloVe word embedding (Pennington, Socher & Manning, 2014;
    https://nlp.stanford.edu/projects/glove/), trained on word co-occurrence
    statistics. The pretrained files are text files of space-separated
    ``token v1 v2 ...`` lines.

    pymxnet reads them from the local store and never downloads: put the file
    (e.g. ``glove.6B.50d.txt``) or the archive MXNet published it in (e.g.
    ``glove.6B.zip``) into ``<embedding_root>/glove/``.

    Parameters
    ----------
    pretrained_file_name : str, default 'glove.840B.300d.txt'
        One of ``get_pretrained_file_names('glove')``.
    embedding_root : str, default $MXNET_HOME/embeddings
        The root of the local embedding store.
    init_unknown_vec : callback, default nd.zeros
        ``init_unknown_vec(shape=vec_len)`` gives the unknown token's vector.
    vocabulary : Vocabulary, default None
        If given, the embedding is indexed by this vocabulary instead of the file's
        tokens.
    **kwargs
        ``unknown_token`` and ``reserved_tokens``, as for Vocabulary.
    """

    pretrained_file_name_sha1 = C.GLOVE_FILE_SHA1
    pretrained_archive_name_sha1 = C.GLOVE_ARCHIVE_SHA1

    @classmethod
    def _get_download_file_name(cls, pretrained_file_name):
        # 'glove.6B.50d.txt' was published in 'glove.6B.zip': archives are told apart
        # by the corpus part of the name
        by_corpus = {name.split(".")[1]: name for name in cls.pretrained_archive_name_sha1}
        return by_corpus[pretrained_file_name.split(".")[1]]

    def __init__(self, pretrained_file_name="glove.840B.300d.txt",
                 embedding_root=os.path.join(data_dir(), "embeddings"),
                 init_unknown_vec=nd.zeros, vocabulary=None, **kwargs):
        GloVe._check_pretrained_file_names(pretrained_file_name)
        super().__init__(**kwargs)
        path = GloVe._get_pretrained_file(embedding_root, pretrained_file_name)
        self._load_embedding(path, " ", init_unknown_vec)
        if vocabulary is not None:
            self._build_embedding_for_vocabulary(vocabulary)


@register
class FastText(_TokenEmbedding):
    """The fastText word embedding (Bojanowski et al., 2017; https://fasttext.cc),
    trained with subword information; pretrained for Wikipedia in many languages
    (``wiki.<lang>.vec``) and for Common Crawl (``crawl-300d-2M.vec``). The ``.vec``
    files start with a header line, which is skipped.

    pymxnet reads them from the local store and never downloads: put the ``.vec``
    file or the archive MXNet published it in (``wiki.<lang>.zip``) into
    ``<embedding_root>/fasttext/``.

    Parameters
    ----------
    pretrained_file_name : str, default 'wiki.simple.vec'
        One of ``get_pretrained_file_names('fasttext')``.
    embedding_root : str, default $MXNET_HOME/embeddings
        The root of the local embedding store.
    init_unknown_vec : callback, default nd.zeros
        ``init_unknown_vec(shape=vec_len)`` gives the unknown token's vector.
    vocabulary : Vocabulary, default None
        If given, the embedding is indexed by this vocabulary instead of the file's
        tokens.
    **kwargs
        ``unknown_token`` and ``reserved_tokens``, as for Vocabulary.
    """

    pretrained_file_name_sha1 = C.FAST_TEXT_FILE_SHA1
    pretrained_archive_name_sha1 = C.FAST_TEXT_ARCHIVE_SHA1

    @classmethod
    def _get_download_file_name(cls, pretrained_file_name):
        return os.path.splitext(pretrained_file_name)[0] + ".zip"

    def __init__(self, pretrained_file_name="wiki.simple.vec",
                 embedding_root=os.path.join(data_dir(), "embeddings"),
                 init_unknown_vec=nd.zeros, vocabulary=None, **kwargs):
        FastText._check_pretrained_file_names(pretrained_file_name)
        super().__init__(**kwargs)
        path = FastText._get_pretrained_file(embedding_root, pretrained_file_name)
        self._load_embedding(path, " ", init_unknown_vec, encoding="utf8")
        if vocabulary is not None:
            self._build_embedding_for_vocabulary(vocabulary)


class CustomEmbedding(_TokenEmbedding):
    """A token embedding read from any file of lines
    ``token<elem_delim>v1<elem_delim>v2...`` (one token and its vector per line; all
    vectors of one length).

    Parameters
    ----------
    pretrained_file_path : str
        The path of the embedding file.
    elem_delim : str, default ' '
        The delimiter between the token and the vector elements.
    encoding : str, default 'utf8'
        The file's encoding.
    init_unknown_vec : callback, default nd.zeros
        ``init_unknown_vec(shape=vec_len)`` gives the unknown token's vector, unless
        the file holds a vector for the unknown token.
    vocabulary : Vocabulary, default None
        If given, the embedding is indexed by this vocabulary instead of the file's
        tokens.
    **kwargs
        ``unknown_token`` and ``reserved_tokens``, as for Vocabulary.
    """

    def __init__(self, pretrained_file_path, elem_delim=" ", encoding="utf8",
                 init_unknown_vec=nd.zeros, vocabulary=None, **kwargs):
        super().__init__(**kwargs)
        self._load_embedding(pretrained_file_path, elem_delim, init_unknown_vec,
                             encoding)
        if vocabulary is not None:
            self._build_embedding_for_vocabulary(vocabulary)


class CompositeEmbedding(_TokenEmbedding):
    """One or several token embeddings over a vocabulary: each token's vector is
    the concatenation of the embeddings' vectors of it (in the order given), the
    unknown token's the concatenation of their unknown vectors.

    Parameters
    ----------
    vocabulary : Vocabulary
        The indexing of the tokens.
    token_embeddings : _TokenEmbedding or list of _TokenEmbedding
        The embeddings to combine.
    """

    def __init__(self, vocabulary, token_embeddings):
        if not isinstance(vocabulary, Vocabulary):
            raise TextAssertionError(f"The argument `vocabulary` must be an instance of "
                                     f"mxnet.contrib.text.vocab.Vocabulary, got "
                                     f"{type(vocabulary).__name__}.")
        if not isinstance(token_embeddings, list):
            token_embeddings = [token_embeddings]
        if not token_embeddings:
            raise TextAssertionError("`token_embeddings` must hold at least one embedding.")
        for embed in token_embeddings:
            if not isinstance(embed, _TokenEmbedding):
                raise TextAssertionError(f"The argument `token_embeddings` must be an "
                                         f"instance or a list of instances of "
                                         f"mxnet.contrib.text.embedding._TokenEmbedding, "
                                         f"got {type(embed).__name__}.")
        super().__init__()
        self._index_tokens_from_vocabulary(vocabulary)
        self._set_idx_to_vec_by_embeddings(token_embeddings, len(self), self.idx_to_token)
