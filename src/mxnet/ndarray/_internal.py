"""mx.nd._internal: operator functions generated from the registry."""
