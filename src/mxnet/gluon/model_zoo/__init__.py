"""mx.gluon.model_zoo: predefined network architectures (``vision``) and the local
store of pretrained parameter files (``model_store``)."""
from . import model_store  # noqa: F401
from . import vision  # noqa: F401
