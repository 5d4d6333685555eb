"""mx.nd.save / mx.nd.load / mx.nd.load_frombuffer: MXNet 1.x binary NDArray files
(the format itself lives in ``serialization``)."""
from .serialization import load, load_frombuffer, save

__all__ = ["save", "load", "load_frombuffer"]
