"""MXNet 1.9.1's update rules written out in NumPy (float64), the references of the
optimizer and update-operator tests. Each rule takes the weight, gradient and state
arrays (updated in place where MXNet updates them) and returns the new weight."""
import numpy as np


def clip(x, c):
    """MXNet's fused operators clip when c >= 0; None means no clipping."""
    return x if c is None or c < 0 else np.clip(x, -c, c)


def sgd(w, g, lr, wd=0.0, rescale_grad=1.0, clip_gradient=None):
    return (1 - lr * wd) * w - lr * clip(rescale_grad * g, clip_gradient)


def sgd_mom(w, g, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=None):
    mom[...] = momentum * mom - lr * wd * w - lr * clip(rescale_grad * g, clip_gradient)
    return w + mom


def nag_mom(w, g, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=None):
    gr = clip(rescale_grad * g, clip_gradient) + wd * w
    mom[...] = momentum * mom - lr * gr
    return w + momentum * mom - lr * gr


def signsgd(w, g, lr, wd=0.0, rescale_grad=1.0, clip_gradient=None):
    return (1 - lr * wd) * w - lr * np.sign(clip(rescale_grad * g, clip_gradient))


def signum(w, g, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=None,
           wd_lh=0.0):
    mom[...] = momentum * mom - (1 - momentum) * (wd * w + clip(rescale_grad * g,
                                                                   clip_gradient))
    return (1 - lr * wd_lh) * w + lr * np.sign(mom)


def adam(w, g, mean, var, lr, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0,
         rescale_grad=1.0, clip_gradient=None):
    gr = clip(rescale_grad * g + wd * w, clip_gradient)
    mean[...] = beta1 * mean + (1 - beta1) * gr
    var[...] = beta2 * var + (1 - beta2) * gr * gr
    return w - lr * mean / (np.sqrt(var) + epsilon)


def rmsprop(w, g, n, lr, gamma1=0.95, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
            clip_gradient=None, clip_weights=None):
    gr = clip(rescale_grad * g + wd * w, clip_gradient)
    n[...] = (1 - gamma1) * gr * gr + gamma1 * n
    return clip(w - lr * gr / np.sqrt(n + epsilon), clip_weights)


def rmspropalex(w, g, n, gavg, delta, lr, gamma1=0.95, gamma2=0.9, epsilon=1e-8, wd=0.0,
                rescale_grad=1.0, clip_gradient=None, clip_weights=None):
    gr = clip(rescale_grad * g + wd * w, clip_gradient)
    n[...] = (1 - gamma1) * gr * gr + gamma1 * n
    gavg[...] = (1 - gamma1) * gr + gamma1 * gavg
    delta[...] = gamma2 * delta - lr * gr / np.sqrt(n - gavg * gavg + epsilon)
    return clip(w + delta, clip_weights)


def ftrl(w, g, z, n, lr, lamda1=0.01, beta=1.0, wd=0.0, rescale_grad=1.0,
         clip_gradient=None):
    gr = clip(rescale_grad * g, clip_gradient)
    z[...] = z + gr - (np.sqrt(n + gr * gr) - np.sqrt(n)) * w / lr
    n[...] = n + gr * gr
    out = (np.sign(z) * lamda1 - z) / ((beta + np.sqrt(n)) / lr + wd)
    return out * (np.abs(z) > lamda1)


def ftml(w, g, d, v, z, lr, t, beta1=0.6, beta2=0.999, epsilon=1e-8, wd=0.0,
         rescale_grad=1.0, clip_grad=None):
    gr = clip(rescale_grad * g + wd * w, clip_grad)
    v[...] = beta2 * v + (1 - beta2) * gr * gr
    d_t = (1 - beta1 ** t) / lr * (np.sqrt(v / (1 - beta2 ** t)) + epsilon)
    z[...] = beta1 * z + (1 - beta1) * gr - (d_t - beta1 * d) * w
    d[...] = d_t
    return -z / d_t


def lamb_phase1(w, g, mean, var, t, wd, beta1=0.9, beta2=0.999, epsilon=1e-6,
                bias_correction=True, rescale_grad=1.0, clip_gradient=None):
    gr = clip(rescale_grad * g, clip_gradient)
    mean[...] = beta1 * mean + (1 - beta1) * gr
    var[...] = beta2 * var + (1 - beta2) * gr * gr
    m, v = mean, var
    if bias_correction:
        m, v = mean / (1 - beta1 ** t), var / (1 - beta2 ** t)
    return m / (np.sqrt(v) + epsilon) + wd * w


def lamb_phase2(w, g, r1, r2, lr, lower_bound=None, upper_bound=None):
    if lower_bound is not None and lower_bound >= 0:
        r1 = max(r1, lower_bound)
    if upper_bound is not None and upper_bound >= 0:
        r1 = min(r1, upper_bound)
    ratio = r1 / r2 if (r1 > 0 and r2 > 0) else 1.0
    return w - lr * ratio * g


def adagrad(w, g, hist, lr, epsilon=1e-7, wd=0.0, rescale_grad=1.0, clip_gradient=None):
    gr = clip(rescale_grad * g, clip_gradient)
    hist[...] = hist + gr * gr
    return w - lr * (gr / np.sqrt(hist + epsilon) + wd * w)
