"""mx.attribute (being written)."""
