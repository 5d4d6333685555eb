"""mx.test_utils (filled in by the test-utilities module)."""
