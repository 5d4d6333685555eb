"""mx.recordio (being written)."""
