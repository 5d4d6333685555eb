"""Utilities for text data processing (MXNet 1.9.1's ``mx.contrib.text.utils``)."""
import collections
import re

__all__ = ["count_tokens_from_str"]


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
