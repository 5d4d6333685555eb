"""mx.module (being written)."""
