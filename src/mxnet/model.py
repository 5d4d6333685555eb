"""mx.model (being written)."""
