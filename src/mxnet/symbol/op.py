"""mx.sym.op: symbolic operator functions generated from the registry."""
