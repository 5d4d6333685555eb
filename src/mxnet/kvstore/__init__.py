"""mx.kvstore (being written)."""
