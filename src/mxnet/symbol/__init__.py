"""mx.symbol (being written)."""
