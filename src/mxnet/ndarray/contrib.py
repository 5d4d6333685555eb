"""mx.nd.contrib: operator functions generated from the registry."""
