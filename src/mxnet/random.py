"""mx.random: seeding and the samplers of mx.nd.random."""
from .resource import seed  # noqa: F401
from .ndarray.random import *  # noqa: F401,F403
