"""Policy: which recipe settings are published, dropped or parameterised, and why."""
