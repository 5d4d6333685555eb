"""mx.optimizer (being written)."""
