"""mx.nd.random: samplers (uniform, normal, ...), filled in by the random operators."""
