"""mx.nd.linalg: operator functions generated from the registry."""
