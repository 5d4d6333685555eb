import pytest


@pytest.fixture
def amp_on():
    """amp.init() for one test only (it patches module functions process-wide)."""
    from mxnet.contrib import amp
    from mxnet.contrib.amp import amp as amp_impl
    amp_impl._reset()
    amp.init()
    yield
    amp_impl._reset()
