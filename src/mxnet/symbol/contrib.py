"""mx.sym.contrib: symbolic operator functions generated from the registry."""
