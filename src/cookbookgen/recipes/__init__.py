"""Load and resolve: YAML with line numbers, override bundles, master configs, points."""
