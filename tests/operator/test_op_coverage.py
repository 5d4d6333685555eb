"""Every registered operator has a test case somewhere under tests/: its name (or an
alias) is called as an attribute (``mx.nd.X``, ``F.X``), named in a string (a parameter
list, an ``opcheck.Case``) or used as a name in some test module."""
import os

from mxnet.operator.registry import all_ops

from common import mentioned_words

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Operators without a case yet. This list may only shrink: a new operator comes with
# its case (opcheck makes that one line), and an operator given a case leaves the list.
NOT_YET_COVERED = {
    "_getitem",                        # reached through NDArray.__getitem__
    "_random_exponential_like", "_random_gamma_like",
    "_random_generalized_negative_binomial_like", "_random_negative_binomial_like",
    "_random_normal_like", "_random_poisson_like", "_random_uniform_like",
}


def _mentioned():
    # (this file's own list does not count)
    return mentioned_words(TESTS, skip=(os.path.basename(__file__),))


def _spellings(name):
    """The names a test may use for operator ``name``: itself, without its leading
    underscore (``_onehot_encode`` as ``onehot_encode``), and a namespaced one's leaf
    (``_image_to_tensor`` as ``image.to_tensor``)."""
    out = {name, name.lstrip("_")}
    for prefix in ("_image_", "_linalg_", "_contrib_"):
        if name.startswith(prefix):
            out.add(name[len(prefix):])
    return out


def test_every_operator_has_a_case():
    names = {}
    for nm, op in all_ops().items():
        names.setdefault(op.name, set()).update(_spellings(nm))
    words = _mentioned()
    missing = sorted(n for n, al in names.items() if not al & words and
                     n not in NOT_YET_COVERED)
    assert not missing, f"operators without any test case: {missing}"
    covered_now = sorted(n for n in NOT_YET_COVERED if n in names and names[n] & words)
    assert not covered_now, f"remove from NOT_YET_COVERED (they have cases): {covered_now}"
