"""The local store of pretrained model parameters.

A pretrained model ``name`` lives in ``<root>/<name>-<first 8 hex digits of its
SHA-1>.params`` (root defaults to ``$MXNET_HOME/models``, i.e. ``~/.mxnet/models``),
the file names MXNet 1.9.1 used, so a model store copied from an MXNet installation
works as is. pymxnet never downloads: a missing file is an MXNetError naming the path
it expects.
"""
import hashlib
import os

from ...base import MXNetError, data_dir

__all__ = ["get_model_file", "load_pretrained", "purge", "short_hash"]

# SHA-1 of the pretrained parameter files MXNet 1.9.1 published (its model store).
_model_sha1 = {name: checksum for checksum, name in [
    ("44335d1f0046b328243b32a26a4fbd62d9057b45", "alexnet"),
    ("f27dbf2dbd5ce9a80b102d89c7483342cd33cb31", "densenet121"),
    ("b6c8a95717e3e761bd88d145f4d0a214aaa515dc", "densenet161"),
    ("2603f878403c6aa5a71a124c4a3307143d6820e9", "densenet169"),
    ("1cdbc116bc3a1b65832b18cf53e1cb8e7da017eb", "densenet201"),
    ("ed47ec45a937b656fcc94dabde85495bbef5ba1f", "inceptionv3"),
    ("9f83e440996887baf91a6aff1cccc1c903a64274", "mobilenet0.25"),
    ("8e9d539cc66aa5efa71c4b6af983b936ab8701c3", "mobilenet0.5"),
    ("529b2c7f4934e6cb851155b22c96c9ab0a7c4dc2", "mobilenet0.75"),
    ("6b8c5106c730e8750bcd82ceb75220a3351157cd", "mobilenet1.0"),
    ("36da4ff1867abccd32b29592d79fc753bca5a215", "mobilenetv2_1.0"),
    ("e2be7b72a79fe4a750d1dd415afedf01c3ea818d", "mobilenetv2_0.75"),
    ("aabd26cd335379fcb72ae6c8fac45a70eab11785", "mobilenetv2_0.5"),
    ("ae8f9392789b04822cbb1d98c27283fc5f8aa0a7", "mobilenetv2_0.25"),
    ("a0666292f0a30ff61f857b0b66efc0228eb6a54b", "resnet18_v1"),
    ("48216ba99a8b1005d75c0f3a0c422301a0473233", "resnet34_v1"),
    ("0aee57f96768c0a2d5b23a6ec91eb08dfb0a45ce", "resnet50_v1"),
    ("d988c13d6159779e907140a638c56f229634cb02", "resnet101_v1"),
    ("671c637a14387ab9e2654eafd0d493d86b1c8579", "resnet152_v1"),
    ("a81db45fd7b7a2d12ab97cd88ef0a5ac48b8f657", "resnet18_v2"),
    ("9d6b80bbc35169de6b6edecffdd6047c56fdd322", "resnet34_v2"),
    ("ecdde35339c1aadbec4f547857078e734a76fb49", "resnet50_v2"),
    ("18e93e4f48947e002547f50eabbcc9c83e516aa6", "resnet101_v2"),
    ("f2695542de38cf7e71ed58f02893d82bb409415e", "resnet152_v2"),
    ("264ba4970a0cc87a4f15c96e25246a1307caf523", "squeezenet1.0"),
    ("33ba0f93753c83d86e1eb397f38a667eaf2e9376", "squeezenet1.1"),
    ("dd221b160977f36a53f464cb54648d227c707a05", "vgg11"),
    ("ee79a8098a91fbe05b7a973fed2017a6117723a8", "vgg11_bn"),
    ("6bc5de58a05a5e2e7f493e2d75a580d83efde38c", "vgg13"),
    ("7d97a06c3c7a1aecc88b6e7385c2b373a249e95e", "vgg13_bn"),
    ("e660d4569ccb679ec68f1fd3cce07a387252a90a", "vgg16"),
    ("7f01cf050d357127a73826045c245041b0df7363", "vgg16_bn"),
    ("ad2f660d101905472b83590b59708b71ea22b2e5", "vgg19"),
    ("f360b758e856f1074a85abd5fd873ed1d98297c3", "vgg19_bn")]}


def short_hash(name):
    """The first 8 hex digits of the SHA-1 of model ``name``'s parameter file."""
    if name not in _model_sha1:
        raise ValueError(f"Pretrained model for {name} is not available.")
    return _model_sha1[name][:8]


def _sha1_of(path):
    digest = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def get_model_file(name, root=os.path.join(data_dir(), "models")):
    """The path of the pretrained parameter file of model ``name`` in ``root``,
    checked against its SHA-1.

    Parameters
    ----------
    name : str
        Name of the model (e.g. 'resnet18_v1').
    root : str, default $MXNET_HOME/models
        Location of the model store.

    Returns
    -------
    file_path
        Path to the requested pretrained model file.
    """
    file_name = f"{name}-{short_hash(name)}.params"
    root = os.path.expanduser(root)
    file_path = os.path.join(root, file_name)
    if not os.path.exists(file_path):
        raise MXNetError(
            f"Pretrained parameters of {name} not found: expected {file_path!r}. pymxnet "
            f"does not download models; copy {file_name} from an MXNet model store "
            "(e.g. another machine's ~/.mxnet/models) into that folder or pass root=")
    sha1 = _model_sha1[name]
    if _sha1_of(file_path) != sha1:
        raise MXNetError(f"Pretrained parameters of {name} in {file_path!r} are corrupt or "
                         f"of another version: SHA-1 differs from {sha1}")
    return file_path


def pretrained_doc(getter):
    """Decorator: end a model getter's docstring (its Parameters section) with the
    ``pretrained``, ``ctx`` and ``root`` arguments every getter shares."""
    getter.__doc__ = getter.__doc__.rstrip() + "\n" + _PRETRAINED_PARAMS
    return getter


_PRETRAINED_PARAMS = """    pretrained : bool, default False
        Whether to load the pretrained weights for model (from ``root``).
    ctx : Context, default CPU
        The context in which to load the pretrained weights.
    root : str, default $MXNET_HOME/models
        Location for keeping the model parameters.
    """


def load_pretrained(net, name, pretrained, ctx, root):
    """``net`` with the pretrained parameters of model ``name`` from the store ``root``
    loaded onto ``ctx`` when ``pretrained`` (the model zoo getters' last step)."""
    if pretrained:
        net.load_parameters(get_model_file(name, root=root), ctx=ctx)
    return net


def purge(root=os.path.join(data_dir(), "models")):
    """Removes the ``.params`` files in the model store ``root``."""
    root = os.path.expanduser(root)
    if not os.path.isdir(root):
        return
    for f in os.listdir(root):
        if f.endswith(".params"):
            os.remove(os.path.join(root, f))
