"""Command-line tools (MXNet 1.9.1's ``mxnet.tools``): ``python -m mxnet.tools.launch``
starts a distributed training job."""
