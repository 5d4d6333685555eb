"""Special functions (operator/special.py) against SciPy (a test-only dependency)."""
import subprocess
import sys

import numpy as np
import pytest
from scipy import special as sp

from mxnet.operator import special

X = np.concatenate([np.linspace(-6, 6, 2001), [-30.0, -1e-7, 0.0, 1e-7, 30.0]])


@pytest.mark.parametrize("precise,rtol", [(True, 1e-14), (False, 1e-8)])
def test_erf_erfc_float64(precise, rtol):
    assert np.allclose(special.erf(np, X, precise), sp.erf(X), rtol=rtol, atol=0)
    # erfc takes 1 - erf below the switch to the continued fraction (x ~ 2)
    assert np.allclose(special.erfc(np, X, precise), sp.erfc(X), rtol=rtol * 200, atol=0)


def test_erfc_fast_is_float32_accurate_in_both_tails():
    x = X.astype(np.float32)
    got = special.erfc_fast(np, x)
    assert got.dtype == np.float32
    want = sp.erfc(x.astype(np.float64))
    normal = want > np.finfo(np.float32).tiny
    assert np.allclose(got[normal], want[normal], rtol=1e-5, atol=0)
    assert np.allclose(got, want, rtol=0, atol=4e-7)    # about an ulp of 2 - erfc(|x|)
    half = special.erfc_fast(np, x.astype(np.float16))
    assert half.dtype == np.float32 and np.allclose(half, got, rtol=1e-2, atol=1e-3)


def test_gamma_family():
    g = np.array([-2.5, -0.5, 0.1, 0.5, 1, 2.5, 7, 30])
    assert np.allclose(special.gamma(np, g), sp.gamma(g), rtol=1e-12)
    assert np.allclose(special.gammaln(np, g), sp.gammaln(g), rtol=1e-12)
    assert np.allclose(special.digamma(np, g), sp.digamma(g), rtol=1e-12)
    # at the poles MXNet's (Cephes') psi is +inf whatever the sign of zero
    assert np.all(special.digamma(np, np.array([0.0, -0.0, -1.0, -4.0])) == np.inf)
    u = np.linspace(-0.999, 0.999, 101)
    assert np.allclose(special.erfinv(np, u), sp.erfinv(u), rtol=1e-12)


def test_operators_do_not_import_scipy():
    code = ("import sys, mxnet as mx; x = mx.nd.array([-1.0, 0.5]);"
            "mx.nd.LeakyReLU(x, act_type='gelu').asnumpy(); mx.nd.erf(x).asnumpy();"
            "mx.nd.gamma(x).asnumpy(); print('scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
