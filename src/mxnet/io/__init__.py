"""mx.io (being written)."""
