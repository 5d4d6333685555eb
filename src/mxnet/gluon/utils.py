"""Gluon helpers (MXNet 1.9.1's ``mx.gluon.utils``): splitting a batch across devices,
global-norm gradient clipping, file download with SHA-1 checks, hook handles, and
small formatting helpers shared by Block and Parameter."""
import hashlib
import os
import uuid
import warnings
import weakref

import numpy as np

from .. import ndarray
from ..base import MXNetError
from ..ndarray import NDArray
from ..util import is_np_array, is_np_shape  # noqa: F401  (as MXNet's module exposes them)

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download",
           "shape_is_known", "HookHandle", "replace_file"]


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Split an NDArray into ``num_slice`` slices along ``batch_axis``.

    With ``even_split=False`` the first ``size % num_slice`` slices get one more element.
    Slices along axis 0 share memory with ``data``.
    """
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(
            f"data with shape {data.shape} cannot be evenly split into {num_slice} slices "
            f"along axis {batch_axis}. Use a batch size that's multiple of {num_slice} or "
            "set even_split=False to allow uneven partitioning of data.")
    each, extras = divmod(size, num_slice)
    bounds = np.cumsum([0] + [each + 1] * extras + [each] * (num_slice - extras))
    if batch_axis == 0:
        return [data[int(bounds[i]):int(bounds[i + 1])] for i in range(num_slice)]
    return [ndarray.slice_axis(data, axis=batch_axis, begin=int(bounds[i]),
                               end=int(bounds[i + 1])) for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Split ``data`` (an NDArray or anything ``mx.nd.array`` takes) into one slice per
    context of ``ctx_list`` and copy each slice there."""
    if not isinstance(data, NDArray):
        data = ndarray.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(ctx) for s, ctx in zip(slices, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Rescale ``arrays`` in place so that the 2-norm of all of them together is at most
    ``max_norm``. Returns that total norm before clipping (a float, or an NDArray when
    ``check_isfinite`` is False, which avoids a synchronisation)."""
    if len(arrays) == 0:
        raise AssertionError("clip_global_norm needs at least one array")
    ctx = arrays[0].context
    squares = []
    for arr in arrays:
        if arr.stype == "default":
            flat = arr.reshape((-1,))
            square = ndarray.dot(flat, flat)
        else:                   # sparse arrays cannot be reshaped; their norm works
            square = ndarray.square(ndarray.norm(arr)).reshape((1,))
        squares.append(square.as_in_context(ctx))
    total_norm = ndarray.sqrt(ndarray.add_n(*squares))
    if check_isfinite and not np.isfinite(total_norm.asscalar()):
        warnings.warn(UserWarning("nan or inf is detected. Clipping results will be "
                                  "undefined."), stacklevel=2)
    scale = max_norm / (total_norm + 1e-8)
    scale = ndarray.min(ndarray.concat(scale, ndarray.ones(1, ctx=ctx), dim=0))
    for arr in arrays:
        arr *= scale.as_in_context(arr.context)
    return total_norm.asscalar() if check_isfinite else total_norm


def check_sha1(filename, sha1_hash):
    """Whether the SHA-1 of the file's content equals ``sha1_hash`` (hex string)."""
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash


def _get_repo_url():
    """Base URL of the Gluon dataset and model repository, always ending in ``/``:
    ``$MXNET_GLUON_REPO`` when set, otherwise Apache MXNet's public S3 bucket. pymxnet
    never fetches from it; callers pass the URLs built from it to ``download``, which
    asks for the file to be placed locally."""
    repo_url = os.environ.get("MXNET_GLUON_REPO",
                              "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/")
    return repo_url if repo_url.endswith("/") else repo_url + "/"


def _get_repo_file_url(namespace, filename):
    """URL of ``filename`` under ``namespace`` in the Gluon repository."""
    return f"{_get_repo_url()}{namespace}/{filename}"


def replace_file(src, dst):
    """Atomically move ``src`` over ``dst``."""
    os.replace(src, dst)


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True):
    """Download ``url`` to ``path`` (a file or a directory; default: the URL's file name
    in the working directory) and return the file name. An existing file is kept unless
    ``overwrite`` or its SHA-1 differs from ``sha1_hash``. Without network access this
    raises an MXNetError naming the URL."""
    if path is None:
        fname = url.split("/")[-1]
        if not fname:
            raise AssertionError("Can't construct file-name from this URL. Please set the "
                                 "`path` option manually.")
    else:
        path = os.path.expanduser(path)
        fname = os.path.join(path, url.split("/")[-1]) if os.path.isdir(path) else path
    if retries < 0:
        raise AssertionError(f"Number of retries should be at least 0, currently it's "
                             f"{retries}")
    if not verify_ssl:
        warnings.warn("Unverified HTTPS request is being made (verify_ssl=False). Adding "
                      "certificate verification is strongly advised.")
    if not (overwrite or not os.path.exists(fname)
            or (sha1_hash and not check_sha1(fname, sha1_hash))):
        return fname
    dirname = os.path.dirname(os.path.abspath(fname))
    os.makedirs(dirname, exist_ok=True)
    fetch = _fetcher(verify_ssl, url)
    last_error = None
    for _ in range(retries + 1):
        tmp = f"{fname}.{uuid.uuid4()}"
        try:
            with open(tmp, "wb") as out:
                fetch(url, out)
            if sha1_hash and not check_sha1(tmp, sha1_hash):
                raise UserWarning(
                    f"File {fname} is downloaded but the content hash does not match. The "
                    "repo may be outdated or download may be incomplete. If the "
                    "\"repo_url\" is overridden, consider switching to the default repo.")
            replace_file(tmp, fname)
            return fname
        except UserWarning:
            _remove(tmp)
            raise
        except Exception as err:      # network errors: retry, then report
            _remove(tmp)
            last_error = err
    raise MXNetError(f"download of {url} failed after {retries + 1} attempt(s): "
                     f"{type(last_error).__name__}: {last_error}. pymxnet cannot reach the "
                     "network from here; place the file at "
                     f"{fname} yourself (and pass sha1_hash to verify it).")


