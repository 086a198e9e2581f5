"""Render: an effective recipe becomes an ordered list of process blocks (no I/O)."""
