"""mx.lr_scheduler (being written)."""
