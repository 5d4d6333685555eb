"""Correlation against a direct loop over displacements and kernel windows, and numeric
gradients (inputs kept apart so |a - b| has no kinks)."""
import numpy as np
import pytest

from opcheck import Case, check

rs = np.random.RandomState(17)


def ref_corr(a, b, k, d, s1, s2, pad, mult):
    n, c, h, w = a.shape
    ap = np.pad(a, [(0, 0), (0, 0), (pad,) * 2, (pad,) * 2])
    bp = np.pad(b, [(0, 0), (0, 0), (pad,) * 2, (pad,) * 2])
    kr = (k - 1) // 2
    border = d + kr
    oh = -(-(h + 2 * pad - 2 * border) // s1)
    ow = -(-(w + 2 * pad - 2 * border) // s1)
    r = d // s2
    out = np.zeros((n, (2 * r + 1) ** 2, oh, ow))
    for i in range(oh):
        for j in range(ow):
            y, x = i * s1 + border, j * s1 + border
            for t, (dy, dx) in enumerate((dy * s2, dx * s2) for dy in range(-r, r + 1)
                                         for dx in range(-r, r + 1)):
                pa = ap[:, :, y - kr:y + kr + 1, x - kr:x + kr + 1]
                yb, xb = y + dy, x + dx
                pb = np.zeros_like(pa)
                for u in range(-kr, kr + 1):
                    for v in range(-kr, kr + 1):
                        if 0 <= yb + u < bp.shape[2] and 0 <= xb + v < bp.shape[3]:
                            pb[:, :, u + kr, v + kr] = bp[:, :, yb + u, xb + v]
                m = pa * pb if mult else np.abs(pa - pb)
                out[:, t, i, j] = m.sum(axis=(1, 2, 3)) / (k * k * c)
    return out


@pytest.mark.parametrize("k,d,s1,s2,pad,mult", [(1, 1, 1, 1, 1, True),
                                                (3, 2, 2, 1, 2, True),
                                                (3, 2, 2, 2, 2, False)])
def test_correlation(k, d, s1, s2, pad, mult):
    a = rs.uniform(0.1, 1.0, (1, 2, 5, 6))
    b = rs.uniform(1.5, 2.5, (1, 2, 5, 6))
    kw = dict(kernel_size=k, max_displacement=d, stride1=s1, stride2=s2, pad_size=pad,
              is_multiply=mult)
    check(Case("Correlation", lambda x, y: ref_corr(x, y, k, d, s1, s2, pad, mult),
               kwargs=kw, ref_kwargs=False, inputs=[a, b]))


def test_absolute_difference_gradient_counts_ties_as_positive():
    # d|a - b|/da is +1 where a == b, as in MXNet's kernel (-1 for data2)
    import mxnet as mx
    a = mx.nd.ones((1, 1, 3, 3))
    b = mx.nd.ones((1, 1, 3, 3))
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Correlation(a, b, kernel_size=1, max_displacement=0, is_multiply=False)
    y.backward()
    assert (a.grad.asnumpy() == 1).all() and (b.grad.asnumpy() == -1).all()
