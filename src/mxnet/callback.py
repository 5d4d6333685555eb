"""mx.callback (being written)."""
