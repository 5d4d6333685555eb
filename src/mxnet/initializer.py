"""mx.initializer (being written)."""
