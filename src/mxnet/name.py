"""mx.name (being written)."""
