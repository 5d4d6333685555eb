"""mx.sym.linalg: symbolic operator functions generated from the registry."""