def _fetcher(verify_ssl, url):
    """A function writing the body of a URL into a file: http(s) through ``requests``
    when it is installed (as MXNet does, so code that patches ``requests.get`` works),
    anything else (file:// ...) through urllib."""
    requests = None
    if url.lower().startswith(("http://", "https://")):
        try:
            import requests
        except ImportError:
            pass
    if requests is not None:
        def fetch(url, out):
            resp = requests.get(url, stream=True, verify=verify_ssl, timeout=30)
            if resp.status_code != 200:
                raise RuntimeError(f"Failed downloading url {url}: HTTP {resp.status_code}")
            for chunk in resp.iter_content(chunk_size=1 << 20):
                if chunk:
                    out.write(chunk)
        return fetch
    import ssl
    import urllib.request
    context = None if verify_ssl else ssl._create_unverified_context()

    def fetch(url, out):
        with urllib.request.urlopen(url, timeout=30, context=context) as resp:
            for chunk in iter(lambda: resp.read(1 << 20), b""):
                out.write(chunk)
    return fetch


def _remove(fname):
    try:
        os.remove(fname)
    except OSError:
        pass


def shape_is_known(shape):
    """Whether every dimension of ``shape`` is known (legacy semantics: 0 = unknown)."""
    if shape is None:
        return False
    if len(shape) == 0:
        return False
    for dim in shape:
        if dim == 0:
            return False
        if dim < 0:
            raise AssertionError(f"shape dimension size cannot be less than 0, while "
                                 f"received {dim}")
    return True


class HookHandle:
    """Returned by ``register_forward_hook``/``register_forward_pre_hook``; ``detach()``
    (or leaving a ``with`` block) removes the hook."""

    def __init__(self):
        self._hooks_dict_ref = None
        self._id = None

    def attach(self, hooks_dict, hook):
        if self._hooks_dict_ref is not None:
            raise AssertionError("The same handle cannot be attached twice.")
        self._id = id(hook)
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self):
        hooks = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        if hooks is not None and self._id in hooks:
            del hooks[self._id]

    def __getstate__(self):
        hooks = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        return (hooks, self._id)

    def __setstate__(self, state):
        if state[0] is None:
            self._hooks_dict_ref = weakref.ref(dict())
        else:
            self._hooks_dict_ref = weakref.ref(state[0])
        self._id = state[1]

    def __enter__(self):
        return self

    def __exit__(self, ptype, value, trace):
        self.detach()


def _indent(text, num_spaces):
    """Indent every line of text but the first by num_spaces."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    pad = " " * num_spaces
    return "\n".join([lines[0]] + [pad + line for line in lines[1:]])


def _brief_print_list(lst, limit=7):
    """'a', 'b', ..., 'z' — a list quoted and shortened for error messages."""
    lst = list(lst)
    if len(lst) > limit:
        return (_brief_print_list(lst[:limit // 2], limit) + ", ..., "
                + _brief_print_list(lst[-limit // 2:], limit))
    return ", ".join(f"'{x}'" for x in lst)
