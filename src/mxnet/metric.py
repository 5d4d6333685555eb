"""mx.metric (being written)."""
