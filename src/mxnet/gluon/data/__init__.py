"""mx.gluon.data: datasets, samplers and the DataLoader."""
from .dataset import *  # noqa: F401,F403
from .sampler import *  # noqa: F401,F403
from .dataloader import *  # noqa: F401,F403
from . import dataset, sampler, dataloader, vision  # noqa: F401
from .sharded_sampler import SplitSampler, ShardedSampler  # noqa: F401,E402
