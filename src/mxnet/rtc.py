"""mx.rtc (being written)."""
