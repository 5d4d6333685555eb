"""mx.gluon (being written)."""
