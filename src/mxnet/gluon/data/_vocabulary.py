"""Text tokens for datasets and embeddings: counting them (``count_tokens_from_str``)
and indexing them (``Vocabulary``), with the errors of MXNet 1.9.1's text utilities.

MXNet 1.9.1 names these ``mx.contrib.text.utils`` / ``mx.contrib.text.vocab``, which
re-export them from here: the gluon layer's language-model datasets
(``gluon.contrib.data.text``) index their corpora with them, and gluon sits below
``mx.contrib`` (whose AMP, ONNX and quantization parts build on gluon).
The errors are MXNetErrors that are also the built-in exception MXNet 1.9.1 raised in
each case, so ``except AssertionError`` / ``except KeyError`` code written for MXNet
still catches them.
"""
import collections
import numbers
import re

from ...base import InvalidArgument, MXNetError

__all__ = ["Vocabulary", "count_tokens_from_str", "TextAssertionError", "TextKeyError",
           "UNKNOWN_IDX"]

# the index of the unknown token in every vocabulary
UNKNOWN_IDX = 0


class TextAssertionError(MXNetError, AssertionError):
    """Bad input MXNet rejected with an assertion (vocabulary arguments, embedding
    file format, vector shapes)."""


class TextKeyError(MXNetError, KeyError):
    """An unknown embedding name or pretrained file name."""

    def __str__(self):
        # KeyError would show the message in quotes (repr of its argument)
        return str(self.args[0]) if self.args else ""


def count_tokens_from_str(source_str, token_delim=" ", seq_delim="\n", to_lower=False,
                          counter_to_update=None):
    """Counts the tokens in a string.

    The string is cut at every match of ``token_delim`` or ``seq_delim``; the
    non-empty pieces are the tokens. For ``token_delim='<td>'`` and
    ``seq_delim='<sd>'`` two sequences look like
    ``<td>token1<td>token2<td><sd><td>token3<td><sd>``.

    Parameters
    ----------
    source_str : str
        A source string of tokens.
    token_delim : str, default ' '
        The token delimiter, a regular expression (escape special characters with
        ``\\``).
    seq_delim : str, default '\\n'
        The sequence delimiter, a regular expression.
    to_lower : bool, default False
        Whether to count the lower-cased tokens.
    counter_to_update : collections.Counter, optional
        A counter to add the counts to (and return); a new one when None.

    Returns
    -------
    collections.Counter
        Token -> number of occurrences.

    Examples
    --------
    >>> count_tokens_from_str(' Life is great ! \\n life is good . \\n')
    Counter({'is': 2, 'Life': 1, 'great': 1, '!': 1, 'life': 1, 'good': 1, '.': 1})
    """
    tokens = [t for t in re.split(f"{token_delim}|{seq_delim}", source_str) if t]
    if to_lower:
        tokens = [t.lower() for t in tokens]
    if counter_to_update is None:
        return collections.Counter(tokens)
    counter_to_update.update(tokens)
    return counter_to_update


