"""Name registries for configurable classes (MXNet's ``mx.registry``): initializers and
metrics register here and are created from a name, a JSON string or an instance."""
import json
import warnings

__all__ = ["get_registry", "get_register_func", "get_alias_func", "get_create_func"]

_REGISTRY = {}


def get_registry(base_class):
    """A copy of the name -> class table of base_class."""
    return dict(_REGISTRY.setdefault(base_class, {}))


def get_register_func(base_class, nickname):
    """A ``register(klass, name=None)`` function for subclasses of base_class."""
    table = _REGISTRY.setdefault(base_class, {})

    def register(klass, name=None):
        if not issubclass(klass, base_class):
            raise AssertionError(f"Can only register subclass of {base_class.__name__}")
        name = (name or klass.__name__).lower()
        old = table.get(name)
        if old is not None and old is not klass:
            warnings.warn(f"New {nickname} {klass.__module__}.{klass.__name__} registered "
                          f"with name {name} is overriding existing {nickname} "
                          f"{old.__module__}.{old.__name__}", UserWarning, stacklevel=2)
        table[name] = klass
        return klass

    register.__doc__ = f"Register {nickname} to the {nickname} factory"
    return register


def get_alias_func(base_class, nickname):
    """An ``@alias('name', ...)`` decorator registering extra names."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases):
        def reg(klass):
            for name in aliases:
                register(klass, name)
            return klass
        return reg
    return alias


def get_create_func(base_class, nickname):
    """A ``create(name_or_instance, *args, **kwargs)`` factory.

    Accepts an instance (returned as is), a registered name (case-insensitive), a JSON
    ``'["name", {kwargs}]'`` or ``'{"<nickname>": name, ...}'`` string, or a dict.
    """
    table = _REGISTRY.setdefault(base_class, {})

    def create(*args, **kwargs):
        if args:
            name, args = args[0], args[1:]
        else:
            name = kwargs.pop(nickname)
        if isinstance(name, base_class):
            if args or kwargs:
                raise AssertionError(f"{nickname} is already an instance. Additional "
                                     "arguments are invalid")
            return name
        if isinstance(name, dict):
            return create(**name)
        if not isinstance(name, str):
            raise AssertionError(f"{nickname} must be of string type")
        if name.startswith("["):
            if args or kwargs:
                raise AssertionError("no extra arguments with a JSON spec")
            name, kwargs = json.loads(name)
            return create(name, **kwargs)
        if name.startswith("{"):
            if args or kwargs:
                raise AssertionError("no extra arguments with a JSON spec")
            return create(**json.loads(name))
        klass = table.get(name.lower())
        if klass is None:
            raise AssertionError(f"{name.lower()} is not registered. Please register with "
                                 f"{nickname}.register first")
        return klass(*args, **kwargs)

    create.__doc__ = (f"Create a {nickname} instance from config: a registered name, a "
                      f"JSON string or a {base_class.__name__} instance.")
    return create
