"""MXNet's ``contrib`` operators (registered as ``_contrib_<name>``, so they appear in
``mx.nd.contrib`` and ``mx.sym.contrib``), one module per family. Importing this package
registers them."""
import importlib
import pkgutil

for _m in pkgutil.iter_modules(__path__):
    if not _m.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_m.name}")
