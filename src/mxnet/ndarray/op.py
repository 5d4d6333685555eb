"""mx.nd.op: operator functions generated from the registry."""