class Vocabulary:
    """Indexes text tokens.

    The unknown token gets index 0, the reserved tokens the next indices in their
    order, then the tokens of ``counter`` by decreasing frequency (ties in token
    order), keeping only tokens seen at least ``min_freq`` times and at most
    ``most_freq_count`` of them. A token of ``counter`` that is the unknown token
    or a reserved token keeps its special index.

    Parameters
    ----------
    counter : collections.Counter or None, default None
        Token -> frequency, e.g. from
        :func:`~mxnet.contrib.text.utils.count_tokens_from_str`.
        Tokens must be hashable (str, or tuples of str, ...); None indexes only the
        unknown and reserved tokens.
    most_freq_count : None or int, default None
        The largest number of ``counter`` tokens to index (the most frequent ones);
        None: no limit.
    min_freq : int, default 1
        The smallest frequency for a token of ``counter`` to be indexed (>= 1).
    unknown_token : hashable object, default '<unk>'
        The token every unknown token maps to.
    reserved_tokens : list of hashable objects or None, default None
        Tokens indexed right after the unknown token (e.g. padding, sequence
        start/end); no duplicates, and not the unknown token.

    Properties
    ----------
    token_to_idx : dict mapping str to int
    idx_to_token : list of str
    unknown_token : hashable object
    reserved_tokens : list of str or None
    """

    def __init__(self, counter=None, most_freq_count=None, min_freq=1,
                 unknown_token="<unk>", reserved_tokens=None):
        if not min_freq > 0:
            raise TextAssertionError(f"`min_freq` must be set to a positive value, got "
                                     f"{min_freq!r}.")
        if reserved_tokens is not None:
            reserved_tokens = list(reserved_tokens)
            if unknown_token in reserved_tokens:
                raise TextAssertionError(f"`reserved_tokens` cannot contain "
                                         f"`unknown_token` {unknown_token!r}.")
            if len(set(reserved_tokens)) != len(reserved_tokens):
                raise TextAssertionError(f"`reserved_tokens` cannot contain duplicate "
                                         f"reserved tokens: {reserved_tokens!r}.")
        if most_freq_count is not None and (
                isinstance(most_freq_count, bool)
                or not isinstance(most_freq_count, numbers.Integral)
                or most_freq_count < 0):
            raise TextAssertionError(f"`most_freq_count` must be None or a non-negative "
                                     f"integer, got {most_freq_count!r}.")
        self._index_unknown_and_reserved_tokens(unknown_token, reserved_tokens)
        if counter is not None:
            self._index_counter_keys(counter, unknown_token, reserved_tokens,
                                     most_freq_count, min_freq)

    def _index_unknown_and_reserved_tokens(self, unknown_token, reserved_tokens):
        """Index the unknown token (at UNKNOWN_IDX) and then the reserved ones."""
        self._unknown_token = unknown_token
        self._idx_to_token = [unknown_token]
        self._reserved_tokens = None if reserved_tokens is None else list(reserved_tokens)
        if reserved_tokens is not None:
            self._idx_to_token.extend(reserved_tokens)
        self._token_to_idx = {token: idx for idx, token in enumerate(self._idx_to_token)}

    def _index_counter_keys(self, counter, unknown_token, reserved_tokens,
                            most_freq_count, min_freq):
        """Index the frequent tokens of counter after the special ones."""
        if not hasattr(counter, "items"):
            raise TextAssertionError(f"`counter` must be a collections.Counter (token -> "
                                     f"frequency), got {type(counter).__name__}.")
        special = set(self._idx_to_token)
        try:
            # by decreasing frequency; equal frequencies in token order (two stable
            # sorts: the second keeps the first's order among equal counts)
            ranked = sorted(counter.items(), key=lambda kv: kv[0])
        except TypeError:
            raise TextAssertionError("the tokens of `counter` must be mutually comparable "
                                     "(e.g. all str) to be ordered") from None
        ranked.sort(key=lambda kv: kv[1], reverse=True)
        limit = len(counter) if most_freq_count is None else most_freq_count
        added = 0
        for token, freq in ranked:
            if freq < min_freq or added == limit:
                break
            if token in special:
                continue
            self._token_to_idx[token] = len(self._idx_to_token)
            self._idx_to_token.append(token)
            added += 1

    def __len__(self):
        return len(self._idx_to_token)

    @property
    def token_to_idx(self):
        """dict mapping each indexed token to its index."""
        return self._token_to_idx

    @property
    def idx_to_token(self):
        """list of the indexed tokens; a token's index is its position."""
        return self._idx_to_token

    @property
    def unknown_token(self):
        """The token representing every unknown token (index 0)."""
        return self._unknown_token

    @property
    def reserved_tokens(self):
        """The reserved tokens (indices 1...), or None."""
        return self._reserved_tokens

    def to_indices(self, tokens):
        """Converts tokens to indices (an unknown token gives the unknown token's
        index, 0).

        Parameters
        ----------
        tokens : token or list of tokens
            A token (a str, or a tuple when the vocabulary's tokens are tuples) or a
            list of them.

        Returns
        -------
        int or list of ints
            An index, or a list of indices for a list of tokens.
        """
        if not isinstance(tokens, list):
            return self._token_to_idx.get(tokens, UNKNOWN_IDX)
        return [self._token_to_idx.get(token, UNKNOWN_IDX) for token in tokens]

    def to_tokens(self, indices):
        """Converts indices to tokens.

        Parameters
        ----------
        indices : int or list of ints
            Indices in ``[0, len(self))``.

        Returns
        -------
        token or list of tokens
            A token, or a list of tokens for a list of indices.
        """
        single = not isinstance(indices, list)
        tokens = []
        for idx in [indices] if single else indices:
            if isinstance(idx, bool) or not isinstance(idx, numbers.Integral) \
                    or not 0 <= idx < len(self._idx_to_token):
                raise InvalidArgument(f"Token index {idx!r} in the provided `indices` is "
                                      f"invalid: valid indices are 0 to "
                                      f"{len(self._idx_to_token) - 1}.")
            tokens.append(self._idx_to_token[int(idx)])
        return tokens[0] if single else tokens
